//! Background jobs: `shell` with `background: true` starts a command that outlives the call
//! — a dev server, a watcher, a long test suite — and answers at once with a job id. The
//! `background` tool lists the jobs, reads a job's output by offset and stops one (see
//! docs/BACKGROUND.md).
//!
//! - A job is `sh -c COMMAND` in its own process group, in the sandbox when there is one,
//!   its standard output and error in one ring buffer of `background.output_kb`.
//! - At most `background.max_jobs` run at once; each is stopped after
//!   `background.max_seconds`. Stopping sends SIGTERM to the group, then SIGKILL.
//! - When a job ends, the notice waits for the next model request ([`Jobs::take_notices`])
//!   and the listener hears of it at once ([`Jobs::listen`]).
//! - The jobs go with their table ([`Jobs`] dropped: the end of the session's run). A
//!   watchdog process, one per odek process, stops them too when odek itself is killed —
//!   and the group of a foreground `shell` command while it runs ([`Watched`]).

use std::collections::VecDeque;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolContext, ToolError, decode_args};
use crate::process_group::{kill_group, signal_group};
use crate::sandbox::Sandbox;

/// The tool's name.
pub const TOOL_NAME: &str = super::catalog::BACKGROUND.name;
/// Between SIGTERM and SIGKILL when a job is stopped.
const KILL_GRACE: Duration = Duration::from_millis(300);
/// Most bytes one `output` read returns.
const READ_MAX: usize = 8 * 1024;
/// A notice's tail: at most this many lines, of at most this many bytes in all.
const TAIL_LINES: usize = 8;
const TAIL_BYTES: usize = 800;

/// The limits of a session's jobs (the `background` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLimits {
    /// Bytes of output each job keeps (the last ones).
    pub output_bytes: usize,
    /// Jobs running at once.
    pub max_jobs: usize,
    /// A job's wall time before it is stopped.
    pub max_time: Duration,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnded {
    /// The job.
    pub id: u32,
    /// Its command line.
    pub command: String,
    /// `exited with status N`, `killed by signal N`, `stopped`, or `stopped after N s
    /// (background.max_seconds)`.
    pub status: String,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration: Duration,
    /// Its last lines (a few, short).
    pub tail: String,
}

/// Who hears at once that a job ended (the turn's observers).
pub type Listener = Arc<dyn Fn(&JobEnded) + Send + Sync>;

/// The last bytes of a job's output, addressed by their offset in the whole output.
struct Ring {
    bytes: VecDeque<u8>,
    cap: usize,
    total: u64,
}

impl Ring {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = &chunk[chunk.len().saturating_sub(self.cap)..];
        let over = (self.bytes.len() + chunk.len()).saturating_sub(self.cap);
        self.bytes.drain(..over);
        self.bytes.extend(chunk);
    }

    /// The offset of the oldest byte kept.
    fn start(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }

    /// Up to `max` bytes from `offset` (or from the oldest kept, when it was dropped):
    /// where they start, and the bytes.
    fn read(&self, offset: u64, max: usize) -> (u64, Vec<u8>) {
        let from = offset.clamp(self.start(), self.total);
        let skip = usize::try_from(from - self.start()).unwrap_or(usize::MAX);
        (
            from,
            self.bytes.iter().skip(skip).take(max).copied().collect(),
        )
    }

    /// As [`Ring::read`], with the range widened at either end to take in whole any secret
    /// of the kept bytes that it would cut (a read at an offset in the middle of a key would
    /// show each half unrecognised).
    fn read_whole_secrets(
        &self,
        offset: u64,
        max: usize,
        redactor: &crate::redact::Redactor,
    ) -> (u64, Vec<u8>) {
        let from = offset.clamp(self.start(), self.total);
        let mut range = from..from.saturating_add(max as u64).min(self.total);
        let kept: Vec<u8> = self.bytes.iter().copied().collect();
        for span in secret_byte_spans(&kept, redactor) {
            let span = span.start as u64 + self.start()..span.end as u64 + self.start();
            if span.start < range.start && range.start < span.end {
                range.start = span.start;
            }
            if span.start < range.end && range.end < span.end {
                range.end = span.end;
            }
        }
        let len = usize::try_from(range.end - range.start).unwrap_or(usize::MAX);
        let (start, bytes) = self.read(range.start, len);
        (start, bytes)
    }

    /// The last few lines.
    fn tail(&self) -> String {
        let (_, bytes) = self.read(self.total.saturating_sub(TAIL_BYTES as u64), TAIL_BYTES);
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    }
}

/// Where the redactor finds secrets in `bytes`, as byte ranges of `bytes` (text that is not
/// UTF-8 is read as the replacement character, which no secret holds).
fn secret_byte_spans(
    bytes: &[u8],
    redactor: &crate::redact::Redactor,
) -> Vec<std::ops::Range<usize>> {
    let mut text = String::with_capacity(bytes.len());
    // (offset in `text`, offset in `bytes`) where each valid run starts.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for chunk in bytes.utf8_chunks() {
        runs.push((text.len(), at));
        text.push_str(chunk.valid());
        at += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            text.push(char::REPLACEMENT_CHARACTER);
            at += chunk.invalid().len();
        }
    }
    let to_bytes = |offset: usize| {
        let run = runs
            .partition_point(|(t, _)| *t <= offset)
            .saturating_sub(1);
        runs.get(run)
            .map_or(offset, |(t, b)| b + (offset - t))
            .min(bytes.len())
    };
    redactor
        .secret_spans(&text)
        .into_iter()
        .map(|span| to_bytes(span.start)..to_bytes(span.end))
        .collect()
}

/// One background job.
pub struct Job {
    /// Its number in the session (1, 2, …).
    pub id: u32,
    /// Its command line.
    pub command: String,
    started: Instant,
    pgid: Option<i32>,
    output: Mutex<Ring>,
    /// Where the model's last read stopped.
    read_to: Mutex<u64>,
    ended: Mutex<Option<JobEnded>>,
    stop: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Job {
    /// How it ended; `None` while it runs.
    pub fn ended(&self) -> Option<JobEnded> {
        lock(&self.ended).clone()
    }

    /// One line: id, state, time, command.
    pub fn line(&self) -> String {
        let state = match self.ended() {
            Some(e) => format!("{} after {}", e.status, seconds(e.duration)),
            None => format!("running for {}", seconds(self.started.elapsed())),
        };
        format!(
            "job {} · {state} · {}",
            self.id,
            crate::text::first_line(&self.command, 100)
        )
    }

    /// How long it has run.
    pub fn running_for(&self) -> Duration {
        self.started.elapsed()
    }

    /// The last few lines of its output.
    pub fn tail(&self) -> String {
        lock(&self.output).tail()
    }
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs())
}

/// The background jobs of one session (or of one turn without a session). Dropping the
/// table stops every job still running.
pub struct Jobs {
    limits: JobLimits,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u32,
    jobs: Vec<Arc<Job>>,
    notices: Vec<JobEnded>,
    listener: Option<Listener>,
}

impl Jobs {
    /// An empty table with these limits.
    pub fn new(limits: JobLimits) -> Self {
        Jobs {
            limits,
            table: Mutex::default(),
        }
    }

    /// The limits.
    pub fn limits(&self) -> JobLimits {
        self.limits
    }

    /// Every job of the table, running or ended, oldest first.
    pub fn list(&self) -> Vec<Arc<Job>> {
        lock(&self.table).jobs.clone()
    }

    /// The job `id`.
    pub fn get(&self, id: u32) -> Option<Arc<Job>> {
        lock(&self.table).jobs.iter().find(|j| j.id == id).cloned()
    }

    /// The jobs that ended since the last call, for the next model request.
    pub fn take_notices(&self) -> Vec<JobEnded> {
        std::mem::take(&mut lock(&self.table).notices)
    }

    /// Who hears at once when a job ends (replaces the one before).
    pub fn listen(&self, listener: Listener) {
        lock(&self.table).listener = Some(listener);
    }

    /// Starts `command` as a job in `cwd` (in `sandbox` when given).
    pub fn start(
        self: &Arc<Self>,
        command: &str,
        cwd: &Path,
        sandbox: Option<&Sandbox>,
    ) -> Result<Arc<Job>, ToolError> {
        let mut table = lock(&self.table);
        let running = table.jobs.iter().filter(|j| j.ended().is_none()).count();
        if running >= self.limits.max_jobs {
            return Err(ToolError(format!(
                "shell: {running} background jobs are running, the most at once (background.max_jobs); stop one with the background tool (action \"stop\") or wait for one to end"
            )));
        }
        let (reader, writer) = std::io::pipe()
            .map_err(|e| ToolError(format!("shell: could not start a background job: {e}")))?;
        let mut child = super::command::spawn(command, cwd, sandbox, |cmd| {
            let copy = writer.try_clone()?;
            cmd.stdout(Stdio::from(copy)).stderr(Stdio::from(writer));
            Ok(())
        })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        if let Some(pgid) = pgid {
            watchdog::guard(pgid);
        }
        table.next_id += 1;
        let job = Arc::new(Job {
            id: table.next_id,
            command: command.to_string(),
            started: Instant::now(),
            pgid,
            output: Mutex::new(Ring {
                bytes: VecDeque::new(),
                cap: self.limits.output_bytes.max(1),
                total: 0,
            }),
            read_to: Mutex::new(0),
            ended: Mutex::new(None),
            stop: CancellationToken::new(),
        });
        table.jobs.push(job.clone());
        drop(table);
        let reading = job.clone();
        let reader_thread = std::thread::spawn(move || read_into(reader, &reading));
        let watched = job.clone();
        let jobs = Arc::downgrade(self);
        let max_time = self.limits.max_time;
        tokio::spawn(async move {
            let ended = watch(&watched, &mut child, max_time, reader_thread).await;
            *lock(&watched.ended) = Some(ended.clone());
            if let Some(jobs) = jobs.upgrade() {
                jobs.finished(ended);
            }
        });
        Ok(job)
    }

    /// Asks job `id` to stop and waits (a little) until it has; false when it was not
    /// running.
    pub async fn stop(&self, id: u32) -> Option<bool> {
        let job = self.get(id)?;
        if job.ended().is_some() {
            return Some(false);
        }
        job.stop.cancel();
        for _ in 0..40 {
            if job.ended().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Some(true)
    }

    fn finished(&self, ended: JobEnded) {
        let listener = {
            let mut table = lock(&self.table);
            table.notices.push(ended.clone());
            table.listener.clone()
        };
        if let Some(listener) = listener {
            listener(&ended);
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        let table = self.table.get_mut().unwrap_or_else(PoisonError::into_inner);
        let running: Vec<i32> = table
            .jobs
            .iter()
            .filter(|j| j.ended().is_none())
            .inspect(|j| j.stop.cancel())
            .filter_map(|j| j.pgid)
            .collect();
        if running.is_empty() {
            return;
        }
        running
            .iter()
            .for_each(|pgid| signal_group(*pgid, libc::SIGTERM));
        std::thread::sleep(KILL_GRACE);
        for pgid in running {
            kill_group(pgid);
            watchdog::release(pgid);
        }
    }
}

/// Copies the job's output into its ring until every writer has closed it.
fn read_into(mut reader: std::io::PipeReader, job: &Job) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lock(&job.output).push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Waits for the job to end, to be stopped or to run out of time; then stops what its
/// command left in its group.
async fn watch(
    job: &Job,
    child: &mut tokio::process::Child,
    max_time: Duration,
    reader: std::thread::JoinHandle<()>,
) -> JobEnded {
    use std::os::unix::process::ExitStatusExt;
    let why = tokio::select! {
        status = child.wait() => Ok(status),
        () = job.stop.cancelled() => Err("stopped".to_string()),
        () = tokio::time::sleep(max_time) => Err(format!(
            "stopped after {} (background.max_seconds)",
            seconds(max_time)
        )),
    };
    if why.is_err()
        && let Some(pgid) = job.pgid
    {
        signal_group(pgid, libc::SIGTERM);
        if tokio::time::timeout(KILL_GRACE, child.wait())
            .await
            .is_err()
        {
            kill_group(pgid);
        }
    }
    if let Some(pgid) = job.pgid {
        kill_group(pgid);
        watchdog::release(pgid);
    }
    let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    let (status, exit_code) = match why {
        Err(why) => (why, None),
        Ok(Ok(status)) => match (status.code(), status.signal()) {
            (Some(code), _) => (format!("exited with status {code}"), Some(code)),
            (None, Some(signal)) => (format!("killed by signal {signal}"), None),
            (None, None) => ("ended".to_string(), None),
        },
        Ok(Err(e)) => (format!("lost ({e})"), None),
    };
    JobEnded {
        id: job.id,
        command: job.command.clone(),
        status,
        exit_code,
        duration: job.started.elapsed(),
        tail: job.tail(),
    }
}

/// The notice the model reads in its next request when a job ended.
pub fn notice(ended: &JobEnded) -> String {
    format!(
        "[background] Job {} (`{}`) {} after {}. Read all of its output with the background tool (action \"output\", id {}).",
        ended.id,
        crate::text::first_line(&ended.command, 100),
        ended.status,
        seconds(ended.duration),
        ended.id
    )
}

/// The `background` tool: list the jobs, read one's output, stop one.
pub struct BackgroundTool {
    jobs: Arc<Jobs>,
}

impl BackgroundTool {
    /// The tool over `jobs`.
    pub fn new(jobs: Arc<Jobs>) -> Self {
        BackgroundTool { jobs }
    }
}

#[derive(Deserialize)]
struct Args {
    action: String,
    #[serde(default)]
    id: Option<u32>,
    #[serde(default)]
    offset: Option<u64>,
}

#[async_trait]
impl Tool for BackgroundTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        "Jobs of shell with background: true. list: each job, its state. output: a job's stdout+stderr from offset (default: where your last read stopped). stop: SIGTERM, then SIGKILL."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "action":{"type":"string","enum":["list","output","stop"]},
                "id":{"type":"integer"},
                "offset":{"type":"integer","minimum":0}
              },
              "required":["action"]
            }"#,
        )
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        if args.get("action").and_then(Value::as_str) != Some("output") {
            return None;
        }
        let id = args.get("id").and_then(Value::as_u64)?;
        let job = self.jobs.get(u32::try_from(id).ok()?)?;
        Some(format!(
            "$ {} (job {id})",
            crate::text::first_line(&job.command, 200)
        ))
    }

    fn summary(&self, args: &Value) -> String {
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        match args.get("id").and_then(Value::as_u64) {
            Some(id) => format!("{action} job {id}"),
            None => action.to_string(),
        }
    }

    fn output_limit(&self, _args: &Value) -> usize {
        READ_MAX + 512
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let job = |id: Option<u32>| {
            let id = id.ok_or_else(|| {
                ToolError(format!("background: {} needs the job's id", args.action))
            })?;
            self.jobs.get(id).ok_or_else(|| {
                ToolError(format!(
                    "background: there is no job {id} (the list action shows them)"
                ))
            })
        };
        match args.action.as_str() {
            "list" => Ok(self.list()),
            "output" => Ok(output(&*job(args.id)?, args.offset, &ctx.redactor)),
            "stop" => {
                let job = job(args.id)?;
                match self.jobs.stop(job.id).await {
                    Some(true) => Ok(format!("Stopped. {}", job.line())),
                    _ => Ok(format!("Not running. {}", job.line())),
                }
            }
            other => Err(ToolError(format!(
                "background: unknown action {other:?} (list, output or stop)"
            ))),
        }
    }
}

impl BackgroundTool {
    fn list(&self) -> String {
        let jobs = self.jobs.list();
        if jobs.is_empty() {
            return "No background jobs (start one with shell and background: true).".into();
        }
        jobs.iter().map(|j| j.line()).collect::<Vec<_>>().join("\n")
    }
}

/// A read of `job`'s output from `offset` (default: where the last read stopped), widened so
/// that no secret the redactor finds in the whole kept output is cut in two by its ends.
fn output(job: &Job, offset: Option<u64>, redactor: &crate::redact::Redactor) -> String {
    let asked = offset.unwrap_or_else(|| *lock(&job.read_to));
    let (total, (from, bytes)) = {
        let ring = lock(&job.output);
        (
            ring.total,
            ring.read_whole_secrets(asked, READ_MAX, redactor),
        )
    };
    let next = from + bytes.len() as u64;
    *lock(&job.read_to) = next;
    let mut out = job.line();
    if from > asked {
        out.push_str(&format!(
            "\n(bytes {asked}–{from} are no longer kept: the buffer holds the last {} KiB)",
            job_cap_kib(job)
        ));
    }
    out.push_str(&format!("\nbytes {from}–{next} of {total}"));
    if next < total {
        out.push_str(&format!(" (more: offset {next})"));
    }
    out.push('\n');
    match bytes.is_empty() {
        true => out.push_str("(no new output)"),
        false => out.push_str(&String::from_utf8_lossy(&bytes)),
    }
    out
}

fn job_cap_kib(job: &Job) -> usize {
    lock(&job.output).cap / 1024
}

/// Tells the watchdog of a foreground command's process group while it lives, so that the
/// group is stopped too if odek is killed outright (also a sub-agent's group where the
/// kernel has no parent-death signal: `subagent::tool`).
pub struct Watched(Option<i32>);

impl Watched {
    /// Watches `pgid` (none: nothing to watch).
    pub fn new(pgid: Option<i32>) -> Self {
        if let Some(pgid) = pgid {
            watchdog::guard(pgid);
        }
        Watched(pgid)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            watchdog::release(pgid);
        }
    }
}

/// One `sh` per odek process that stops the jobs' process groups when odek ends without
/// stopping them itself (kill -9): it reads `+ PGID` and `- PGID` lines and, when its input
/// closes — odek is gone —, stops the groups left.
mod watchdog {
    use std::io::Write;
    use std::process::{ChildStdin, Command, Stdio};
    use std::sync::{Mutex, PoisonError};

    use std::os::unix::process::CommandExt;

    const SCRIPT: &str = r#"trap '' INT TERM HUP
groups=' '
while read -r op pg; do
  case $op in
    +) groups="$groups$pg " ;;
    -) kept=' '; for g in $groups; do [ "$g" = "$pg" ] || kept="$kept$g "; done; groups=$kept ;;
  esac
done
[ "$groups" = ' ' ] && exit 0
for g in $groups; do kill -s TERM -- "-$g" 2>/dev/null; done
sleep 0.3
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
"#;

    static INPUT: Mutex<Option<ChildStdin>> = Mutex::new(None);

    fn tell(line: &str) {
        let mut input = INPUT.lock().unwrap_or_else(PoisonError::into_inner);
        if input.is_none()
            && let Some(sh) =
                crate::process_group::trusted_program(crate::process_group::TrustedProgram::Sh)
        {
            *input = Command::new(sh)
                .arg("-c")
                .arg(SCRIPT)
                .env("PATH", "/usr/bin:/bin")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .ok()
                .and_then(|mut child| child.stdin.take());
        }
        if let Some(pipe) = input.as_mut()
            && pipe.write_all(line.as_bytes()).is_err()
        {
            *input = None;
        }
    }

    /// The watchdog stops `pgid` if odek dies.
    pub fn guard(pgid: i32) {
        tell(&format!("+ {pgid}\n"));
    }

    /// `pgid` ended: the watchdog forgets it.
    pub fn release(pgid: i32) {
        tell(&format!("- {pgid}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_widened_to_take_in_a_secret_its_ends_would_cut() {
        let mut ring = Ring {
            bytes: VecDeque::new(),
            cap: 1024,
            total: 0,
        };
        let token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
        ring.push(b"\xffkey: ");
        ring.push(format!("{token}\nend\n").as_bytes());
        let redactor = crate::redact::Redactor::new();
        // From the middle of the token, and ending in its middle: both ends move out.
        let (from, bytes) = ring.read_whole_secrets(20, 10, &redactor);
        assert_eq!(from, 6);
        assert_eq!(bytes, token.as_bytes());
        // A range that cuts no secret is left as asked.
        assert_eq!(
            ring.read_whole_secrets(47, 3, &redactor),
            (47, b"end".to_vec())
        );
    }

    #[test]
    fn the_ring_keeps_the_last_bytes_by_offset() {
        let mut ring = Ring {
            bytes: VecDeque::new(),
            cap: 8,
            total: 0,
        };
        ring.push(b"hello ");
        ring.push(b"world\n");
        assert_eq!((ring.start(), ring.total), (4, 12));
        assert_eq!(ring.read(0, 100), (4, b"o world\n".to_vec()));
        assert_eq!(ring.read(10, 1), (10, b"d".to_vec()));
        assert_eq!(ring.read(99, 10), (12, Vec::new()));
        ring.push(&[b'x'; 20]);
        assert_eq!(ring.read(0, 100), (24, vec![b'x'; 8]));
        assert_eq!(ring.tail(), "xxxxxxxx");
    }
}
