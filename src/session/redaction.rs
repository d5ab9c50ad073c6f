//! Redaction at save: the copy written to disk never holds a registered or recognisable
//! secret, while the caller's in-memory session keeps its text.

use std::borrow::Cow;

use super::Session;
use crate::llm::Message;
use crate::plan::PlanState;
use crate::redact::Redactor;

/// A copy of `session` with the task, the endpoint, every message's content and reasoning,
/// every tool call's arguments and the plan's titles and notes redacted.
pub(crate) fn redacted_copy(session: &Session, redactor: &Redactor) -> Session {
    let mut copy = session.clone();
    redact_text(redactor, &mut copy.task);
    if let Some(name) = &mut copy.name {
        redact_text(redactor, name);
    }
    if let Some(base_url) = copy.base_url.as_mut() {
        redact_text(redactor, base_url);
    }
    for message in &mut copy.messages {
        redact_message(redactor, message);
    }
    if let Some(plan) = copy.plan.as_mut() {
        redact_plan(redactor, plan);
    }
    copy
}

/// Redacts a message's content, reasoning and tool-call arguments in place. Its provider
/// state is never rewritten (a changed signature is a broken one): it is kept whole, or
/// dropped whole when the redactor would change any of it (a key of this process, a token
/// of a known format pasted into the conversation).
pub(crate) fn redact_message(redactor: &Redactor, message: &mut Message) {
    drop_state_holding_secret(redactor, message);
    redact_text(redactor, &mut message.content);
    if let Some(reasoning) = message.reasoning_content.as_mut() {
        redact_text(redactor, reasoning);
    }
    for call in &mut message.tool_calls {
        redact_arguments(redactor, &mut call.function.arguments);
    }
}

/// Texts checked together are joined by this: a blank line, a run of characters that no
/// encoding, hex run or credential format continues, and a blank line again, so every text
/// keeps the surroundings it has alone (a line start before it, a line end after it, no
/// wrapped block or hex run reaching in from its neighbour).
const JOIN: &str = "\n\n~~~~~~~~\n\n";

/// Redacts `messages` and `plan` in place exactly as [`redact_message`] and [`redact_plan`]
/// do, with one pass of the redactor when none of their texts holds a secret (a save's
/// texts are mostly short, and the redactor's cost per call is mostly its rules'): the
/// texts are checked joined by [`JOIN`] — a secret in one is a secret in the joined text
/// too — and only when that finds something is each redacted on its own. What the joined
/// text cannot show is still checked apart: provider state, and arguments with a JSON
/// escape in them.
pub(crate) fn redact_together(
    redactor: &Redactor,
    messages: &mut [&mut Message],
    plan: Option<&mut PlanState>,
) {
    let mut joined = String::new();
    let mut add = |text: &str| {
        if !text.is_empty() {
            if !joined.is_empty() {
                joined.push_str(JOIN);
            }
            joined.push_str(text);
        }
    };
    for message in messages.iter() {
        add(&message.content);
        add(message.reasoning_content.as_deref().unwrap_or_default());
        for call in &message.tool_calls {
            add(&call.function.arguments);
        }
    }
    for step in plan.iter().flat_map(|plan| &plan.steps) {
        add(&step.title);
        add(&step.note);
    }
    if matches!(redactor.redact(&joined), Cow::Owned(_)) {
        for message in messages.iter_mut() {
            redact_message(redactor, message);
        }
        if let Some(plan) = plan {
            redact_plan(redactor, plan);
        }
        return;
    }
    for message in messages.iter_mut() {
        drop_state_holding_secret(redactor, message);
        for call in &mut message.tool_calls {
            redact_escaped_arguments(redactor, &mut call.function.arguments);
        }
    }
}

/// Drops a message's provider state when the redactor would change any of it.
fn drop_state_holding_secret(redactor: &Redactor, message: &mut Message) {
    if message
        .provider_state
        .as_deref()
        .is_some_and(|state| holds_secret(redactor, state))
    {
        message.provider_state = None;
    }
}

/// True when the redactor would change `state`: its JSON text, or (for secrets that JSON
/// escapes) any of its string values.
fn holds_secret(redactor: &Redactor, state: &crate::llm::ProviderState) -> bool {
    let Ok(mut value) = serde_json::to_value(state) else {
        return true;
    };
    let text = value.to_string();
    if matches!(redactor.redact(&text), Cow::Owned(_)) {
        return true;
    }
    let original = value.clone();
    redactor.redact_json(&mut value);
    value != original
}

/// Redacts the plan's step titles and notes in place (they can echo secrets of the task).
/// Titles and notes are single lines, so all of them are first checked in one pass, joined
/// by newlines: a match inside one field is a match of the joined text too (no pattern is
/// anchored), so when the joined text is clean every field is; otherwise each field is
/// redacted on its own.
pub(crate) fn redact_plan(redactor: &Redactor, plan: &mut PlanState) {
    let fields = plan.steps.iter().flat_map(|s| [&s.title, &s.note]);
    let joined = fields.map(String::as_str).collect::<Vec<_>>().join("\n");
    if matches!(redactor.redact(&joined), Cow::Borrowed(_)) {
        return;
    }
    for step in &mut plan.steps {
        redact_text(redactor, &mut step.title);
        redact_text(redactor, &mut step.note);
    }
}

pub(crate) fn redact_text(redactor: &Redactor, text: &mut String) {
    if let Cow::Owned(redacted) = redactor.redact(text) {
        *text = redacted;
    }
}

/// Arguments are JSON text: a secret inside a JSON string may be escaped there (a quote, a
/// backslash, `\u` forms), which plain-text matching misses. So after the text pass, text
/// with an escape in it is parsed and its values redacted too, and re-serialised only when
/// that found something more. Without a backslash every JSON string is its literal text, which
/// the text pass has already seen.
fn redact_arguments(redactor: &Redactor, arguments: &mut String) {
    redact_text(redactor, arguments);
    redact_escaped_arguments(redactor, arguments);
}

/// The second pass of [`redact_arguments`]: the values of arguments with an escape in them.
fn redact_escaped_arguments(redactor: &Redactor, arguments: &mut String) {
    if !arguments.contains('\\') {
        return;
    }
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(arguments) else {
        return;
    };
    let mut redacted = parsed.clone();
    redactor.redact_json(&mut redacted);
    if redacted != parsed {
        *arguments = redacted.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, ToolCall};

    const SECRET: &str = "hunter2-very-secret-value";

    fn redactor() -> Redactor {
        let mut r = Redactor::new();
        r.add_secret(SECRET);
        r
    }

    fn session_with_secret_everywhere() -> Session {
        let mut assistant = Message::assistant(format!("I will use {SECRET}"));
        assistant.reasoning_content = Some(format!("the key is {SECRET}"));
        assistant.tool_calls = vec![ToolCall::new(
            "c1",
            "shell",
            serde_json::json!({ "command": format!("curl -H 'k: {SECRET}'") }).to_string(),
        )];
        Session {
            id: "s1".into(),
            created_at: String::new(),
            updated_at: String::new(),
            model: "m".into(),
            base_url: Some(format!("https://x.test/v1?key={SECRET}")),
            provider: None,
            origin: None,
            turns: 1,
            task: format!("deploy with {SECRET}"),
            messages: vec![
                Message::user(format!("deploy with {SECRET}")),
                assistant,
                Message::tool_result("c1", "shell", format!("echo {SECRET}")),
            ],
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            runs: Vec::new(),
            plan: Some(crate::plan::PlanState {
                version: 1,
                steps: vec![crate::plan::PlanStep {
                    id: "s1".into(),
                    title: format!("use {SECRET}"),
                    status: crate::plan::StepStatus::Pending,
                    note: format!("key {SECRET}"),
                }],
            }),
            revision: 0,
            sandbox: None,
            dangerous_override: None,
            parent_session: None,
            schedule: None,
            turn_plans: Vec::new(),
            forked_from: None,
            name: None,
        }
    }

    #[test]
    fn every_text_field_is_redacted_in_the_copy_only() {
        let original = session_with_secret_everywhere();
        let copy = redacted_copy(&original, &redactor());
        let written = serde_json::to_string(&copy).expect("serialises");
        assert!(!written.contains(SECRET), "{written}");
        assert!(written.contains(crate::redact::REDACTED));
        assert_eq!(
            original,
            session_with_secret_everywhere(),
            "the original is untouched"
        );
        let args: serde_json::Value =
            serde_json::from_str(&copy.messages[1].tool_calls[0].function.arguments)
                .expect("arguments stay valid JSON");
        assert!(
            args["command"]
                .as_str()
                .is_some_and(|c| c.contains("[REDACTED]"))
        );
    }

    #[test]
    fn redacting_together_is_redacting_one_by_one() {
        let mut r = redactor();
        r.add_secret("pass\"word\\with-escapes");
        let wrapped = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n".repeat(2);
        let escaped = serde_json::json!({ "p": "pass\"word\\with-escapes" }).to_string();
        let secrets = [
            format!("{wrapped}{SECRET}"),
            format!("{SECRET}\n{wrapped}"),
            "token ghp_0123456789abcdefghijABCDEFGHIJ012345".to_string(),
            "de:ad".to_string(),
        ];
        for secret in &secrets {
            for at in 0..3 {
                let mut messages: Vec<Message> = (0..3)
                    .map(|i| {
                        Message::assistant(if i == at {
                            secret.clone()
                        } else {
                            wrapped.clone()
                        })
                    })
                    .collect();
                messages[2].tool_calls = vec![ToolCall::new("c", "shell", escaped.clone())];
                let mut plan = session_with_secret_everywhere().plan.expect("plan");
                plan.steps[0].title = "clean".into();
                plan.steps[0].note = "clean".into();
                let mut one_by_one = messages.clone();
                let mut plan_alone = plan.clone();
                one_by_one.iter_mut().for_each(|m| redact_message(&r, m));
                redact_plan(&r, &mut plan_alone);
                let mut refs: Vec<&mut Message> = messages.iter_mut().collect();
                redact_together(&r, &mut refs, Some(&mut plan));
                assert_eq!(messages, one_by_one, "{secret:?} in message {at}");
                assert_eq!(plan, plan_alone);
                assert!(
                    !messages[2].tool_calls[0]
                        .function
                        .arguments
                        .contains("with-escapes")
                );
            }
        }
    }

    #[test]
    fn secrets_escaped_inside_json_arguments_are_redacted() {
        let mut r = Redactor::new();
        let quoted = "pass\"word\\with-escapes";
        r.add_secret(quoted);
        let mut arguments = serde_json::json!({ "password": quoted }).to_string();
        assert!(
            !arguments.contains(quoted),
            "the raw text holds the escaped form"
        );
        redact_arguments(&r, &mut arguments);
        let value: serde_json::Value = serde_json::from_str(&arguments).expect("valid JSON");
        assert_eq!(value["password"], crate::redact::REDACTED);
    }

    #[test]
    fn provider_state_is_kept_whole_or_dropped_whole() {
        let state = |text: &str| crate::llm::ProviderState {
            wire: "anthropic".into(),
            origin: None,
            items: vec![serde_json::json!({"type": "thinking", "thinking": text,
                "signature": "EqQBCkgIAxABGAIiQLk5n0Vq8mZ+yT3w/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789=="})],
        };
        let mut kept = Message::assistant("a");
        kept.provider_state = Some(Box::new(state("thinking about the build")));
        let before = kept.clone();
        redact_message(&redactor(), &mut kept);
        assert_eq!(
            kept.provider_state, before.provider_state,
            "a clean state is kept byte for byte"
        );
        for text in [
            "thinking about ghp_0123456789abcdefghijABCDEFGHIJ012345".to_string(),
            format!("the key is {SECRET}"),
            format!("quoted \"{SECRET}\""),
        ] {
            let mut dropped = Message::assistant("a");
            dropped.provider_state = Some(Box::new(state(&text)));
            redact_message(&redactor(), &mut dropped);
            assert_eq!(
                dropped.provider_state, None,
                "a state the redactor would change is never saved: {text}"
            );
        }
    }
}
