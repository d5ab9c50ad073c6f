//! Saving a conversation while it runs: the persist callback handed to the engine, and the
//! final save with the run's token usage.

use std::sync::{Arc, Mutex};

use crate::engine::{PersistFn, RunOutcome};
use crate::llm::Message;
use crate::session::{Session, SessionError, SessionStore};

/// A session being written to by a running conversation.
#[derive(Clone)]
pub struct LiveSession {
    store: Arc<SessionStore>,
    session: Arc<Mutex<Session>>,
    warn: Arc<dyn Fn(&str) + Send + Sync>,
}

impl LiveSession {
    /// Wraps a session; `warn` prints save warnings (e.g. the size cap trimmed it).
    pub fn new(
        store: Arc<SessionStore>,
        session: Session,
        warn: Arc<dyn Fn(&str) + Send + Sync>,
    ) -> Self {
        LiveSession {
            store,
            session: Arc::new(Mutex::new(session)),
            warn,
        }
    }

    /// The session id.
    pub fn id(&self) -> String {
        self.lock().id.clone()
    }

    /// A copy of the session as it stands.
    pub fn snapshot(&self) -> Session {
        self.lock().clone()
    }

    /// Turns (user messages) so far.
    pub fn turns(&self) -> u32 {
        self.lock().turns
    }

    /// Replaces the session's task label (a REPL session is named by its first input).
    pub fn set_task(&self, task: &str) {
        self.lock().task = task.to_string();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Saves `messages` as the session's transcript.
    pub fn save_messages(&self, messages: Vec<Message>) -> Result<(), SessionError> {
        let mut s = self.lock();
        s.messages = messages;
        let report = self.store.save(&mut s)?;
        for w in &report.warnings {
            (self.warn)(w);
        }
        Ok(())
    }

    /// The callback the engine calls after every tool batch and the final answer.
    pub fn persist_fn(&self) -> PersistFn {
        let me = self.clone();
        Arc::new(move |messages: Vec<Message>| {
            me.save_messages(messages).map_err(|e| e.to_string())
        })
    }

    /// The final save of a run: its transcript and its token usage.
    pub fn finish_run(&self, outcome: &RunOutcome) -> Result<(), SessionError> {
        {
            let mut s = self.lock();
            s.input_tokens += outcome.usage.input_tokens;
            s.output_tokens += outcome.usage.output_tokens;
        }
        self.save_messages(outcome.messages.clone())
    }
}
