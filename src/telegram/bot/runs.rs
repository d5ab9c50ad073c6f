//! The chats' running turns: which run each chat has, which chat each run belongs to (for its
//! approvals and questions), and the tasks that deliver their answers — one lock, so the two
//! directions always agree.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::task::JoinHandle;

/// The running turn of each chat, both ways, and the turns' tasks.
#[derive(Default)]
pub(super) struct ChatRuns {
    inner: Mutex<Runs>,
}

#[derive(Default)]
struct Runs {
    /// Chat → its running run.
    by_chat: HashMap<i64, String>,
    /// Run → its chat.
    chat_of_run: HashMap<String, i64>,
    /// The tasks that wait for each turn's outcome and deliver it.
    tasks: Vec<JoinHandle<()>>,
}

impl ChatRuns {
    fn lock(&self) -> MutexGuard<'_, Runs> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A turn of `chat` started as `run_id`.
    pub(super) fn start(&self, chat: i64, run_id: &str) {
        let mut runs = self.lock();
        runs.by_chat.insert(chat, run_id.to_string());
        runs.chat_of_run.insert(run_id.to_string(), chat);
    }

    /// The turn `run_id` of `chat` ended: the chat is free.
    pub(super) fn end(&self, chat: i64, run_id: &str) {
        let mut runs = self.lock();
        runs.by_chat.remove(&chat);
        runs.chat_of_run.remove(run_id);
    }

    /// The chat's running run, if it has one.
    pub(super) fn run_of(&self, chat: i64) -> Option<String> {
        self.lock().by_chat.get(&chat).cloned()
    }

    /// True when a turn of the chat is running.
    pub(super) fn is_running(&self, chat: i64) -> bool {
        self.lock().by_chat.contains_key(&chat)
    }

    /// The chat of one of this bot's runs.
    pub(super) fn chat_of(&self, run_id: &str) -> Option<i64> {
        self.lock().chat_of_run.get(run_id).copied()
    }

    /// How many turns are running.
    pub(super) fn count(&self) -> usize {
        self.lock().by_chat.len()
    }

    /// Keeps a turn's delivering task, for shutdown to wait on.
    pub(super) fn keep_task(&self, task: JoinHandle<()>) {
        self.lock().tasks.push(task);
    }

    /// The tasks kept so far, handed over (shutdown).
    pub(super) fn take_tasks(&self) -> Vec<JoinHandle<()>> {
        self.lock().tasks.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_agree() {
        let runs = ChatRuns::default();
        runs.start(7, "r1");
        assert!(runs.is_running(7));
        assert_eq!(runs.run_of(7).as_deref(), Some("r1"));
        assert_eq!(runs.chat_of("r1"), Some(7));
        assert_eq!(runs.count(), 1);
        runs.end(7, "r1");
        assert!(!runs.is_running(7));
        assert_eq!(runs.chat_of("r1"), None);
        assert_eq!(runs.count(), 0);
    }
}
