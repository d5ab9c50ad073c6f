//! Running hooks: each in its own process group, with the session's environment minus the
//! API keys, its input on standard input, killed with its group at its timeout.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::protocol::{Ended, Outcome, hook_tool_name, read_result};
use super::{Hook, HookEvent};
use crate::process_group::GroupGuard;

/// Most bytes of a hook's standard output and standard error kept.
const MAX_OUTPUT: usize = 1024 * 1024;

/// One hook that ran: what the event stream and the audit show (never its output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookReport {
    /// The event.
    pub event: HookEvent,
    /// The command line.
    pub command: String,
    /// `allow`, `ask`, `deny`, `block`, `none`, or `error` (a failure that let things go on).
    pub decision: String,
    /// How long it ran.
    pub duration_ms: u64,
}

/// The hooks of a session and what they are told about it.
#[derive(Debug, Clone)]
pub struct HookRun {
    hooks: Arc<Vec<Hook>>,
    /// A failed `PreToolUse` hook lets the call through.
    pub fail_open: bool,
    /// The session's id (empty before it has one).
    pub session_id: String,
    /// Its transcript file.
    pub transcript_path: Option<PathBuf>,
    /// The working directory hooks run in.
    pub cwd: PathBuf,
    /// The shell's sandbox: a project's hooks run in it, as its shell commands do (the
    /// global hooks, the user's own, run outside it). `None`: no sandbox.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

impl HookRun {
    /// `hooks` run for a session in `cwd`.
    pub fn new(hooks: Vec<Hook>, fail_open: bool, cwd: PathBuf) -> Self {
        HookRun {
            hooks: Arc::new(hooks),
            fail_open,
            session_id: String::new(),
            transcript_path: None,
            cwd,
            sandbox: None,
        }
    }

    /// Whether any hook runs at `event` (for `tool`).
    pub fn wants(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.hooks
            .iter()
            .any(|h| h.event == event && h.matches(tool))
    }

    /// Every hook (for `odek hooks list`).
    pub fn hooks(&self) -> &[Hook] {
        &self.hooks
    }

    /// Runs the hooks of `event` that match `tool` (odek's name), one
    /// after another, with `fields` added to the common input; their decision together,
    /// and a report of each.
    pub async fn fire(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        fields: Map<String, Value>,
    ) -> (Outcome, Vec<HookReport>) {
        let mut outcome = Outcome::default();
        let mut reports = Vec::new();
        let matching = self
            .hooks
            .iter()
            .filter(|h| h.event == event && h.matches(tool));
        let mut input = self.common_input(event, tool);
        input.extend(fields);
        let input = Value::Object(input).to_string();
        for hook in matching {
            let started = Instant::now();
            let sandbox = self.sandbox.as_deref().filter(|_| hook.source.is_some());
            let (ended, stdout, stderr) = run_one(hook, &self.cwd, &input, sandbox).await;
            let result = read_result(event, &ended, &stdout, &stderr, self.fail_open);
            let decision = match &result {
                Ok(one) => one.decision.as_str(event).to_string(),
                Err(why) => {
                    tracing::warn!("hook {event:?} `{}` failed: {why}", hook.command);
                    "error".to_string()
                }
            };
            reports.push(HookReport {
                event,
                command: hook.command.clone(),
                decision,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
            if let Ok(one) = result {
                let blocked = matches!(one.decision, super::Decision::Block(_));
                outcome.merge(one);
                if blocked {
                    break; // a block is final: the hooks after it would not change it
                }
            }
        }
        (outcome, reports)
    }

    fn common_input(&self, event: HookEvent, tool: Option<&str>) -> Map<String, Value> {
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session_id));
        input.insert(
            "transcript_path".into(),
            json!(
                self.transcript_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        );
        input.insert("cwd".into(), json!(self.cwd.display().to_string()));
        input.insert("hook_event_name".into(), json!(event.as_str()));
        if let Some(name) = tool {
            input.insert("tool_name".into(), json!(hook_tool_name(name)));
            input.insert("odek_tool_name".into(), json!(name));
        }
        input
    }
}

/// Runs one hook with `input` on its standard input, in `sandbox` when given.
async fn run_one(
    hook: &Hook,
    cwd: &std::path::Path,
    input: &str,
    sandbox: Option<&crate::sandbox::Sandbox>,
) -> (Ended, String, String) {
    let Some(sh) = crate::process_group::trusted_program(crate::process_group::TrustedProgram::Sh)
    else {
        let why = "no sh was found on PATH outside the places shell commands may write";
        return (Ended::NotStarted(why.into()), String::new(), String::new());
    };
    let mut cmd = match crate::sandbox::command(&sh, sandbox) {
        Ok(cmd) => cmd,
        Err(e) => {
            let why = format!("the sandbox could not be prepared: {e}");
            return (Ended::NotStarted(why), String::new(), String::new());
        }
    };
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::process_group::hide_keys(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return (
                Ended::NotStarted(e.to_string()),
                String::new(),
                String::new(),
            );
        }
    };
    let mut guard = GroupGuard::new(child.id().and_then(|id| i32::try_from(id).ok()));
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.as_bytes().to_vec();
        tokio::spawn(async move {
            // A hook that does not read its input gets a broken pipe: not an error.
            let _ = stdin.write_all(&input).await;
        });
    }
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));
    let ended = match tokio::time::timeout(hook.timeout, child.wait()).await {
        Ok(Ok(status)) => match status.code() {
            Some(code) => Ended::Exited(code),
            None => Ended::Signalled,
        },
        Ok(Err(e)) => Ended::NotStarted(e.to_string()),
        Err(_) => Ended::TimedOut,
    };
    // The group goes with the hook: nothing it started outlives it.
    guard.kill_now();
    let grace = Duration::from_millis(500);
    let out = tokio::time::timeout(grace, stdout)
        .await
        .ok()
        .and_then(Result::ok);
    let err = tokio::time::timeout(grace, stderr)
        .await
        .ok()
        .and_then(Result::ok);
    (ended, out.unwrap_or_default(), err.unwrap_or_default())
}

async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>) -> String {
    let Some(pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let _ = pipe.take(MAX_OUTPUT as u64).read_to_end(&mut kept).await;
    String::from_utf8_lossy(&kept).into_owned()
}
