//! A turn as `session/update` notifications: the answer and the thinking as they stream, each
//! tool call (its kind, its title as the terminal shows it, the paths it touches, a diff of
//! each file it changed) and the whole plan whenever it changed (and as a prompt begins). Everything is
//! redacted: the streams as streams (a secret split across deltas is held back until it can
//! be recognised), the rest whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::files::WriteLog;
use super::rpc::Connection;
use crate::engine::{EngineEvent, Observer};
use crate::llm::{Delta, ToolCall};
use crate::plan::{PlanState, StepStatus};
use crate::redact::{Redactor, StreamRedactor};
use crate::tools::catalog;

/// Files larger than this are not shown as diffs (the call still lists them).
const MAX_DIFF_FILE_BYTES: u64 = 1 << 20;

/// The most of a command's output an update shows (its head and tail).
const MAX_SHOWN_OUTPUT_BYTES: usize = 16 * 1024;

/// The notification method of every update.
pub(crate) const SESSION_UPDATE: &str = "session/update";

/// Sends one session's updates.
pub(crate) struct Updates {
    conn: Arc<Connection>,
    session_id: String,
    cwd: PathBuf,
    redactor: Arc<Redactor>,
    answer: Mutex<StreamRedactor>,
    thought: Mutex<StreamRedactor>,
    /// The text of each file a running call may change, read before it ran (`None`: the
    /// file did not exist), by call id.
    before: Mutex<HashMap<String, Vec<PreImage>>>,
    /// What the editor wrote for the calls (their diffs when it writes files).
    written: Arc<WriteLog>,
}

/// A file as it was before a call changed it (`None`: it did not exist).
type PreImage = (PathBuf, Option<String>);

impl Updates {
    pub(crate) fn new(
        conn: Arc<Connection>,
        session_id: &str,
        cwd: &Path,
        redactor: Arc<Redactor>,
        written: Arc<WriteLog>,
    ) -> Updates {
        Updates {
            conn,
            session_id: session_id.to_string(),
            cwd: cwd.to_path_buf(),
            answer: Mutex::new(StreamRedactor::new(redactor.clone())),
            thought: Mutex::new(StreamRedactor::new(redactor.clone())),
            redactor,
            before: Mutex::new(HashMap::new()),
            written,
        }
    }

    /// Sends `update` (an object with its `sessionUpdate`).
    pub(crate) fn send(&self, update: Value) {
        send_update(&self.conn, &self.session_id, update);
    }

    fn chunk(&self, kind: &str, text: String) {
        if !text.is_empty() {
            self.send(text_chunk(kind, text));
        }
    }

    fn flush_streams(&self) {
        let answer = lock(&self.answer).finish();
        self.chunk("agent_message_chunk", answer);
        let thought = lock(&self.thought).finish();
        self.chunk("agent_thought_chunk", thought);
    }

    fn on_delta(&self, delta: Delta<'_>) {
        match delta {
            Delta::Content(text) => {
                let out = lock(&self.answer).push(text);
                self.chunk("agent_message_chunk", out);
            }
            Delta::Reasoning(text) => {
                let out = lock(&self.thought).push(text);
                self.chunk("agent_thought_chunk", out);
            }
            // ACP has no way to take back what was shown: the answer asked for again
            // follows what was streamed.
            Delta::Restart => {
                lock(&self.answer).reset();
                lock(&self.thought).reset();
            }
        }
    }

    fn on_model_finished(&self, message: &crate::llm::Message, streamed: bool) {
        if streamed {
            self.flush_streams();
            return;
        }
        if let Some(reasoning) = message.reasoning_content.as_deref() {
            let text = self.redactor.redact(reasoning).into_owned();
            self.chunk("agent_thought_chunk", text);
        }
        let text = self.redactor.redact(&message.content).into_owned();
        self.chunk("agent_message_chunk", text);
    }

    fn on_tool_started(&self, call: &ToolCall, summary: &str) {
        let name = &call.function.name;
        let mut arguments: Value =
            serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
        let paths = self.paths(name, &arguments);
        if catalog::row_of(name).is_some_and(catalog::ToolRow::changes_files) {
            let before = paths.iter().map(|p| (p.clone(), read_text(p))).collect();
            lock(&self.before).insert(call.id.clone(), before);
        }
        self.redactor.redact_json(&mut arguments);
        let locations: Vec<Value> = paths
            .iter()
            .map(|p| json!({"path": p.to_string_lossy()}))
            .collect();
        self.send(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call.id,
            "title": self.redactor.redact(&tool_title(name, summary)),
            "kind": catalog::tool_kind(name).as_str(),
            "status": "in_progress",
            "locations": locations,
            "rawInput": arguments,
        }));
    }

    fn on_tool_finished(&self, call: &ToolCall, ok: bool, error: Option<&str>, result: &str) {
        let before = lock(&self.before).remove(&call.id).unwrap_or_default();
        let paths: Vec<PathBuf> = before.iter().map(|(p, _)| p.clone()).collect();
        let through_editor = self.written.take(&paths);
        let mut content: Vec<Value> = if through_editor.is_empty() {
            before
                .into_iter()
                .filter_map(|(path, old)| self.diff(&path, old, read_text(&path)))
                .collect()
        } else {
            through_editor
                .into_iter()
                .filter_map(|(path, old, new)| self.diff(&path, old, Some(new)))
                .collect()
        };
        // A command's output as the terminal would show it; else a failure's reason.
        let shown = if catalog::tool_kind(&call.function.name) == catalog::ToolKind::Execute {
            Some(shown_output(result))
        } else {
            error
                .filter(|_| !ok)
                .map(|e| self.redactor.redact(e).into_owned())
        };
        if let Some(text) = shown.filter(|t| !t.is_empty()) {
            content.push(json!({"type": "content", "content": {"type": "text", "text": text}}));
        }
        self.send(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call.id,
            "status": if ok { "completed" } else { "failed" },
            "content": content,
        }));
    }

    /// The `diff` content of `path` when the call changed it from `old` to `new`.
    fn diff(&self, path: &Path, old: Option<String>, new: Option<String>) -> Option<Value> {
        let new = new?;
        if old.as_deref() == Some(new.as_str()) {
            return None;
        }
        let old = old.map(|t| self.redactor.redact(&t).into_owned());
        Some(json!({
            "type": "diff",
            "path": path.to_string_lossy(),
            "oldText": old,
            "newText": self.redactor.redact(&new),
        }))
    }

    /// The absolute paths a call of `tool` acts on.
    fn paths(&self, tool: &str, arguments: &Value) -> Vec<PathBuf> {
        let Some(row) = catalog::row_of(tool) else {
            return Vec::new();
        };
        row.paths(arguments)
            .into_iter()
            .map(|p| self.cwd.join(p))
            .collect()
    }
}

impl Observer for Updates {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::Delta { delta, .. } => self.on_delta(*delta),
            EngineEvent::ModelCallFinished {
                message, streamed, ..
            } => self.on_model_finished(message, *streamed),
            EngineEvent::ToolCallStarted { call, summary, .. } => {
                self.on_tool_started(call, summary)
            }
            EngineEvent::ToolCallFinished {
                call,
                ok,
                error,
                result,
                ..
            } => self.on_tool_finished(call, *ok, *error, result),
            EngineEvent::PlanChanged { plan } => self.send(plan_update(plan)),
            EngineEvent::RunFinished { .. } => self.flush_streams(),
            // What every surface shows: a thought of its own, the editor has no notice.
            EngineEvent::ModelFallback { .. } | EngineEvent::Compacted { .. } => {
                let line = event.notice().unwrap_or_default();
                self.chunk("agent_thought_chunk", format!("odek: {line}\n"));
            }
            // Nothing the editor shows: ACP has no update for these.
            EngineEvent::RunStarted { .. }
            | EngineEvent::ModelCallStarted { .. }
            | EngineEvent::ModelRetry { .. }
            | EngineEvent::ToolReport { .. }
            | EngineEvent::Hint { .. }
            | EngineEvent::IterationCompleted { .. }
            | EngineEvent::SessionSaved { .. }
            | EngineEvent::SessionSaveFailed { .. }
            | EngineEvent::ContextTrimmed { .. }
            | EngineEvent::CompactionStarted { .. }
            | EngineEvent::ContentIngested { .. }
            | EngineEvent::BackgroundFinished { .. }
            | EngineEvent::Hook { .. }
            | EngineEvent::BudgetExceeded { .. } => {}
        }
    }
}

/// Sends `update` for `session_id` over `conn`.
pub(crate) fn send_update(conn: &Connection, session_id: &str, update: Value) {
    conn.notify(
        SESSION_UPDATE,
        json!({"sessionId": session_id, "update": update}),
    );
}

/// A text chunk update of `kind` (`agent_message_chunk`, `user_message_chunk`, …).
pub(crate) fn text_chunk(kind: &str, text: String) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// A call's title as the terminal shows it: its emoji, its name and what it acts on.
pub(crate) fn tool_title(tool: &str, summary: &str) -> String {
    let summary = crate::text::fit(summary.lines().next().unwrap_or(""), 80);
    let title = format!("{} {tool} {summary}", catalog::tool_emoji(tool));
    title.trim_end().to_string()
}

/// The `plan` update of `plan`: one entry per step, in order. ACP knows no blocked step: a
/// blocked one is pending with `⛔ ` before its title and high priority; the others are of
/// medium priority.
pub(crate) fn plan_update(plan: &PlanState) -> Value {
    let entries: Vec<Value> = plan
        .steps
        .iter()
        .map(|step| {
            let (status, priority, content) = match step.status {
                StepStatus::Pending => ("pending", "medium", step.title.clone()),
                StepStatus::InProgress => ("in_progress", "medium", step.title.clone()),
                StepStatus::Done => ("completed", "medium", step.title.clone()),
                StepStatus::Blocked => ("pending", "high", format!("⛔ {}", step.title)),
            };
            json!({"content": content, "priority": priority, "status": status})
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// A command's result as the model got it (already redacted), out of its untrusted
/// wrapper, at most [`MAX_SHOWN_OUTPUT_BYTES`] of it.
fn shown_output(result: &str) -> String {
    let body = match crate::untrusted::wrappers(result).first() {
        Some(w) if result.starts_with(crate::untrusted::OPEN_TAG_PREFIX) => w.body,
        _ => result,
    };
    crate::text::head_and_tail(body, MAX_SHOWN_OUTPUT_BYTES).into_owned()
}

/// The text of `path` when it is a UTF-8 file of at most [`MAX_DIFF_FILE_BYTES`].
fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_DIFF_FILE_BYTES {
        return None;
    }
    String::from_utf8(std::fs::read(path).ok()?).ok()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanStep;

    #[test]
    fn the_plan_is_one_entry_per_step_in_order() {
        let step = |id: &str, title: &str, status| PlanStep {
            id: id.into(),
            title: title.into(),
            status,
            note: String::new(),
        };
        let plan = PlanState {
            version: 3,
            steps: vec![
                step("s1", "Read the code", StepStatus::Done),
                step("s2", "Fix the bug", StepStatus::InProgress),
                step("s3", "Run the tests", StepStatus::Pending),
                step("s4", "Release", StepStatus::Blocked),
            ],
        };
        assert_eq!(
            plan_update(&plan),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "Read the code", "priority": "medium", "status": "completed"},
                {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
                {"content": "Run the tests", "priority": "medium", "status": "pending"},
                {"content": "⛔ Release", "priority": "high", "status": "pending"},
            ]})
        );
    }

    #[test]
    fn a_title_is_the_terminal_line() {
        assert_eq!(
            tool_title("read_file", "src/main.rs"),
            "📖 read_file src/main.rs"
        );
        assert_eq!(tool_title("shell", "ls\nrm -rf x"), "💻 shell ls");
        assert_eq!(tool_title("skill_list", ""), "🔧 skill_list");
    }
}
