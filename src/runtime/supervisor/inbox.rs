//! Each session's inbox: what a surface sends to a session while a turn of it runs. A
//! steer goes to the running turn at its next model request (the engine takes it through
//! [`RunInbox`]); a queued message waits and becomes a next turn. When a turn ends, what
//! is still there — a steer that came after the last request, then the queue in order — is
//! handed out one message per ended turn, so nothing sent is lost.

use std::sync::{Arc, OnceLock, Weak};

use super::{Inbox, Inner, Supervisor, lock};
use crate::engine::Steering;
use crate::events::Emitter;
use crate::protocol::{Event, UserSteer};
use crate::redact::Redactor;

/// How a message sent to a running session is given to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// To the running turn, at its next model request.
    Steer,
    /// As a turn of its own once the running turn (and those queued before) ended.
    Queue,
}

/// What became of a message sent to a session.
#[derive(Debug, PartialEq, Eq)]
pub enum Delivered {
    /// Given as asked (steered or queued); `position` is its place among the queued ones
    /// (0 for a steer).
    Taken {
        /// 1-based place in the queue; 0 for a steer.
        position: usize,
    },
    /// No turn of the session runs here: the caller starts one with the message.
    NotRunning(String),
}

impl Inbox {
    fn is_empty(&self) -> bool {
        self.steers.is_empty() && self.queued.is_empty()
    }

    /// The next turn's message when a turn ended: a steer it never took first, then the
    /// queue's head.
    pub(super) fn next(&mut self) -> Option<String> {
        while let Some(late) = self.steers.pop_back() {
            self.queued.push_front(late);
        }
        self.queued.pop_front()
    }
}

impl Supervisor {
    /// Where a run of `session_id` takes its steers, each reported on `events` as a
    /// `user_steer` event.
    pub(super) fn steering_for(
        &self,
        session_id: &str,
        events: Option<&Emitter>,
    ) -> Arc<dyn Steering> {
        let steering = RunInbox {
            inner: Arc::downgrade(&self.inner),
            session_id: session_id.to_string(),
            redactor: self.inner.redactor.clone(),
            events: OnceLock::new(),
        };
        if let Some(events) = events {
            let _ = steering.events.set(events.clone());
        }
        Arc::new(steering)
    }

    /// Sends `text` to the running turn of `session_id` (see [`Delivery`]); with no turn of
    /// it running here, gives the text back for the caller to start one.
    pub fn deliver(&self, session_id: &str, text: String, how: Delivery) -> Delivered {
        let mut table = lock(&self.inner.table);
        if session_id.is_empty() || !table.running.contains_key(session_id) {
            return Delivered::NotRunning(text);
        }
        let inbox = table.inboxes.entry(session_id.to_string()).or_default();
        match how {
            Delivery::Steer => {
                inbox.steers.push_back(text);
                Delivered::Taken { position: 0 }
            }
            Delivery::Queue => {
                inbox.queued.push_back(text);
                Delivered::Taken {
                    position: inbox.queued.len(),
                }
            }
        }
    }

    /// The messages queued for `session_id`'s next turns, in order.
    pub fn queued(&self, session_id: &str) -> Vec<String> {
        lock(&self.inner.table)
            .inboxes
            .get(session_id)
            .map(|i| i.queued.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Drops the messages queued for `session_id`; returns how many there were.
    pub fn clear_queue(&self, session_id: &str) -> usize {
        let mut table = lock(&self.inner.table);
        let Some(inbox) = table.inboxes.get_mut(session_id) else {
            return 0;
        };
        let dropped = inbox.queued.len();
        inbox.queued.clear();
        if inbox.is_empty() {
            table.inboxes.remove(session_id);
        }
        dropped
    }
}

impl Inner {
    /// The next turn's message of `session_id` once its turn ended (called under the
    /// table's lock, with the running run removed: a later delivery starts a turn instead).
    pub(super) fn next_of(table: &mut super::Table, session_id: &str) -> Option<String> {
        let inbox = table.inboxes.get_mut(session_id)?;
        let next = inbox.next();
        if inbox.is_empty() {
            table.inboxes.remove(session_id);
        }
        next
    }

    /// Puts `text` back at the head of `session_id`'s queue (a run's next message its
    /// surface did not take).
    pub(super) fn requeue(&self, session_id: &str, text: String) {
        let mut table = lock(&self.table);
        let inbox = table.inboxes.entry(session_id.to_string()).or_default();
        inbox.queued.push_front(text);
    }
}

/// The steers of one run, as its engine takes them: each reported as a `user_steer` event.
struct RunInbox {
    inner: Weak<Inner>,
    session_id: String,
    redactor: Arc<Redactor>,
    events: OnceLock<Emitter>,
}

impl Steering for RunInbox {
    fn take(&self, iteration: u32) -> Vec<String> {
        let Some(inner) = self.inner.upgrade() else {
            return Vec::new();
        };
        let taken: Vec<String> = match lock(&inner.table).inboxes.get_mut(&self.session_id) {
            Some(inbox) => inbox.steers.drain(..).collect(),
            None => return Vec::new(),
        };
        if let Some(events) = self.events.get() {
            for text in &taken {
                let text = self.redactor.redact(text).into_owned();
                events.emit(Event::UserSteer(UserSteer { text }), Some(iteration), None);
            }
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_steer_comes_before_the_queue_and_the_queue_keeps_its_order() {
        let mut inbox = Inbox::default();
        inbox.queued.extend(["q1".to_string(), "q2".to_string()]);
        inbox.steers.extend(["s1".to_string(), "s2".to_string()]);
        let order: Vec<String> = std::iter::from_fn(|| inbox.next()).collect();
        assert_eq!(order, ["s1", "s2", "q1", "q2"]);
        assert!(inbox.is_empty());
    }

    #[test]
    fn a_session_that_runs_nothing_gives_the_message_back() {
        let supervisor =
            Supervisor::new(std::time::Duration::from_secs(1), Arc::new(Redactor::new()));
        let back = supervisor.deliver("20261205-ab", "hello".into(), Delivery::Steer);
        assert_eq!(back, Delivered::NotRunning("hello".into()));
        assert!(supervisor.queued("20261205-ab").is_empty());
        assert_eq!(supervisor.clear_queue("20261205-ab"), 0);
    }
}
