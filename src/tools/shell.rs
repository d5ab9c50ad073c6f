//! `shell`: runs `sh -c COMMAND` in its own process group, killed as a whole on cancel,
//! timeout or when the call is dropped. The exit code is always reported.

use std::process::Stdio;
use std::sync::PoisonError;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use std::sync::Arc;

use super::background::Jobs;
use super::danger::{Classification, classify_command, command_argv0};
use super::{Tool, ToolContext, ToolError, decode_args};
use crate::checkpoint::ShellCheckpoint;
use crate::danger_policy::DangerClass;
use crate::process_group::{GroupGuard, signal_group};
use crate::sandbox::Sandbox;

const DEFAULT_TIMEOUT_SECS: u64 = 1800;
const MAX_STREAM_BYTES: usize = 1024 * 1024;
/// After `sh` exits, how long background children may keep its pipes open.
const PIPE_GRACE: Duration = Duration::from_secs(2);
/// Between SIGTERM and SIGKILL when stopping a process group.
const KILL_GRACE: Duration = Duration::from_millis(300);
/// Runs shell commands, in the sandbox when there is one.
pub struct ShellTool {
    sandbox: Option<Arc<Sandbox>>,
    /// Where `background: true` starts its jobs (none: no background jobs).
    jobs: Option<Arc<Jobs>>,
}

impl ShellTool {
    /// The shell tool; `sandbox` confines every command it runs, `jobs` takes the
    /// background ones.
    pub fn new(sandbox: Option<Arc<Sandbox>>, jobs: Option<Arc<Jobs>>) -> Self {
        ShellTool { sandbox, jobs }
    }
}

#[derive(Deserialize)]
struct Args {
    command: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    background: bool,
}

#[async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command with `sh -c` in the working directory and return stdout, stderr and the exit code. stdin is empty; each of stdout and stderr is capped at 1 MiB. Commands are classified by risk and may need approval. Prefer read_file/search_files/patch for reading, finding and editing files."
    }

    fn parameters(&self) -> Value {
        let mut schema = super::schema(
            r#"{
              "type":"object",
              "properties":{
                "command":{"type":"string","description":"The command line, run by sh -c."},
                "description":{"type":"string","description":"Why you run it, in a few words (shown when approval is asked)."},
                "timeout":{"type":"integer","minimum":1,"description":"Seconds before the command is killed (default 1800)."}
              },
              "required":["command"]
            }"#,
        );
        if self.jobs.is_some() {
            schema["properties"]["background"] = json!({"type": "boolean", "description": "Run it as a background job (a server, a watcher): answers at once with its id; see the background tool."});
        }
        schema
    }

    fn classify(&self, args: &Value, _ctx: &ToolContext) -> Option<Classification> {
        Some(classify_command(command_of(args)))
    }

    fn command(&self, args: &Value) -> Option<String> {
        Some(command_of(args).to_string())
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!(
            "$ {}",
            crate::text::first_line(command_of(args), 200)
        ))
    }

    fn summary(&self, args: &Value) -> String {
        crate::text::first_line(command_of(args), 100)
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"argv0": command_argv0(command_of(args))}))
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError("shell: command is empty".into()));
        }
        if args.background {
            return self.start_job(&args.command, ctx);
        }
        let timeout = Duration::from_secs(args.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1));
        let checkpoint = checkpoint_before(&args.command, ctx).await;
        let result = run(&args.command, ctx, timeout, self.sandbox.as_deref()).await;
        checkpoint_after(checkpoint, ctx).await;
        match (&self.sandbox, result) {
            (Some(sandbox), Err(ToolError(text))) if looks_denied(&text) => {
                Err(ToolError(format!("{text}\n{}", sandbox.denial_note())))
            }
            (_, result) => result,
        }
    }
}

impl ShellTool {
    /// `background: true`: the command starts as a job and the call answers at once.
    fn start_job(&self, command: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(jobs) = &self.jobs else {
            return Err(ToolError(
                "shell: background jobs are off here (background.max_jobs is 0, or this is a sub-agent)".into(),
            ));
        };
        let job = jobs.start(command, &ctx.cwd, self.sandbox.as_deref())?;
        Ok(format!(
            "Started background job {id}: {command}\nIt runs until it ends or is stopped (at most {max} s). Read its output with the background tool (action \"output\", id {id}); stop it with action \"stop\". You will be told when it ends.",
            id = job.id,
            command = crate::text::first_line(command, 200),
            max = jobs.limits().max_time.as_secs(),
        ))
    }
}

/// Before a command that may change files (not `safe`), when the session takes
/// checkpoints: a snapshot of the git work tree it runs in (see docs/UNDO.md).
async fn checkpoint_before(command: &str, ctx: &ToolContext) -> Option<ShellCheckpoint> {
    let checkpoints = ctx.checkpoints.clone()?;
    if classify_command(command).class == DangerClass::Safe {
        return None;
    }
    let cwd = ctx.cwd.clone();
    tokio::task::spawn_blocking(move || checkpoints.before_shell(&cwd))
        .await
        .ok()
}

/// After the command: what it changed is recorded (a failure is logged; the command's own
/// result stands).
async fn checkpoint_after(checkpoint: Option<ShellCheckpoint>, ctx: &ToolContext) {
    let Some(checkpoint) = checkpoint else {
        return;
    };
    match tokio::task::spawn_blocking(move || checkpoint.finish()).await {
        Ok(Ok(Some(taken))) => ctx.report(super::ToolReport::Checkpoint(taken)),
        Ok(Err(e)) => tracing::warn!("shell: the checkpoint could not be recorded: {e}"),
        Ok(Ok(None)) | Err(_) => {}
    }
}

/// What a command prints when the kernel refused it a file or a connection.
fn looks_denied(output: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ]
    .iter()
    .any(|message| output.contains(message))
}

fn command_of(args: &Value) -> &str {
    args.get("command").and_then(Value::as_str).unwrap_or("")
}

enum Ending {
    Exited(std::process::ExitStatus),
    Cancelled,
    TimedOut,
}

async fn run(
    command: &str,
    ctx: &ToolContext,
    timeout: Duration,
    sandbox: Option<&Sandbox>,
) -> Result<String, ToolError> {
    let mut child = super::command::spawn(command, &ctx.cwd, sandbox, |cmd| {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Ok(())
    })?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let mut guard = GroupGuard::new(pgid);
    // Should odek be killed outright, the watchdog stops the group.
    let _watched = super::background::Watched::new(pgid);
    let (out, err) = (Captured::default(), Captured::default());
    let stdout = tokio::spawn(read_capped(child.stdout.take(), out.clone()));
    let stderr = tokio::spawn(read_capped(child.stderr.take(), err.clone()));

    let ending = tokio::select! {
        status = child.wait() => match status {
            Ok(s) => Ending::Exited(s),
            Err(e) => return Err(ToolError(format!("shell: waiting for the command failed: {e}"))),
        },
        _ = ctx.cancel.cancelled() => Ending::Cancelled,
        _ = tokio::time::sleep(timeout) => Ending::TimedOut,
    };
    if !matches!(ending, Ending::Exited(_))
        && let Some(pgid) = pgid
    {
        signal_group(pgid, libc::SIGTERM);
        let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
    }
    // The command ended with its process. What it started in the background may hold the
    // pipes open (even from a group or session of its own): read what comes within a short
    // bound, then stop the group and keep what was read.
    let (out, err) = collect(stdout, stderr, (out, err), &mut guard).await;
    guard.kill_now();
    let body = combine(&out, &err);
    match ending {
        Ending::Exited(status) => report_exit(body, status),
        Ending::Cancelled => Err(ToolError(format!(
            "shell: cancelled; the command was stopped\n{body}"
        ))),
        Ending::TimedOut => Err(ToolError(format!(
            "shell: command timed out after {}s and was killed: {}\n{body}",
            timeout.as_secs(),
            crate::text::first_line(command, 200)
        ))),
    }
}

/// What a reader has kept of one pipe so far, and whether it dropped any.
type Captured = std::sync::Arc<std::sync::Mutex<(Vec<u8>, bool)>>;

/// Waits up to [`PIPE_GRACE`] for both readers together; past it, stops the group, drops the
/// readers and keeps what they read, with a note that the output is incomplete.
async fn collect(
    stdout: tokio::task::JoinHandle<()>,
    stderr: tokio::task::JoinHandle<()>,
    (out, err): (Captured, Captured),
    guard: &mut GroupGuard,
) -> ((Vec<u8>, bool), (Vec<u8>, bool)) {
    let aborts = [stdout.abort_handle(), stderr.abort_handle()];
    let both = async {
        let _ = stdout.await;
        let _ = stderr.await;
    };
    let complete = tokio::time::timeout(PIPE_GRACE, both).await.is_ok();
    if !complete {
        guard.kill_now();
        aborts.iter().for_each(tokio::task::AbortHandle::abort);
    }
    let take =
        |c: &Captured| std::mem::take(&mut *c.lock().unwrap_or_else(PoisonError::into_inner));
    let mut out = take(&out);
    if !complete {
        out.0.extend_from_slice(
            b"\n[output incomplete: background processes kept the output open and were stopped]",
        );
    }
    (out, take(&err))
}

/// Reads a pipe to the end into `kept`, keeping at most [`MAX_STREAM_BYTES`] (the rest is
/// drained so the child never blocks on a full pipe) and noting whether anything was dropped.
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>, kept: Captured) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                let room = MAX_STREAM_BYTES.saturating_sub(kept.0.len());
                kept.0.extend_from_slice(&buf[..n.min(room)]);
                kept.1 |= n > room;
            }
        }
    }
}

fn combine(out: &(Vec<u8>, bool), err: &(Vec<u8>, bool)) -> String {
    let mut body = String::new();
    let text = |(bytes, truncated): &(Vec<u8>, bool)| {
        let mut s = String::from_utf8_lossy(bytes).into_owned();
        if *truncated {
            s.push_str("\n... [output truncated]");
        }
        s
    };
    let stdout = text(out);
    let stderr = text(err);
    body.push_str(stdout.trim_end_matches('\n'));
    if !stderr.trim().is_empty() {
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(stderr.trim_end_matches('\n'));
    }
    if body.is_empty() {
        body.push_str("(no output)");
    }
    body
}

fn report_exit(body: String, status: std::process::ExitStatus) -> Result<String, ToolError> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(format!("{body}\n[exit code: 0]")),
        (Some(code), _) => Err(ToolError(format!("{body}\n[exit code: {code}]"))),
        (None, Some(sig)) => Err(ToolError(format!("{body}\n[killed by signal {sig}]"))),
        (None, None) => Err(ToolError(format!("{body}\n[exit status unknown]"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ToolContext {
        ToolContext::in_dir(&std::env::temp_dir())
    }

    #[tokio::test]
    async fn success_and_failure_report_exit_code() {
        let ok = run("echo hi", &ctx(), Duration::from_secs(10), None)
            .await
            .expect("ok");
        assert_eq!(ok, "hi\n[exit code: 0]");
        let err = run(
            "echo oops >&2; exit 3",
            &ctx(),
            Duration::from_secs(10),
            None,
        )
        .await
        .expect_err("fails");
        assert_eq!(err.0, "[stderr]\noops\n[exit code: 3]");
        let empty = run("true", &ctx(), Duration::from_secs(10), None)
            .await
            .expect("ok");
        assert_eq!(empty, "(no output)\n[exit code: 0]");
    }

    /// True while `pid` is a live process (not gone, not a zombie waiting to be reaped), as
    /// `ps` shows it on Linux and macOS alike (no `/proc` there).
    fn alive(pid: i32) -> bool {
        let shown = std::process::Command::new("ps")
            .args(["-o", "stat=", "-p", &pid.to_string()])
            .output()
            .expect("ps runs");
        let state = String::from_utf8_lossy(&shown.stdout);
        let state = state.trim();
        !state.is_empty() && !state.starts_with(['Z', 'X'])
    }

    #[tokio::test]
    async fn timeout_kills_the_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = ToolContext::in_dir(dir.path());
        // A background grandchild in the same group, and the shell waiting for it.
        let err = run(
            "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait",
            &c,
            Duration::from_millis(300),
            None,
        )
        .await
        .expect_err("timeout");
        assert!(err.0.contains("timed out after 0s"), "{}", err.0);
        for file in ["shell.pid", "child.pid"] {
            let pid: i32 = std::fs::read_to_string(dir.path().join(file))
                .expect("pid written")
                .trim()
                .parse()
                .expect("a pid");
            let mut gone = false;
            for _ in 0..100 {
                if !alive(pid) {
                    gone = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(gone, "{file}: process {pid} still runs after the timeout");
        }
    }

    #[tokio::test]
    async fn cancel_stops_the_command() {
        let c = ctx();
        let cancel = c.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        let err = run("sleep 30", &c, Duration::from_secs(60), None)
            .await
            .expect_err("cancelled");
        assert!(err.0.starts_with("shell: cancelled"), "{}", err.0);
    }

    #[tokio::test]
    async fn output_is_capped() {
        let out = run(
            "head -c 2000000 /dev/zero | tr '\\0' a",
            &ctx(),
            Duration::from_secs(10),
            None,
        )
        .await
        .expect("ok");
        assert!(out.len() < MAX_STREAM_BYTES + 100);
        assert!(out.contains("[output truncated]"));
    }
}
