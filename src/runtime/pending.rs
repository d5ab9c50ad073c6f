//! The requests a run waits on — approvals and `clarify` questions — in one kind of table:
//! each has a public view and, until it is closed, the channel its answer goes to. Whoever
//! closes one (an answer, the timeout, a cancel, the end of the run) closes it the same way:
//! its status is set, the waiting call gets its answer, and one frame says so.

use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use super::SupervisorError;
use crate::protocol::api::{ApprovalStatus, ApprovalView, QuestionStatus, QuestionView};
use crate::protocol::{ApprovalAction, ApprovalReason, ApprovalResolved, ClarifyResolved, Event};
use crate::tools::approval::{ApprovalAnswer, QuestionAnswer};

/// A kind of request a run waits on.
pub(super) trait Request {
    /// What browsers and chats see of it.
    type View: Clone;
    /// What the waiting call gets.
    type Answer: Send;
    /// How it is closed.
    type How;
    /// Closed because nobody answered in time.
    const EXPIRED: Self::How;
    /// Closed because the run stopped or stopped listening.
    const CANCELLED: Self::How;

    /// Its id.
    fn id(view: &Self::View) -> &str;
    /// Its status as a word (for the error of a second answer).
    fn status(view: &Self::View) -> &'static str;
    /// Sets the view's status for `how`; returns the waiting call's answer and the frame.
    fn close(view: &mut Self::View, how: Self::How, run_id: &str) -> (Self::Answer, Event);
    /// No request of this kind has `id`.
    fn unknown(id: &str) -> SupervisorError;
    /// The request `id` is closed already.
    fn closed(id: &str, status: &'static str) -> SupervisorError;
}

struct Entry<R: Request> {
    view: R::View,
    answer: Option<oneshot::Sender<R::Answer>>,
}

/// The requests of one kind a run made, oldest first.
pub(super) struct Requests<R: Request>(Mutex<Vec<Entry<R>>>);

impl<R: Request> Default for Requests<R> {
    fn default() -> Self {
        Requests(Mutex::new(Vec::new()))
    }
}

impl<R: Request> Requests<R> {
    fn entries(&self) -> MutexGuard<'_, Vec<Entry<R>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a new request; its answer arrives on the receiver.
    pub fn open(&self, view: R::View) -> oneshot::Receiver<R::Answer> {
        let (tx, rx) = oneshot::channel();
        self.entries().push(Entry {
            view,
            answer: Some(tx),
        });
        rx
    }

    /// Every request's view, oldest first.
    pub fn views(&self) -> Vec<R::View> {
        self.entries().iter().map(|e| e.view.clone()).collect()
    }

    /// Every request's id.
    pub fn ids(&self) -> Vec<String> {
        self.entries()
            .iter()
            .map(|e| R::id(&e.view).to_string())
            .collect()
    }

    /// How many are still open.
    pub fn open_count(&self) -> usize {
        self.entries().iter().filter(|e| e.answer.is_some()).count()
    }

    /// Answers request `id`: an error when there is none or it is closed already. Returns
    /// the frame to send.
    pub fn answer(&self, id: &str, how: R::How, run_id: &str) -> Result<Event, SupervisorError> {
        let mut entries = self.entries();
        let entry = entries
            .iter_mut()
            .find(|e| R::id(&e.view) == id)
            .ok_or_else(|| R::unknown(id))?;
        let status = R::status(&entry.view);
        close(entry, how, run_id).ok_or_else(|| R::closed(id, status))
    }

    /// Closes request `id` if it is still open; the frame to send, if it was.
    pub fn close(&self, id: &str, how: R::How, run_id: &str) -> Option<Event> {
        let mut entries = self.entries();
        let entry = entries.iter_mut().find(|e| R::id(&e.view) == id)?;
        close(entry, how, run_id)
    }

    /// Closes every open request as cancelled; the frames to send.
    pub fn cancel_all(&self, run_id: &str) -> Vec<Event> {
        self.entries()
            .iter_mut()
            .filter_map(|e| close(e, R::CANCELLED, run_id))
            .collect()
    }
}

fn close<R: Request>(entry: &mut Entry<R>, how: R::How, run_id: &str) -> Option<Event> {
    let tx = entry.answer.take()?;
    let (answer, frame) = R::close(&mut entry.view, how, run_id);
    let _ = tx.send(answer);
    Some(frame)
}

/// A dangerous call waiting for a person's yes or no.
pub(super) struct Approval;

/// How an approval is closed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Closing {
    Approved,
    Denied,
    Expired,
    Cancelled,
}

impl Request for Approval {
    type View = ApprovalView;
    type Answer = ApprovalAnswer;
    type How = Closing;
    const EXPIRED: Closing = Closing::Expired;
    const CANCELLED: Closing = Closing::Cancelled;

    fn id(view: &ApprovalView) -> &str {
        &view.approval_id
    }

    fn status(view: &ApprovalView) -> &'static str {
        match view.status {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Cancelled => "cancelled",
        }
    }

    fn close(view: &mut ApprovalView, how: Closing, run_id: &str) -> (ApprovalAnswer, Event) {
        let (status, answer, reason) = match how {
            Closing::Approved => (
                ApprovalStatus::Approved,
                ApprovalAnswer::Approve,
                ApprovalReason::Answered,
            ),
            Closing::Denied => (
                ApprovalStatus::Denied,
                ApprovalAnswer::Deny,
                ApprovalReason::Answered,
            ),
            Closing::Expired => (
                ApprovalStatus::Expired,
                ApprovalAnswer::Expired,
                ApprovalReason::Expired,
            ),
            Closing::Cancelled => (
                ApprovalStatus::Cancelled,
                ApprovalAnswer::Cancelled,
                ApprovalReason::Cancelled,
            ),
        };
        view.status = status;
        let action = match how {
            Closing::Approved => ApprovalAction::Approve,
            _ => ApprovalAction::Deny,
        };
        let frame = Event::ApprovalResolved(ApprovalResolved {
            run_id: run_id.to_string(),
            approval_id: view.approval_id.clone(),
            action,
            reason,
        });
        (answer, frame)
    }

    fn unknown(id: &str) -> SupervisorError {
        SupervisorError::NoApproval(id.to_string())
    }

    fn closed(id: &str, status: &'static str) -> SupervisorError {
        SupervisorError::ApprovalClosed {
            id: id.to_string(),
            status,
        }
    }
}

/// A `clarify` question waiting for a person's answer.
pub(super) struct Clarify;

/// How a question is closed.
#[derive(Debug, Clone)]
pub(super) enum QuestionHow {
    Answered(String),
    Expired,
    Cancelled,
}

impl Request for Clarify {
    type View = QuestionView;
    type Answer = QuestionAnswer;
    type How = QuestionHow;
    const EXPIRED: QuestionHow = QuestionHow::Expired;
    const CANCELLED: QuestionHow = QuestionHow::Cancelled;

    fn id(view: &QuestionView) -> &str {
        &view.question_id
    }

    fn status(view: &QuestionView) -> &'static str {
        match view.status {
            QuestionStatus::Pending => "pending",
            QuestionStatus::Answered => "answered",
            QuestionStatus::Expired => "expired",
            QuestionStatus::Cancelled => "cancelled",
        }
    }

    /// The frame carries no answer: that is the model's alone.
    fn close(view: &mut QuestionView, how: QuestionHow, run_id: &str) -> (QuestionAnswer, Event) {
        let (status, reason, answer) = match how {
            QuestionHow::Answered(text) => (
                QuestionStatus::Answered,
                ApprovalReason::Answered,
                QuestionAnswer::Answered(text),
            ),
            QuestionHow::Expired => (
                QuestionStatus::Expired,
                ApprovalReason::Expired,
                QuestionAnswer::Expired,
            ),
            QuestionHow::Cancelled => (
                QuestionStatus::Cancelled,
                ApprovalReason::Cancelled,
                QuestionAnswer::Cancelled,
            ),
        };
        view.status = status;
        let frame = Event::ClarifyResolved(ClarifyResolved {
            run_id: run_id.to_string(),
            question_id: view.question_id.clone(),
            reason,
        });
        (answer, frame)
    }

    fn unknown(id: &str) -> SupervisorError {
        SupervisorError::NoQuestion(id.to_string())
    }

    fn closed(id: &str, status: &'static str) -> SupervisorError {
        SupervisorError::QuestionClosed {
            id: id.to_string(),
            status,
        }
    }
}
