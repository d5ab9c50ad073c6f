//! `session/load`: a saved session told to the client again as `session/update`s — each user
//! message, each answer and its thinking, each tool call with its result's status, and the
//! plan as the session left it. The system prompt and odek's own injections are not shown.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::rpc::Connection;
use super::updates::{plan_update, send_update, text_chunk, tool_title};
use crate::llm::{Message, Role};
use crate::session::Session;
use crate::tools::catalog;

/// Sends the updates that retell `session`.
pub(crate) fn replay(conn: &Connection, session: &Session) {
    for update in updates(session) {
        send_update(conn, &session.id, update);
    }
}

/// The updates that retell `session`, in order.
pub(crate) fn updates(session: &Session) -> Vec<Value> {
    let failed: HashMap<&str, bool> = session
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| Some((m.tool_call_id.as_deref()?, is_error(m))))
        .collect();
    let mut out = Vec::new();
    for message in &session.messages {
        match message.role {
            Role::User if !is_injection(message) => {
                out.push(text_chunk("user_message_chunk", message.content.clone()));
            }
            Role::Assistant => {
                if let Some(reasoning) = message.reasoning_content.as_deref()
                    && !reasoning.is_empty()
                {
                    out.push(text_chunk("agent_thought_chunk", reasoning.to_string()));
                }
                if !message.content.is_empty() {
                    out.push(text_chunk("agent_message_chunk", message.content.clone()));
                }
                for call in &message.tool_calls {
                    let name = &call.function.name;
                    let arguments: Value =
                        serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
                    let failed = failed.get(call.id.as_str()).copied().unwrap_or(false);
                    out.push(json!({
                        "sessionUpdate": "tool_call",
                        "toolCallId": call.id,
                        "title": tool_title(name, &summary(name, &arguments)),
                        "kind": catalog::tool_kind(name).as_str(),
                        "status": if failed { "failed" } else { "completed" },
                        "rawInput": arguments,
                    }));
                }
            }
            _ => {}
        }
    }
    if let Some(plan) = session.plan.as_ref().filter(|p| !p.steps.is_empty()) {
        out.push(plan_update(plan));
    }
    out
}

/// What a saved call acted on, for its title: its path, command, URL or main argument.
fn summary(tool: &str, arguments: &Value) -> String {
    let Some(row) = catalog::row_of(tool) else {
        return String::new();
    };
    let field = match row.subject {
        catalog::Subject::Path { .. } => "path",
        catalog::Subject::Command => "command",
        catalog::Subject::Url => "url",
        catalog::Subject::Arg(name) => name,
        catalog::Subject::PathsIn { .. } | catalog::Subject::Nothing => {
            return row.paths(arguments).join(", ");
        }
    };
    arguments
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A tool result that reports an error: odek's start with `error:`, inside the untrusted
/// wrapper when the tool's output is external (a shell command's).
fn is_error(message: &Message) -> bool {
    let text = &message.content;
    let body = crate::untrusted::wrappers(text)
        .first()
        .filter(|_| text.starts_with(crate::untrusted::OPEN_TAG_PREFIX))
        .map_or(text.as_str(), |w| w.body);
    body.starts_with("error:")
}

/// A user message odek put there itself (injected context: attached files, recalls).
fn is_injection(message: &Message) -> bool {
    message
        .content
        .starts_with(crate::transcript::INJECTION_PREFIX)
}
