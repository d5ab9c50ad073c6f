//! The hooks outside the loop.
//! - `Notification`: a surface's approver that tells the user's hooks when an approval or
//!   a `clarify` question waits for an answer (a desktop notification, a chime), then asks
//!   as the surface does. The hooks run beside the question, never before it.
//! - `SessionEnd`: run when the surface lets the session go (its handle is dropped: the end
//!   of `odek run`, the REPL's exit, the end of a serve or Telegram run); odek waits for
//!   them, up to their timeout.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{AuditLog, Runtime, SessionHandle};
use crate::engine::{EngineEvent, Observer};
use crate::hooks::{HookEvent, HookReport, HookRun};
use crate::redact::Redactor;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};

/// `inner`, with the `Notification` hooks run whenever it is asked something.
pub(crate) struct NotifyingApprover {
    inner: Arc<dyn Approver>,
    hooks: HookRun,
    redactor: Arc<Redactor>,
    /// The turn's observers, told what the hooks decided.
    observer: Arc<dyn Observer>,
}

impl Runtime {
    /// `approver`, telling the `Notification` hooks when it asks (none: as it is).
    pub(super) fn notifying(
        &self,
        approver: Option<Arc<dyn Approver>>,
        hooks: Option<&HookRun>,
        observer: &Arc<dyn Observer>,
    ) -> Option<Arc<dyn Approver>> {
        let inner = approver?;
        match hooks.filter(|h| h.wants(HookEvent::Notification, None)) {
            Some(hooks) => Some(Arc::new(NotifyingApprover {
                inner,
                hooks: hooks.clone(),
                redactor: self.redactor.clone(),
                observer: observer.clone(),
            })),
            None => Some(inner),
        }
    }

    /// Arranges for the `SessionEnd` hooks of `session` to run when its handle goes, their
    /// reports written to the audit log (under the session's last turn) and the events.
    pub(super) fn end_session_with(
        &self,
        session: &SessionHandle,
        hooks: &HookRun,
        events: Option<Arc<dyn Observer>>,
    ) {
        if !hooks.wants(HookEvent::SessionEnd, None) {
            return;
        }
        let hooks = hooks.clone();
        let dir = self.sessions.dir().to_path_buf();
        let redactor = self.redactor.clone();
        let id = session.id().to_string();
        session.on_end_once(Box::new(move |turns, reason| {
            let mut fields = Map::new();
            fields.insert("reason".into(), Value::String(reason.into()));
            let reports = run_detached(hooks, HookEvent::SessionEnd, fields);
            let audit = AuditLog::new(&dir, redactor, &id, turns);
            for report in &reports {
                let event = EngineEvent::Hook {
                    iteration: 0,
                    report,
                };
                audit.on_event(&event);
                if let Some(events) = &events {
                    events.on_event(&event);
                }
            }
        }));
    }
}

/// Runs the hooks of `event` to their end on a thread of their own (a drop may happen on
/// an async worker, or as the process ends).
fn run_detached(hooks: HookRun, event: HookEvent, fields: Map<String, Value>) -> Vec<HookReport> {
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(runtime.block_on(hooks.fire(event, None, fields)).1)
    });
    thread.join().ok().flatten().unwrap_or_default()
}

impl NotifyingApprover {
    /// Runs the hooks on a task of their own with `message` (redacted).
    fn notify(&self, message: String) {
        if !self.hooks.wants(HookEvent::Notification, None) {
            return;
        }
        let mut fields = Map::new();
        fields.insert(
            "message".into(),
            Value::String(self.redactor.redact(&message).into_owned()),
        );
        let hooks = self.hooks.clone();
        let observer = self.observer.clone();
        tokio::spawn(async move {
            let (_, reports) = hooks.fire(HookEvent::Notification, None, fields).await;
            for report in &reports {
                observer.on_event(&EngineEvent::Hook {
                    iteration: 0,
                    report,
                });
            }
        });
    }
}

#[async_trait]
impl Approver for NotifyingApprover {
    async fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let what: Vec<String> = items
            .iter()
            .map(|i| format!("{} {} ({})", i.tool, i.resource, i.class.as_str()))
            .collect();
        self.notify(format!("odek needs your approval: {}", what.join("; ")));
        self.inner.ask(items, cancel).await
    }

    async fn clarify(&self, question: &Question, cancel: &CancellationToken) -> QuestionAnswer {
        self.notify(format!("odek asks: {}", question.question));
        self.inner.clarify(question, cancel).await
    }
}
