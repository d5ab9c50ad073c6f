//! `delegate_tasks`: the parent's side. Each task runs as `odek subagent --task FILE` in a
//! process group of its own, at most `subagents.max_concurrency` at once; the API key goes
//! over a pipe on descriptor 3; every child is killed with its group when the call is
//! cancelled, times out, or is dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::agent::{AgentUseError, DelegateAgents};
use super::ask::{AnswerLine, Ask, Request, RequestLine, approval_word, question_answer_line};
use super::budget::CostPool;
use super::{Envelope, EnvelopeStatus, KEY_FD_VAR, TaskFile, Trust};
use crate::danger_policy::DangerClass;
use crate::process_group::GroupGuard;
use crate::tools::approval::{ApprovalAnswer, Approver, Question, QuestionAnswer};
use crate::tools::danger::Classification;
use crate::tools::{Tool, ToolContext, ToolError, ToolReport, decode_args};

/// What the model reads of the tool when there are no named agents to list.
const DESCRIPTION: &str = "Run 1-8 independent tasks in parallel sub-agents with fresh contexts; returns each result in order. Sub-agents see no history or plan: put the plan step's id, title and constraints in context. untrusted (default): read and edit in the working directory only.";

/// Most tasks of one call.
pub const MAX_TASKS: usize = 8;
/// Largest part of the result one child may take.
pub const MAX_RESULT_BYTES: usize = 100 * 1024;
/// How long past its own limit a child may take to write its envelope before it is stopped.
const KILL_GRACE: Duration = Duration::from_secs(15);
/// How long a child asked to stop (SIGTERM) has to end its turn before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(5);
/// Longest stdout line read from a child (an event line or the envelope).
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The limits of the children (the `subagents` settings) and what they inherit.
#[derive(Clone)]
pub struct DelegateSettings {
    /// Wall-clock limit of one child.
    pub timeout: Duration,
    /// Model calls of one child.
    pub max_iter: u32,
    /// The parent's model and endpoint.
    pub model: String,
    /// The parent's endpoint.
    pub base_url: String,
    /// The parent's provider, when it named one.
    pub provider: Option<String>,
    /// The API key, handed over on a pipe.
    pub api_key: Option<String>,
    /// Each provider's extra headers as resolved here, handed over on the same pipe (their
    /// `${VAR}`s are not in the child's environment).
    pub provider_headers:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    /// The keys of the `fallback_models` providers other than the parent's, by provider id,
    /// handed over on the same pipe so that a child falls back as its parent does.
    pub fallback_keys: std::collections::BTreeMap<String, String>,
    /// The parent's session, recorded in each child's.
    pub parent_session: Option<String>,
    /// Where the children's file tools record their checkpoints (the parent's turn).
    pub checkpoints: Option<crate::protocol::subagent::CheckpointOwner>,
    /// Who answers a trusted child's approvals and questions (the parent's surface).
    pub asker: Option<Arc<dyn Approver>>,
    /// Slots for children, shared by every `delegate_tasks` call of the process
    /// (`subagents.max_concurrency` in all, not per call).
    pub slots: Arc<Semaphore>,
    /// The parent's tool selection (its `--tool`/`--no-tool` flags are not in the child's
    /// environment).
    pub tools: crate::config::ToolsConfig,
    /// The parent's resolved policy, sandbox and planning (its flags are not in the child's
    /// environment).
    pub policy: crate::danger_policy::DangerPolicy,
    /// Whether the parent's shell commands run in the sandbox.
    pub sandbox: bool,
    /// Whether the parent plans.
    pub planning: bool,
    /// Whether the parent reads no instruction files (its children read none either).
    pub no_agents: bool,
    /// Where task files are written ([`task_dir`] of the odek home).
    pub task_dir: std::path::PathBuf,
    /// The named agents a task may run as (none: the description and parameters are the
    /// plain ones).
    pub agents: Arc<DelegateAgents>,
}

/// Starts sub-agents.
pub struct DelegateTasksTool {
    settings: DelegateSettings,
    /// What the model reads: the plain text, then the usable agents, sorted by name.
    description: String,
    /// One question to the parent's user at a time, whichever child asks.
    asking: tokio::sync::Mutex<()>,
}

impl DelegateTasksTool {
    /// A `delegate_tasks` with these settings.
    pub fn new(settings: DelegateSettings) -> Self {
        DelegateTasksTool {
            description: format!("{DESCRIPTION}{}", settings.agents.listing()),
            settings,
            asking: tokio::sync::Mutex::new(()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    goal: String,
    #[serde(default)]
    context: String,
    #[serde(default)]
    guidance: String,
    #[serde(default)]
    trust_level: Option<String>,
    #[serde(default)]
    max_risk: Option<String>,
    #[serde(default)]
    agent: Option<String>,
}

#[derive(Deserialize)]
struct Args {
    tasks: Vec<TaskArgs>,
}

fn task_count(args: &Value) -> usize {
    args.get("tasks")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

#[async_trait]
impl Tool for DelegateTasksTool {
    fn name(&self) -> &str {
        crate::tools::catalog::DELEGATE_TASKS.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let mut schema = crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "tasks":{"type":"array","minItems":1,"maxItems":8,"items":{"type":"object","properties":{"goal":{"type":"string"},"context":{"type":"string"},"guidance":{"type":"string"},"trust_level":{"type":"string","enum":["untrusted","trusted"]},"max_risk":{"type":"string","description":"A risk class, e.g. local_write"}},"required":["goal"]}}
              },
              "required":["tasks"]
            }"#,
        );
        // Only with agents to run as: without, the schema stays byte for byte the plain one.
        if !self.settings.agents.is_empty() {
            schema["properties"]["tasks"]["items"]["properties"]["agent"] =
                json!({"type": "string", "description": "A named agent (listed above)"});
        }
        schema
    }

    /// Asked about like any `system_write` call (as in the original).
    fn classify(&self, args: &Value, _ctx: &ToolContext) -> Option<Classification> {
        Some(Classification::new(
            DangerClass::SystemWrite,
            format!("starts {} sub-agent(s)", task_count(args)),
        ))
    }

    /// Content from outside: a turn that ran it is tainted.
    /// Each child's part is wrapped on its own (`subagent:<n>`).
    fn untrusted_source(&self, _args: &Value) -> Option<String> {
        None
    }

    fn summary(&self, args: &Value) -> String {
        format!("{} task(s)", task_count(args))
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"task_count": task_count(args)}))
    }

    fn output_limit(&self, args: &Value) -> usize {
        task_count(args).clamp(1, MAX_TASKS) * (MAX_RESULT_BYTES + 1024)
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let tasks = self.task_files(args)?;
        let labels: Vec<String> = tasks.iter().map(TaskFile::label).collect();
        let pool = ctx.cost_left.map(|left| CostPool::new(left, tasks.len()));
        let pool = pool.as_ref();
        let runs = tasks.into_iter().map(|mut task| async move {
            let _slot = self.settings.slots.acquire().await;
            // A task still waiting for a slot when the turn is cancelled never starts.
            if ctx.cancel.is_cancelled() {
                return ended_without_envelope(EnvelopeStatus::Cancelled, self.settings.timeout);
            }
            let Some(pool) = pool else {
                return self.run_child(task, ctx, None).await;
            };
            let Some(share) = pool.take_share() else {
                return budget_spent();
            };
            task.max_cost_usd = Some(share);
            let envelope = self.run_child(task, ctx, Some(pool.spent())).await;
            pool.settle(share, &envelope_usage(&envelope));
            envelope
        });
        let envelopes = futures_util::future::join_all(runs).await;
        let parts: Vec<String> = envelopes
            .iter()
            .zip(&labels)
            .enumerate()
            .map(|(i, (e, label))| result_part(i + 1, label, e, &ctx.redactor))
            .collect();
        Ok(parts.join("\n\n"))
    }
}

impl DelegateTasksTool {
    /// The task files of a call, checked: 1 to 8 tasks, each with a goal and known names.
    fn task_files(&self, args: Args) -> Result<Vec<TaskFile>, ToolError> {
        let total = args.tasks.len();
        if total == 0 || total > MAX_TASKS {
            return Err(ToolError(format!(
                "delegate_tasks: {total} tasks given; give 1 to {MAX_TASKS}"
            )));
        }
        args.tasks
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let n = i + 1;
                self.task_file(t, n, total)
                    .map_err(|e| ToolError(format!("delegate_tasks: task {n}: {e}")))
            })
            .collect()
    }

    /// Task `n` of `total`: the parent's settings, then the named agent's, if it names one.
    fn task_file(&self, t: TaskArgs, n: usize, total: usize) -> Result<TaskFile, TaskArgError> {
        let s = &self.settings;
        if t.goal.trim().is_empty() {
            return Err(TaskArgError::EmptyGoal);
        }
        let asked = match t.trust_level.as_deref() {
            None => None,
            Some("untrusted") => Some(Trust::Untrusted),
            Some("trusted") => Some(Trust::Trusted),
            Some(other) => return Err(TaskArgError::TrustLevel(other.to_string())),
        };
        let max_risk = match t.max_risk.as_deref() {
            None | Some("") => None,
            Some(name) => Some(name.parse::<DangerClass>()?),
        };
        let mut task = TaskFile {
            goal: t.goal,
            context: t.context,
            guidance: t.guidance,
            trust_level: asked.unwrap_or_default(),
            max_risk,
            index: n,
            total,
            parent_session: s.parent_session.clone(),
            checkpoints: s.checkpoints.clone(),
            max_iter: s.max_iter,
            timeout_seconds: s.timeout.as_secs(),
            // Set as the task starts: its share of what is left then.
            max_cost_usd: None,
            model: Some(s.model.clone()),
            base_url: Some(s.base_url.clone()),
            provider: s.provider.clone(),
            tools: Some(super::TaskTools {
                enabled: s.tools.enabled.clone(),
                disabled: s.tools.disabled.clone(),
            }),
            policy: Some(s.policy.clone()),
            sandbox: Some(s.sandbox),
            planning: Some(s.planning),
            ask_parent: false,
            no_agents: s.no_agents,
            agent: None,
            system: None,
        };
        if let Some(name) = t.agent.as_deref().filter(|name| !name.trim().is_empty()) {
            s.agents.apply(name.trim(), &mut task, asked)?;
        }
        task.ask_parent = task.trust_level == Trust::Trusted && s.asker.is_some();
        Ok(task)
    }

    /// One child, start to envelope; reported as it starts and ends, its tokens added to
    /// the run's usage.
    /// `spent` stops the child when the call's share of the cost budget is spent.
    async fn run_child(
        &self,
        task: TaskFile,
        ctx: &ToolContext,
        spent: Option<&CancellationToken>,
    ) -> Envelope {
        let (index, total) = (task.index, task.total);
        ctx.report(ToolReport::SubagentStarted { index, total });
        let started = Instant::now();
        let envelope = match self.spawn_and_wait(&task, ctx, spent).await {
            Ok(e) => e,
            Err(e) => Envelope::contract_error(&e.to_string()),
        };
        // Counted against the parent's budgets, the cost one included (cached tokens priced
        // as cached).
        ctx.spend(&envelope_usage(&envelope));
        ctx.report(ToolReport::SubagentFinished {
            index,
            total,
            status: envelope.status.as_str().to_string(),
            iterations: envelope.iterations,
            tool_calls: envelope.tool_calls,
            input_tokens: envelope.input_tokens,
            output_tokens: envelope.output_tokens,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
        envelope
    }

    async fn spawn_and_wait(
        &self,
        task: &TaskFile,
        ctx: &ToolContext,
        spent: Option<&CancellationToken>,
    ) -> Result<Envelope, SpawnError> {
        let never = CancellationToken::new();
        let spent = spent.unwrap_or(&never);
        let file = write_task_file(task, &self.settings.task_dir).map_err(SpawnError::TaskFile)?;
        let exe = std::env::current_exe().map_err(SpawnError::OwnPath)?;
        let mut cmd = tokio::process::Command::new(exe);
        let stdin = if task.ask_parent {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        };
        cmd.arg("subagent")
            .arg("--task")
            .arg(file.path())
            .current_dir(&ctx.cwd)
            .stdin(stdin)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        // No variable that holds a key (one referenced as `${MY_KEY}` included), and
        // nothing a child starts may delegate again.
        for key in [&self.settings.api_key, &self.key_for(task)]
            .into_iter()
            .flatten()
            .chain(self.settings.fallback_keys.values())
        {
            crate::process_group::register_key(key);
        }
        crate::process_group::hide_keys(&mut cmd);
        cmd.env("ODEK_SUBAGENTS", "false");
        // `odek config` run by the child's commands shows the child's settings.
        cmd.env(super::TASK_VAR, file.path());
        let handover = crate::protocol::subagent::Handover {
            api_key: self.key_for(task),
            headers: self.settings.provider_headers.clone(),
            keys: self.settings.fallback_keys.clone(),
        };
        let _key_pipe = if handover.is_empty() {
            cmd.env_remove(KEY_FD_VAR);
            None
        } else {
            let text = serde_json::to_string(&handover)
                .map_err(|e| SpawnError::KeyPipe(std::io::Error::other(e)))?;
            Some(pass_key(&mut cmd, &text).map_err(SpawnError::KeyPipe)?)
        };
        end_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(SpawnError::Start)?;
        let mut guard = GroupGuard::new(child.id().and_then(|id| i32::try_from(id).ok()));
        // Without the kernel's parent-death signal, the watchdog stops the child's group
        // should odek be killed outright (see `end_with_parent`).
        #[cfg(not(target_os = "linux"))]
        let _watched = crate::tools::background::Watched::new(guard.pgid());
        let stdout = child.stdout.take().ok_or(SpawnError::NoStdout)?;
        let limit = self.settings.timeout + KILL_GRACE;
        let label = task.label();
        let read = self.read_child(stdout, child.stdin.take(), &label, ctx);
        tokio::pin!(read);
        let stopped = tokio::select! {
            line = tokio::time::timeout(limit, &mut read) => match line {
                Ok(line) => Ok(line),
                Err(_) => Err(EnvelopeStatus::Timeout),
            },
            () = ctx.cancel.cancelled() => Err(EnvelopeStatus::Cancelled),
            () = spent.cancelled() => Err(EnvelopeStatus::Cancelled),
        };
        let line = match stopped {
            Ok(line) => line,
            Err(how) => {
                // Asked to stop (SIGTERM), the child cancels its turn — its commands and
                // servers stop with it — and writes its envelope; after a grace it is killed.
                if let Some(pgid) = guard.pgid() {
                    crate::process_group::signal_group(pgid, libc::SIGTERM);
                }
                match tokio::time::timeout(TERM_GRACE, &mut read).await {
                    Ok(line) if !line.is_empty() => line,
                    _ => {
                        guard.kill_now();
                        let _ = child.wait().await;
                        return Ok(ended_without_envelope(how, self.settings.timeout));
                    }
                }
            }
        };
        // Whatever the child's group still holds goes now, before the leader is reaped
        // (its group id cannot be reused until then).
        guard.kill_now();
        let _ = child.wait().await;
        serde_json::from_str(&line).map_err(|_| SpawnError::NoEnvelope)
    }
}

impl DelegateTasksTool {
    /// The key a task's child gets: the parent's, or for a named agent on another provider
    /// that provider's (never the parent's: it would go to another endpoint).
    fn key_for(&self, task: &TaskFile) -> Option<String> {
        let s = &self.settings;
        match s.agents.key_for(task, s.provider.as_deref()) {
            None => s.api_key.clone(),
            Some(other) => other,
        }
    }
}

/// Why a task of a call cannot start (a tool error naming the task).
#[derive(Debug, thiserror::Error)]
enum TaskArgError {
    /// No goal.
    #[error("goal is empty")]
    EmptyGoal,
    /// A trust level that is none of the two.
    #[error("trust_level {0:?} is not untrusted or trusted")]
    TrustLevel(String),
    /// An unknown risk class.
    #[error("max_risk: {0}")]
    MaxRisk(#[from] crate::danger_policy::UnknownDangerClass),
    /// The named agent cannot run it.
    #[error("{0}")]
    Agent(#[from] AgentUseError),
}

impl crate::error::Classified for TaskArgError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            TaskArgError::Agent(e) => e.kind(),
            _ => crate::error::ErrorKind::Usage,
        }
    }
}

/// Why a child gave no envelope of its own (the parent writes a contract error instead).
#[derive(Debug, thiserror::Error)]
enum SpawnError {
    /// The task file could not be written.
    #[error("the task file: {0}")]
    TaskFile(std::io::Error),
    /// odek's own executable could not be found.
    #[error("odek's own path: {0}")]
    OwnPath(std::io::Error),
    /// The key's descriptor could not be set up.
    #[error("the key's pipe: {0}")]
    KeyPipe(std::io::Error),
    /// The child did not start.
    #[error("odek subagent did not start: {0}")]
    Start(std::io::Error),
    /// Its output was not piped.
    #[error("no stdout")]
    NoStdout,
    /// Its last line is not an envelope.
    #[error("odek subagent ended without its envelope (it crashed or was killed)")]
    NoEnvelope,
}

impl crate::error::Classified for SpawnError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            SpawnError::NoStdout | SpawnError::NoEnvelope => crate::error::ErrorKind::Internal,
            _ => crate::error::ErrorKind::Io,
        }
    }
}

/// The folder of sub-agents' task files under the odek home (0700).
pub fn task_dir(home: &std::path::Path) -> std::path::PathBuf {
    home.join("tasks")
}

/// The prefix of this process's task files: `odek-task-<pid>-`.
fn task_prefix(pid: u32) -> String {
    format!("odek-task-{pid}-")
}

/// A private task file (0600) in [`task_dir`], removed when dropped; one its parent could
/// not remove (it was killed outright) is removed by [`clean_task_files`] at the next start.
fn write_task_file(
    task: &TaskFile,
    dir: &std::path::Path,
) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt as _;
    crate::util::files::ensure_dir(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let mut file = tempfile::Builder::new()
        .prefix(&task_prefix(std::process::id()))
        .suffix(".json")
        .tempfile_in(dir)?;
    file.write_all(
        serde_json::to_string(task)
            .map_err(std::io::Error::other)?
            .as_bytes(),
    )?;
    file.flush()?;
    Ok(file)
}

/// Removes the task files whose parent process is gone; returns how many. Files of a live
/// odek (another one running sub-agents now) are left alone.
pub fn clean_task_files(home: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(task_dir(home)) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("odek-task-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !crate::process_group::process_alive(pid) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Makes the key (the [`Handover`](crate::protocol::subagent::Handover)) readable on the child's descriptor 3 (a pipe written and closed before the
/// child starts; nothing of it is in the child's environment or command line). Returns the
/// read end, which must live until the child has started.
#[allow(unsafe_code)]
fn pass_key(cmd: &mut tokio::process::Command, key: &str) -> std::io::Result<std::io::PipeReader> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let (reader, mut writer) = std::io::pipe()?;
    writer.write_all(key.as_bytes())?;
    drop(writer);
    let fd = reader.as_raw_fd();
    cmd.env(KEY_FD_VAR, "3");
    // SAFETY: between fork and exec only async-signal-safe calls are made: dup2 puts the
    // pipe's read end on descriptor 3 (without close-on-exec, so the child inherits it),
    // fcntl clears that flag.
    unsafe {
        cmd.pre_exec(move || {
            if fd == 3 {
                // Already there: only its close-on-exec flag must go.
                if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(reader)
}

/// A parent that dies abruptly (SIGKILL, the OOM killer) takes its children along. On Linux
/// the kernel sends the child SIGTERM (`PR_SET_PDEATHSIG`, set between fork and exec) and it
/// ends its turn. Elsewhere there is no such signal: the caller hands the child's group to
/// the watchdog of `tools::background`, which sends the group SIGTERM, then SIGKILL 0.3 s
/// later, when odek's end closes its pipe (docs/PLATFORMS.md).
#[allow(unsafe_code)]
fn end_with_parent(cmd: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec only prctl, async-signal-safe, is called; it sets a flag.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

impl DelegateTasksTool {
    /// Reads a child's stdout to its end: its requests are asked on the parent's approver
    /// (one at a time, labelled `sub-agent 2/3: …`) and answered on its stdin; event lines
    /// are read and dropped as they come, so the child never blocks on a full pipe. Returns
    /// the last other line: the envelope.
    async fn read_child(
        &self,
        stdout: tokio::process::ChildStdout,
        mut stdin: Option<tokio::process::ChildStdin>,
        label: &str,
        ctx: &ToolContext,
    ) -> String {
        let mut lines = BufReader::new(stdout).lines();
        let mut last = String::new();
        // A question still open when this read ends (the child stopped, the call was dropped)
        // is withdrawn from the parent's approver.
        let asking = ctx.cancel.child_token();
        let _withdraw = asking.clone().drop_guard();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() || line.len() > MAX_LINE_BYTES {
                continue;
            }
            match serde_json::from_str::<RequestLine>(&line) {
                Ok(_) if stdin.is_none() => {}
                Ok(request) => {
                    let answer = self
                        .ask_parent(request.odek_subagent_request, label, &asking)
                        .await;
                    if let (Some(pipe), Ok(text)) = (stdin.as_mut(), serde_json::to_string(&answer))
                    {
                        let _ = pipe.write_all(format!("{text}\n").as_bytes()).await;
                        let _ = pipe.flush().await;
                    }
                }
                Err(_) => last = line,
            }
        }
        last
    }

    /// Asks the parent's approver what a trusted child asks; `cancel` withdraws the question.
    async fn ask_parent(
        &self,
        request: Request,
        label: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> AnswerLine {
        let Some(asker) = &self.settings.asker else {
            return AnswerLine {
                id: request.id,
                answer: "no_user".into(),
                text: None,
            };
        };
        let _one_at_a_time = self.asking.lock().await;
        match request.ask {
            Ask::Approval { items } => {
                let items: Vec<_> = items
                    .iter()
                    .map(|i| super::ask::labelled(i, label))
                    .collect();
                let answer = tokio::select! {
                    a = asker.ask(&items, cancel) => a,
                    () = cancel.cancelled() => ApprovalAnswer::Cancelled,
                };
                AnswerLine {
                    id: request.id,
                    answer: approval_word(answer).into(),
                    text: None,
                }
            }
            Ask::Question { question, options } => {
                let asked = Question {
                    question: format!("{label}: {question}"),
                    options,
                };
                let answer = tokio::select! {
                    a = asker.clarify(&asked, cancel) => a,
                    () = cancel.cancelled() => QuestionAnswer::Cancelled,
                };
                question_answer_line(request.id, answer)
            }
        }
    }
}

/// The tokens a child reports in its envelope.
fn envelope_usage(envelope: &Envelope) -> crate::llm::Usage {
    crate::llm::Usage {
        input_tokens: envelope.input_tokens,
        output_tokens: envelope.output_tokens,
        cache_read_tokens: envelope.cache_read_tokens,
        cache_write_tokens: envelope.cache_write_tokens,
        ..Default::default()
    }
}

/// The envelope of a task not started: the call's share of the cost budget is spent.
fn budget_spent() -> Envelope {
    Envelope {
        status: EnvelopeStatus::Cancelled,
        ..Envelope::contract_error(
            "not started: the cost budget (limits.max_cost_usd) left for this call is spent",
        )
    }
}

/// The envelope of a child stopped by the parent.
fn ended_without_envelope(how: EnvelopeStatus, timeout: Duration) -> Envelope {
    let why = match how {
        EnvelopeStatus::Timeout => format!(
            "the sub-agent ran past its {} s limit (subagents.timeout_seconds) and was killed",
            timeout.as_secs()
        ),
        _ => "the sub-agent was stopped: the turn was cancelled".to_string(),
    };
    Envelope {
        status: how,
        ..Envelope::contract_error(&why)
    }
}

/// One child's part of the result: a heading the parent wrote (the task's label, `sub-agent
/// 2/3` or `sub-agent 2/3 (reviewer)`), then what the child said —
/// redacted, capped at 100 KiB and wrapped untrusted as `subagent:<n>`.
fn result_part(
    index: usize,
    label: &str,
    e: &Envelope,
    redactor: &crate::redact::Redactor,
) -> String {
    let mut body = match (e.status, e.error.as_deref()) {
        (EnvelopeStatus::Ok, _) => e.answer.clone(),
        (_, error) if !e.answer.is_empty() => {
            format!("error: {}\n\n{}", error.unwrap_or("no answer"), e.answer)
        }
        (_, error) => format!("error: {}", error.unwrap_or("no answer")),
    };
    if !e.files_changed.is_empty() {
        body.push_str(&format!(
            "\n\nfiles changed: {}",
            e.files_changed.join(", ")
        ));
    }
    let body = redactor.redact(&body);
    let body = crate::text::head_and_tail(&body, MAX_RESULT_BYTES);
    format!(
        "{label}: {} ({} iterations, {} tool calls, session {})\n{}",
        e.status.as_str(),
        e.iterations,
        e.tool_calls,
        if e.session_id.is_empty() {
            "none"
        } else {
            &e.session_id
        },
        crate::untrusted::wrap(&format!("subagent:{index}"), &body)
    )
}
