//! Approvals as `session/request_permission`: each call that would ask in the terminal is
//! asked about in the editor, with ACP's four options — allow once, allow always (odek's
//! trust for the rest of the session: its class, or its host for a web call), reject once,
//! reject always (this class is refused for the rest of the session without asking). A
//! cancelled prompt answers as cancelled. `clarify` questions go the same way: each option a
//! permission option, the answer the chosen one (an editor offers no free text there).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::rpc::Connection;
use super::updates::tool_title;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};
use crate::tools::catalog;
use crate::tools::danger::DangerClass;

/// ACP's permission request.
const REQUEST_PERMISSION: &str = "session/request_permission";

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// One session's approver.
pub(crate) struct AcpApprover {
    conn: Arc<Connection>,
    session_id: String,
    /// The classes the user rejected for the rest of the session.
    rejected: Arc<Mutex<HashSet<DangerClass>>>,
    /// Numbers the permission requests that have no call of their own (a sub-agent's
    /// call, a `clarify` question).
    asked: std::sync::atomic::AtomicU64,
}

/// What one question came to.
enum Choice {
    Option(String),
    Cancelled,
}

impl AcpApprover {
    /// The approver of `session_id`; `rejected` outlives its turns.
    pub(crate) fn new(
        conn: Arc<Connection>,
        session_id: &str,
        rejected: Arc<Mutex<HashSet<DangerClass>>>,
    ) -> AcpApprover {
        AcpApprover {
            conn,
            session_id: session_id.to_string(),
            rejected,
            asked: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn rejected(&self, class: DangerClass) -> bool {
        self.rejected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&class)
    }

    /// Asks with `tool_call` and `options`; the option chosen.
    async fn choose(
        &self,
        tool_call: Value,
        options: Vec<Value>,
        cancel: &CancellationToken,
    ) -> Choice {
        let params = json!({
            "sessionId": self.session_id,
            "toolCall": tool_call,
            "options": options,
        });
        let answer = tokio::select! {
            answer = self.conn.request(REQUEST_PERMISSION, params) => answer,
            () = cancel.cancelled() => return Choice::Cancelled,
        };
        let Ok(answer) = answer else {
            return Choice::Cancelled;
        };
        let outcome = &answer["outcome"];
        match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
            (Some("selected"), Some(id)) => Choice::Option(id.to_string()),
            _ => Choice::Cancelled,
        }
    }

    fn next_call_id(&self) -> String {
        let n = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("permission_{n}")
    }

    /// Asks about one item: its answer.
    async fn ask_one(&self, item: &ApprovalItem, cancel: &CancellationToken) -> ApprovalAnswer {
        if self.rejected(item.class) {
            return ApprovalAnswer::Deny;
        }
        let mut options = vec![option(ALLOW_ONCE, "Allow once", ALLOW_ONCE)];
        if item.can_be_trusted() {
            let name = match &item.scope {
                Some(scope) => format!("Allow {scope} for this session"),
                None => format!("Allow {} for this session", item.class.as_str()),
            };
            options.push(option(ALLOW_ALWAYS, &name, ALLOW_ALWAYS));
        }
        options.push(option(REJECT_ONCE, "Reject", REJECT_ONCE));
        options.push(option(
            REJECT_ALWAYS,
            &format!("Reject {} for this session", item.class.as_str()),
            REJECT_ALWAYS,
        ));
        // The call's own id, so the editor shows the question on the call it then sees run.
        let id = item.call_id.clone().unwrap_or_else(|| self.next_call_id());
        // The whole call: its arguments in `rawInput`, and as text the command whole (its
        // other lines and far parts shown) with each part's reason.
        let parts: Vec<Value> = item
            .parts
            .iter()
            .map(|p| json!({"text": p.text, "risk": p.class.as_str(), "reason": p.reason}))
            .collect();
        let shown = format!(
            "{} {}\n[risk: {}] {}",
            item.tool,
            item.resource,
            item.class.as_str(),
            item.reasons()
        );
        let tool_call = json!({
            "toolCallId": id,
            "title": tool_title(&item.tool, &item.resource),
            "kind": catalog::tool_kind(&item.tool).as_str(),
            "status": "pending",
            "content": [{"type": "content", "content": {"type": "text", "text": shown}}],
            "rawInput": {"tool": item.tool, "resource": item.resource,
                         "risk": item.class.as_str(), "reason": item.reason,
                         "parts": parts, "arguments": item.arguments},
        });
        match self.choose(tool_call, options, cancel).await {
            Choice::Option(id) if id == ALLOW_ONCE => ApprovalAnswer::Approve,
            Choice::Option(id) if id == ALLOW_ALWAYS => ApprovalAnswer::TrustClasses,
            Choice::Option(id) if id == REJECT_ALWAYS => {
                self.rejected
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(item.class);
                ApprovalAnswer::Deny
            }
            Choice::Option(_) => ApprovalAnswer::Deny,
            Choice::Cancelled => ApprovalAnswer::Cancelled,
        }
    }
}

fn option(id: &str, name: &str, kind: &str) -> Value {
    json!({"optionId": id, "name": name, "kind": kind})
}

#[async_trait::async_trait]
impl Approver for AcpApprover {
    /// One request per call of the batch, in order: the batch runs when every call was
    /// allowed (trusted when every one was allowed always); the first rejection refuses it.
    async fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let mut all_trusted = true;
        for item in items {
            match self.ask_one(item, cancel).await {
                ApprovalAnswer::Approve => all_trusted = false,
                ApprovalAnswer::TrustClasses => {}
                refused => return refused,
            }
        }
        if all_trusted {
            ApprovalAnswer::TrustClasses
        } else {
            ApprovalAnswer::Approve
        }
    }

    async fn clarify(&self, question: &Question, cancel: &CancellationToken) -> QuestionAnswer {
        if question.options.is_empty() {
            // Nothing to choose from: the model decides alone, as with nobody to ask.
            return QuestionAnswer::NoUser;
        }
        let options: Vec<Value> = question
            .options
            .iter()
            .enumerate()
            .map(|(i, text)| option(&format!("option_{i}"), text, ALLOW_ONCE))
            .collect();
        let tool_call = json!({
            "toolCallId": self.next_call_id(),
            "title": tool_title("clarify", &question.question),
            "kind": "other",
            "status": "pending",
            "rawInput": {"question": question.question, "options": question.options},
        });
        match self.choose(tool_call, options, cancel).await {
            Choice::Option(id) => id
                .strip_prefix("option_")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| question.options.get(i))
                .map_or(QuestionAnswer::NoUser, |text| {
                    QuestionAnswer::Answered(text.clone())
                }),
            Choice::Cancelled => QuestionAnswer::Cancelled,
        }
    }
}
