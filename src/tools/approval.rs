//! The approval gate: before a batch runs, every call is classified and the `dangerous` policy
//! decides allow, deny or ask. Calls that need asking in one batch share one prompt.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::danger::{
    Action, Classification, DangerClass, DangerPolicy, command_parts, decide_command,
};
use crate::redact::Redactor;

/// One call waiting for the user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalItem {
    /// Tool name.
    pub tool: String,
    /// What it acts on: a shell command whole, on one row, its control bytes, newlines and
    /// long runs of blanks shown ([`crate::text::visible_in_full`]); else the call's summary
    /// (a path, an address), shown the same way.
    pub resource: String,
    /// Its danger class.
    pub class: DangerClass,
    /// Why it got that class.
    pub reason: String,
    /// What trusting it for the session trusts, when narrower than its class (a host).
    pub scope: Option<String>,
    /// The model's id of the call asked about (`None` for a sub-agent's call: the parent
    /// has no call of that id).
    pub call_id: Option<String>,
    /// The parts of a shell command of more than one (each simple command, each
    /// substitution), each with its class and reason; empty otherwise.
    pub parts: Vec<ApprovalPart>,
    /// The call's arguments, whole (redacted), for surfaces that show them (`odek acp`'s
    /// `rawInput`); `None` for a sub-agent's call.
    pub arguments: Option<Value>,
}

/// One part of a shell command asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPart {
    /// The part (words with quotes removed, redirections), shown as
    /// [`crate::text::visible_in_full`] shows it.
    pub text: String,
    /// Its class.
    pub class: DangerClass,
    /// Why.
    pub reason: String,
}

impl ApprovalItem {
    /// True when "trust for this session" may cover it: a scoped item always (its scope
    /// is trusted, not its class), otherwise unless its class may never be trusted.
    pub fn can_be_trusted(&self) -> bool {
        self.scope.is_some() || can_be_trusted(self.class)
    }

    /// The reason, and for a command of several parts each part's class and reason, one
    /// line each (`part — class: reason`): for surfaces that show one text.
    pub fn reasons(&self) -> String {
        let mut text = self.reason.clone();
        for part in &self.parts {
            text.push_str(&format!(
                "\n{} — {}: {}",
                part.text,
                part.class.as_str(),
                part.reason
            ));
        }
        text
    }

    /// The item with every text and argument redacted.
    fn redacted(mut self, redactor: &Redactor) -> ApprovalItem {
        let redact = |text: &mut String| {
            if let std::borrow::Cow::Owned(clean) = redactor.redact(text) {
                *text = clean;
            }
        };
        redact(&mut self.resource);
        redact(&mut self.reason);
        for part in &mut self.parts {
            redact(&mut part.text);
            redact(&mut part.reason);
        }
        if let Some(arguments) = self.arguments.as_mut() {
            redactor.redact_json(arguments);
        }
        self
    }
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run these calls.
    Approve,
    /// Refuse them.
    Deny,
    /// Run them, and stop asking about their classes (or, for a scoped call, its scope:
    /// one host) for the rest of the session.
    TrustClasses,
    /// The user interrupted the turn (Ctrl-C) instead of answering: refused.
    Cancelled,
    /// Nobody answered a remote approval in time: refused.
    Expired,
}

/// How long a remote surface (HTTP, Telegram) waits for someone to answer an approval
/// before the calls are denied.
pub const REMOTE_APPROVAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a remote surface waits for the answer to a `clarify` question before the model
/// is told to decide alone.
pub const REMOTE_QUESTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// A question the model asks the user (`clarify`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The question.
    pub question: String,
    /// Answers to choose from (the user may also answer in words).
    pub options: Vec<String>,
}

/// What came of a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionAnswer {
    /// The user's answer (an option's text when one was chosen).
    Answered(String),
    /// Nobody can answer on this surface (no terminal, a schedule, a sub-agent).
    NoUser,
    /// The user interrupted the turn instead of answering.
    Cancelled,
    /// Nobody answered in time.
    Expired,
}

/// Something that can ask the user: the terminal's prompt, or the supervisor's approvals
/// and questions that a browser or a chat answers by id.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// Asks about one call or a batch of calls. Should answer
    /// [`ApprovalAnswer::Cancelled`] soon after `cancel` fires (Ctrl-C during the prompt);
    /// the gate stops waiting at the cancel in any case.
    async fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer;

    /// Asks the user a question and waits for the answer; [`QuestionAnswer::Cancelled`]
    /// soon after `cancel` fires. A surface that cannot ask questions answers
    /// [`QuestionAnswer::NoUser`].
    async fn clarify(&self, _question: &Question, _cancel: &CancellationToken) -> QuestionAnswer {
        QuestionAnswer::NoUser
    }
}

/// One call as the gate sees it.
#[derive(Debug, Clone)]
pub struct GateRequest<'a> {
    /// The model's id of the call.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// The tool's classification; `None` = never gated.
    pub classification: Option<Classification>,
    /// The shell command, when there is one (allow/deny lists apply to it).
    pub command: Option<String>,
    /// What the call acts on, for messages.
    pub resource: String,
    /// What the `PreToolUse` hooks said: `Allow` skips asking (never a denial, `blocked`,
    /// or the non-interactive action when nobody can be asked), `Ask` asks where the policy
    /// would not (nobody to ask: denied).
    pub hook: crate::hooks::Decision,
    /// The user approved the tool's calls ahead (an MCP server's `auto_approve`): what the
    /// policy would ask about runs without asking; what it denies (a read-only session's
    /// classes) stays denied.
    pub approved_ahead: bool,
    /// The call's arguments, for the approval item.
    pub arguments: Option<&'a Value>,
}

/// The classes (and scopes: hosts) the user trusted for the rest of a session (answer
/// `[t]rust`). One per session, shared by the gates of all its turns; a turn without a
/// session has its own.
#[derive(Debug, Default)]
pub struct TrustSet(Mutex<Trusted>);

#[derive(Debug, Default)]
struct Trusted {
    classes: HashSet<DangerClass>,
    scopes: HashSet<String>,
}

impl TrustSet {
    /// True when `class` was trusted.
    pub fn contains(&self, class: DangerClass) -> bool {
        self.0
            .lock()
            .map(|t| t.classes.contains(&class))
            .unwrap_or(false)
    }

    /// True when a call of `class` (trusted by `scope` when it has one) was trusted.
    pub fn covers(&self, class: DangerClass, scope: Option<&str>) -> bool {
        match scope {
            Some(scope) => self
                .0
                .lock()
                .map(|t| t.scopes.contains(scope))
                .unwrap_or(false),
            None => self.contains(class),
        }
    }

    /// The trusted classes, in rank order.
    pub fn classes(&self) -> Vec<DangerClass> {
        let mut classes: Vec<DangerClass> = self
            .0
            .lock()
            .map(|t| t.classes.iter().copied().collect())
            .unwrap_or_default();
        classes.sort();
        classes
    }

    /// Trusts what the items are trusted by (scopes, or classes that may be trusted).
    fn extend(&self, items: &[ApprovalItem]) {
        if let Ok(mut trusted) = self.0.lock() {
            for item in items {
                match &item.scope {
                    Some(scope) => {
                        trusted.scopes.insert(scope.clone());
                    }
                    None if can_be_trusted(item.class) => {
                        trusted.classes.insert(item.class);
                    }
                    None => {}
                }
            }
        }
    }
}

/// Whether `[t]rust` may cover `class` for the rest of a session.
pub fn can_be_trusted(class: DangerClass) -> bool {
    !NEVER_TRUSTED.contains(&class)
}

/// Classes a user may never trust for a whole session.
const NEVER_TRUSTED: &[DangerClass] = &[
    DangerClass::SecretRead,
    DangerClass::Destructive,
    DangerClass::Blocked,
    DangerClass::Unknown,
];

/// Applies the policy, asking the approver when there is one.
pub struct Gate {
    policy: DangerPolicy,
    approver: Option<Arc<dyn Approver>>,
    trusted: Arc<TrustSet>,
    config_hint: String,
    /// Redacts what the approver is shown (none: shown as the engine gave it).
    redactor: Option<Arc<Redactor>>,
}

enum Verdict {
    Allowed,
    Denied(String),
    Ask(ApprovalItem),
}

impl Gate {
    /// A gate for this policy; without an approver, `non_interactive` decides what would be
    /// asked. `config_path` is named in denial messages so the user knows where to allow.
    /// `trusted` is the session's trust set (shared by its turns).
    pub fn new(
        policy: DangerPolicy,
        approver: Option<Arc<dyn Approver>>,
        config_path: &str,
        trusted: Arc<TrustSet>,
    ) -> Self {
        Gate {
            policy,
            approver,
            trusted,
            config_hint: config_path.to_string(),
            redactor: None,
        }
    }

    /// The same gate, redacting what the approver is shown with `redactor`.
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// Decides every call of a batch: `Ok(())` runs it, `Err(message)` becomes its result.
    /// A prompt stops when `cancel` fires; what it asked about is then refused.
    pub async fn decide(
        &self,
        requests: &[GateRequest<'_>],
        cancel: &CancellationToken,
    ) -> Vec<Result<(), super::ToolError>> {
        let verdicts: Vec<Verdict> = requests.iter().map(|r| self.verdict(r)).collect();
        let asks: Vec<ApprovalItem> = verdicts
            .iter()
            .filter_map(|v| match v {
                Verdict::Ask(item) => Some(item.clone()),
                _ => None,
            })
            .collect();
        let refusal = if asks.is_empty() {
            None
        } else {
            self.ask(asks, cancel).await
        };
        verdicts
            .into_iter()
            .map(|v| match v {
                Verdict::Allowed => Ok(()),
                Verdict::Denied(msg) => Err(super::ToolError(msg)),
                Verdict::Ask(item) => match refusal {
                    Some(r) => Err(super::ToolError(self.refusal_message(r, &item))),
                    None => Ok(()),
                },
            })
            .collect()
    }

    fn verdict(&self, request: &GateRequest<'_>) -> Verdict {
        use crate::hooks::Decision;
        match (self.policy_verdict(request), &request.hook) {
            // A hook's allow stands in for the user's answer: with nobody to ask, the
            // non-interactive action decides, as it would without the hook.
            (Verdict::Ask(_), Decision::Allow) if self.approver.is_some() => Verdict::Allowed,
            (Verdict::Allowed | Verdict::Ask(_), Decision::Ask(why)) if self.approver.is_none() => {
                Verdict::Denied(format!(
                    "operation not run: a hook asked for approval of {} ({why}) and there is nobody to ask",
                    request.resource
                ))
            }
            (Verdict::Allowed, Decision::Ask(why)) => Verdict::Ask(asked_item(
                request,
                request
                    .classification
                    .as_ref()
                    .map_or(DangerClass::Safe, |c| c.class),
                format!("a hook asks: {why}"),
                None,
            )),
            (Verdict::Ask(_), hook)
                if request.approved_ahead && !matches!(hook, Decision::Ask(_)) =>
            {
                Verdict::Allowed
            }
            (verdict, _) => verdict,
        }
    }

    /// The verdict of the policy alone.
    fn policy_verdict(&self, request: &GateRequest<'_>) -> Verdict {
        let Some(classification) = &request.classification else {
            return Verdict::Allowed;
        };
        let (class, action, reason) = match &request.command {
            Some(cmd) => {
                let d = decide_command(&self.policy, cmd);
                (d.class, d.action, d.reason)
            }
            None => (
                classification.class,
                self.policy.decide_class(classification.class),
                classification.reason.clone(),
            ),
        };
        let scope = classification
            .scope
            .clone()
            .filter(|_| request.command.is_none());
        match action {
            Action::Allow => Verdict::Allowed,
            Action::Deny => Verdict::Denied(format!(
                "operation denied by configuration: {} (risk: {}{})",
                request.resource,
                class.as_str(),
                reason_suffix(&reason)
            )),
            Action::Prompt if self.trusted.covers(class, scope.as_deref()) => Verdict::Allowed,
            Action::Prompt => Verdict::Ask(asked_item(request, class, reason, scope)),
        }
    }

    /// Asks once for all items: `None` when they may run, else who refused.
    async fn ask(&self, items: Vec<ApprovalItem>, cancel: &CancellationToken) -> Option<Refusal> {
        let Some(approver) = self.approver.clone() else {
            return match self.policy.non_interactive_action() {
                Action::Allow => None,
                _ => Some(Refusal::NoTerminal),
            };
        };
        let shown: Vec<ApprovalItem> = match &self.redactor {
            Some(redactor) => items.iter().map(|i| i.clone().redacted(redactor)).collect(),
            None => items.clone(),
        };
        // An approver that kept waiting after Ctrl-C would still not hold the turn up.
        let answer = tokio::select! {
            answer = approver.ask(&shown, cancel) => answer,
            _ = cancel.cancelled() => ApprovalAnswer::Cancelled,
        };
        match answer {
            ApprovalAnswer::Approve => None,
            ApprovalAnswer::TrustClasses => {
                self.trusted.extend(&items);
                None
            }
            ApprovalAnswer::Deny => Some(Refusal::User),
            ApprovalAnswer::Cancelled => Some(Refusal::Cancelled),
            ApprovalAnswer::Expired => Some(Refusal::Expired),
        }
    }

    /// The message the model gets for a refused call.
    fn refusal_message(&self, refusal: Refusal, item: &ApprovalItem) -> String {
        let resource = crate::text::truncate(&item.resource, MESSAGE_RESOURCE_CHARS);
        let item = &ApprovalItem {
            resource: resource.into_owned(),
            ..item.clone()
        };
        match refusal {
            Refusal::User => format!("operation denied by user: {}", item.resource),
            Refusal::Cancelled => format!(
                "operation not run: the user interrupted the turn while asked to approve {}",
                item.resource
            ),
            Refusal::Expired => format!(
                "operation not run: the request to approve {} expired with no answer from the user",
                item.resource
            ),
            Refusal::NoTerminal => format!(
                "operation denied (non-interactive mode): {} (risk: {}{}). There is no terminal to ask for approval; to allow this class, the user can run odek with --allow {} or set \"dangerous\": {{\"classes\": {{\"{}\": \"allow\"}}}} (or \"non_interactive\": \"allow\") in {}",
                item.resource,
                item.class.as_str(),
                reason_suffix(&item.reason),
                item.class.as_str(),
                item.class.as_str(),
                self.config_hint
            ),
        }
    }
}

/// Why calls that needed approval were refused.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// The user said no.
    User,
    /// The user interrupted the turn at the prompt.
    Cancelled,
    /// Nobody answered the approval in time.
    Expired,
    /// Nobody could be asked and `non_interactive` is deny.
    NoTerminal,
}

/// Characters of what a call acts on named in a refusal the model reads (it knows its call).
const MESSAGE_RESOURCE_CHARS: usize = 200;

/// The item asked about for `request`: a shell command shown whole with its parts.
fn asked_item(
    request: &GateRequest<'_>,
    class: DangerClass,
    reason: String,
    scope: Option<String>,
) -> ApprovalItem {
    let (resource, parts) = match &request.command {
        Some(command) => (crate::text::visible_in_full(command), shown_parts(command)),
        None => (crate::text::visible_in_full(&request.resource), Vec::new()),
    };
    ApprovalItem {
        tool: crate::text::visible_in_full(&request.tool),
        resource,
        class,
        reason: crate::text::visible_in_full(&reason),
        scope,
        call_id: Some(request.call_id.clone()),
        parts,
        arguments: request.arguments.cloned(),
    }
}

/// The parts of `command` when it has more than one.
fn shown_parts(command: &str) -> Vec<ApprovalPart> {
    let parts = command_parts(command);
    if parts.len() < 2 {
        return Vec::new();
    }
    parts
        .into_iter()
        .map(|(text, found)| ApprovalPart {
            text: crate::text::visible_in_full(&text),
            class: found.class,
            reason: crate::text::visible_in_full(&found.reason),
        })
        .collect()
}

fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" — {reason}")
    }
}

#[cfg(test)]
mod tests;
