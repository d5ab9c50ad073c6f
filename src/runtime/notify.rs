//! The `Notification` hooks: a surface's approver that tells the user's hooks when an
//! approval or a `clarify` question waits for an answer (a desktop notification, a chime),
//! then asks as the surface does. The hooks run beside the question, never before it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::hooks::{HookEvent, HookRun};
use crate::redact::Redactor;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};

/// `inner`, with the `Notification` hooks run whenever it is asked something.
pub(crate) struct NotifyingApprover {
    pub inner: Arc<dyn Approver>,
    pub hooks: HookRun,
    pub redactor: Arc<Redactor>,
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
        tokio::spawn(async move {
            hooks.fire(HookEvent::Notification, None, fields).await;
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
