//! Claude Code's hook protocol: the tool names and input shapes its scripts expect, and
//! what a hook's exit and output mean.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::HookEvent;

/// odek's tools that Claude Code knows under another name.
const ALIASES: [(&str, &str); 9] = [
    ("shell", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("patch", "Edit"),
    ("batch_patch", "MultiEdit"),
    ("glob", "Glob"),
    ("search_files", "Grep"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
];

/// Claude Code's name of odek's tool `tool` (`shell` → `Bash`; an MCP tool
/// `<server>__<tool>` → `mcp__<server>__<tool>`), when it has one.
pub fn claude_name(tool: &str) -> Option<&'static str> {
    ALIASES
        .iter()
        .find(|(odek, _)| *odek == tool)
        .map(|(_, claude)| *claude)
}

/// The name a hook reads as `tool_name`: Claude Code's when it has one, MCP tools
/// (odek's `<server>__<tool>`) as `mcp__<server>__<tool>`, else odek's.
pub fn hook_tool_name(tool: &str) -> String {
    match claude_name(tool) {
        Some(name) => name.to_string(),
        None if tool.contains("__") => format!("mcp__{tool}"),
        None => tool.to_string(),
    }
}

/// A call's arguments as Claude Code's scripts read them: odek's fields, and `file_path`
/// (absolute) beside `path`, so `.tool_input.file_path` and `.tool_input.command` both work.
/// `file_path` is always the file `path` names — a `file_path` the model sent is replaced,
/// so a guard reads the file the tool acts on.
pub fn tool_input_for_hook(args: &Value, cwd: &Path) -> Value {
    let mut input = args.clone();
    if let Some(fields) = input.as_object_mut()
        && let Some(path) = fields.get("path").and_then(Value::as_str)
    {
        let absolute = resolve(cwd, path);
        fields.insert(
            "file_path".into(),
            Value::String(absolute.display().to_string()),
        );
    }
    input
}

/// The inputs a hook reads for one call of `tool`: one, as [`tool_input_for_hook`]; for
/// `batch_patch` (Claude Code's `MultiEdit`), one per file, in the order the call names
/// them — `{"file_path", "path", "edits": [{"old_string", "new_string", "replace_all"}]}` —
/// so a guard that reads `.tool_input.file_path` sees every file the call changes.
pub fn tool_inputs_for_hook(tool: &str, args: &Value, cwd: &Path) -> Vec<Value> {
    let patches = args.get("patches").and_then(Value::as_array);
    let (true, Some(patches)) = (tool == "batch_patch", patches) else {
        return vec![tool_input_for_hook(args, cwd)];
    };
    let mut files: Vec<(&str, Vec<Value>)> = Vec::new();
    for patch in patches {
        let path = patch.get("path").and_then(Value::as_str).unwrap_or("");
        let mut edit = patch.clone();
        if let Some(fields) = edit.as_object_mut() {
            fields.remove("path");
        }
        match files.iter_mut().find(|(seen, _)| *seen == path) {
            Some((_, edits)) => edits.push(edit),
            None => files.push((path, vec![edit])),
        }
    }
    files
        .into_iter()
        .map(|(path, edits)| tool_input_for_hook(&json!({"path": path, "edits": edits}), cwd))
        .collect()
}

/// `path` against `cwd`, with `.` and `..` taken out as the file tools take them out.
fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A hook's `updatedInput` as odek's arguments: `file_path` becomes `path` (and the copy
/// [`tool_input_for_hook`] added is dropped).
pub fn tool_input_from_hook(updated: &Value, original: &Value) -> Value {
    let mut args = updated.clone();
    if let Some(fields) = args.as_object_mut()
        && let Some(file_path) = fields.remove("file_path")
    {
        // A script that rewrote `path` itself keeps its `path`; one that rewrote (or passed
        // back) `file_path` names the file by it.
        let path_rewritten =
            fields.get("path").is_some() && fields.get("path") != original.get("path");
        if !path_rewritten {
            fields.insert("path".into(), file_path);
        }
    }
    args
}

/// What one hook, or all the hooks of one point, decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Decision {
    /// No opinion.
    #[default]
    None,
    /// `PreToolUse`: run the call without asking (never lifts `blocked`, a denial of the
    /// policy or the sandbox).
    Allow,
    /// `PreToolUse`: ask the user even where the policy would not.
    Ask(String),
    /// Block: the call is not run, the prompt not sent, the result refused, the stop
    /// refused — with the reason the model (or the user) reads.
    Block(String),
}

impl Decision {
    fn rank(&self) -> u8 {
        match self {
            Decision::None => 0,
            Decision::Allow => 1,
            Decision::Ask(_) => 2,
            Decision::Block(_) => 3,
        }
    }

    /// `allow`, `ask`, `deny` (or `block`) or `none`, for events and the audit.
    pub fn as_str(&self, event: HookEvent) -> &'static str {
        match self {
            Decision::None => "none",
            Decision::Allow => "allow",
            Decision::Ask(_) => "ask",
            Decision::Block(_) if event == HookEvent::PreToolUse => "deny",
            Decision::Block(_) => "block",
        }
    }
}

/// What the hooks of one point decided together: the strongest decision (block over ask
/// over allow), the last `updatedInput`, every `additionalContext`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The decision.
    pub decision: Decision,
    /// The call's arguments as a hook rewrote them (`PreToolUse`).
    pub updated_input: Option<Value>,
    /// Text for the model.
    pub context: Vec<String>,
}

impl Outcome {
    /// Adds one hook's outcome.
    pub fn merge(&mut self, other: Outcome) {
        if other.decision.rank() > self.decision.rank() {
            self.decision = other.decision;
        }
        if other.updated_input.is_some() {
            self.updated_input = other.updated_input;
        }
        self.context.extend(other.context);
    }
}

/// How a hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled,
    /// It ran past its timeout and was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// Why a hook failed (exited otherwise than 0 or 2, or said something unreadable): logged,
/// and for a `PreToolUse` guard that does not fail open, the reason its call is blocked.
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    /// It exited with another code than 0 or 2 (the last line of its standard error).
    #[error("exit {code}{stderr_tail}")]
    Exited {
        /// The code.
        code: i32,
        /// `: <its standard error's first line>`, or nothing.
        stderr_tail: String,
    },
    /// A signal ended it.
    #[error("ended by a signal")]
    Signalled,
    /// It ran past its timeout.
    #[error("past its timeout; it was killed")]
    TimedOut,
    /// It could not be started.
    #[error("could not start: {0}")]
    NotStarted(String),
    /// Its output began as JSON but is not.
    #[error("its output is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Its output is JSON but not an object.
    #[error("its output is not a JSON object")]
    NotObject,
}

impl crate::error::Classified for HookFailure {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some("run the hook by itself with `odek hooks test` to see what it does")
    }
}

/// What one hook's ending and output mean for `event`. `fail_open`: a `PreToolUse` hook
/// that failed lets the call through (Claude Code's behaviour) instead of blocking it.
pub fn read_result(
    event: HookEvent,
    ended: &Ended,
    stdout: &str,
    stderr: &str,
    fail_open: bool,
) -> Result<Outcome, HookFailure> {
    let failure = |why: HookFailure| -> Result<Outcome, HookFailure> {
        if event == HookEvent::PreToolUse && !fail_open {
            Ok(Outcome {
                decision: Decision::Block(format!(
                    "a PreToolUse hook failed ({why}), so the call was not run"
                )),
                ..Outcome::default()
            })
        } else {
            Err(why)
        }
    };
    match ended {
        Ended::Exited(0) => match read_stdout(event, stdout) {
            Ok(outcome) => Ok(outcome),
            Err(why) => failure(why),
        },
        Ended::Exited(2) => Ok(Outcome {
            decision: Decision::Block(reason_or(stderr, "blocked by a hook")),
            ..Outcome::default()
        }),
        Ended::Exited(code) => failure(HookFailure::Exited {
            code: *code,
            stderr_tail: tail(stderr),
        }),
        Ended::Signalled => failure(HookFailure::Signalled),
        Ended::TimedOut => failure(HookFailure::TimedOut),
        Ended::NotStarted(why) => failure(HookFailure::NotStarted(why.clone())),
    }
}

fn tail(stderr: &str) -> String {
    let text = stderr.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", crate::text::first_line(text, 200))
    }
}

fn reason_or(text: &str, fallback: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        fallback.to_string()
    } else {
        crate::text::truncate(text, 4000).into_owned()
    }
}

/// Standard output of a hook that exited 0: a JSON decision when it is an object; plain
/// text is context for `UserPromptSubmit` and `SessionStart` (Claude Code's rule), and
/// otherwise ignored.
fn read_stdout(event: HookEvent, stdout: &str) -> Result<Outcome, HookFailure> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        let context = match event {
            HookEvent::UserPromptSubmit | HookEvent::SessionStart if !text.is_empty() => {
                vec![crate::text::truncate(text, 10_000).into_owned()]
            }
            _ => Vec::new(),
        };
        return Ok(Outcome {
            context,
            ..Outcome::default()
        });
    }
    let value: Value = serde_json::from_str(text).map_err(HookFailure::NotJson)?;
    let Some(fields) = value.as_object() else {
        return Err(HookFailure::NotObject);
    };
    Ok(decision_of(event, fields))
}

fn decision_of(event: HookEvent, fields: &Map<String, Value>) -> Outcome {
    let text = |map: &Map<String, Value>, key: &str| {
        map.get(key).and_then(Value::as_str).map(str::to_string)
    };
    let specific = fields
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let reason = text(fields, "reason")
        .or_else(|| text(&specific, "permissionDecisionReason"))
        .or_else(|| text(fields, "stopReason"))
        .unwrap_or_else(|| "blocked by a hook".into());
    let mut decision = match text(&specific, "permissionDecision").as_deref() {
        Some("deny") => Decision::Block(reason.clone()),
        Some("ask") => Decision::Ask(reason.clone()),
        Some("allow") => Decision::Allow,
        _ => match text(fields, "decision").as_deref() {
            Some("block" | "deny") => Decision::Block(reason.clone()),
            Some("approve" | "allow") if event == HookEvent::PreToolUse => Decision::Allow,
            _ => Decision::None,
        },
    };
    if fields.get("continue") == Some(&Value::Bool(false)) {
        decision = Decision::Block(reason);
    }
    if event != HookEvent::PreToolUse && matches!(decision, Decision::Allow | Decision::Ask(_)) {
        decision = Decision::None;
    }
    let context = text(&specific, "additionalContext")
        .map(|c| vec![crate::text::truncate(&c, 10_000).into_owned()])
        .unwrap_or_default();
    let updated_input = specific
        .get("updatedInput")
        .filter(|v| v.is_object() && event == HookEvent::PreToolUse)
        .cloned();
    Outcome {
        decision,
        updated_input,
        context,
    }
}
