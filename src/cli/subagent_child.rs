//! `odek subagent`, the child's side of delegation: read the task and the key, run one turn with a fresh context and the
//! child's policy, and say how it went in one envelope.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, LoadOptions, Overrides, Resolved};
use crate::engine::{EngineEvent, Observer, RunError};
use crate::events::StdoutSink;
use crate::llm::Message;
use crate::protocol::subagent::Handover;
use crate::runtime::{
    Approvals, Process, StartOptions, Submission, SupervisorError, Threads, TurnOutcome,
};
use crate::subagent::ask::{
    AnswerLine, Ask, Request, RequestLine, approval_of, asked_item, question_answer_of,
    question_ask,
};
use crate::subagent::{
    DELEGATE_SOURCE, Envelope, EnvelopeStatus, KEY_FD_VAR, ORIGIN_SUBAGENT, TaskError, TaskFile,
    Trust,
};
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};

/// Who holds a child's session while it runs.
const HOLDER: &str = "odek subagent";
/// Longest key read from the descriptor.
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// Why a child could not start (exit 3 with an error envelope).
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The task file.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// The key's descriptor.
    #[error("{KEY_FD_VAR}: {0}")]
    Key(String),
    /// The configuration.
    #[error("config: {0}")]
    Config(String),
    /// The runtime could not be built.
    #[error("{0}")]
    Start(String),
}

impl crate::error::Classified for ContractError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ContractError::Task(e) => e.kind(),
            ContractError::Config(_) => crate::error::ErrorKind::Config,
            ContractError::Key(_) | ContractError::Start(_) => crate::error::ErrorKind::Internal,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            ContractError::Task(e) => e.hint(),
            ContractError::Config(_) => {
                Some("odek config --subagent-task FILE shows the settings a child gets")
            }
            ContractError::Key(_) | ContractError::Start(_) => None,
        }
    }
}

/// Everything the child's turn is built from, before the async part.
pub struct Prepared {
    /// The task.
    pub task: TaskFile,
    /// The configuration with the child's limits and policy.
    pub config: Config,
    /// The odek home.
    pub home: std::path::PathBuf,
    /// The working directory.
    pub cwd: std::path::PathBuf,
}

/// Reads the task file and the key, and resolves the child's configuration: the parent's
/// layers, then the task's layer (`subagent task`: its limits, the child's policy, no
/// `AGENTS.md`, and for an untrusted task no MCP servers) over them.
pub fn prepare(task_path: &Path) -> Result<Prepared, ContractError> {
    let task = crate::subagent::read_task_file(task_path)?;
    let handover = read_handover()?;
    let resolved = load_for_task(&task, &handover, Overrides::default())?;
    Ok(Prepared {
        task,
        config: resolved.config,
        home: resolved.home,
        cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
    })
}

/// The settings of a child with `task`: the parent's layers (and `flags`; a child has none),
/// once to cap the policy from, then again with the task's layer on top.
pub fn load_for_task(
    task: &TaskFile,
    handover: &Handover,
    flags: Overrides,
) -> Result<Resolved, ContractError> {
    let config_error = |e: crate::config::ConfigError| ContractError::Config(e.to_string());
    let mut opts = LoadOptions::from_process(flags);
    let base = crate::config::load(&opts).map_err(config_error)?;
    opts.task = crate::subagent::task_layer(task, handover, &base.config);
    crate::config::load(&opts).map_err(config_error)
}

/// The key and headers from the descriptor `ODEK_API_KEY_FD` names, when it names one.
fn read_handover() -> Result<Handover, ContractError> {
    let Ok(text) = std::env::var(KEY_FD_VAR) else {
        return Ok(Handover::default());
    };
    let fd: i32 = text
        .trim()
        .parse()
        .ok()
        .filter(|fd| *fd > 2)
        .ok_or_else(|| ContractError::Key(format!("{text:?} is not a descriptor above 2")))?;
    let text = read_descriptor(fd).map_err(|e| ContractError::Key(e.to_string()))?;
    Handover::parse(&text).map_err(|e| ContractError::Key(format!("not a key nor a handover: {e}")))
}

#[allow(unsafe_code)]
fn read_descriptor(fd: i32) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    // The descriptor must be open: `fcntl(F_GETFD)` fails on one that is not, so a wrong
    // number is an error here rather than a read from whatever opens next.
    // SAFETY: fcntl with F_GETFD only queries the descriptor's flags.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the parent opened this descriptor for this process to read the key from; it
    // is open (checked above) and nothing else in this process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut key = String::new();
    std::fs::File::from(owned)
        .take(MAX_KEY_BYTES)
        .read_to_string(&mut key)?;
    Ok(key)
}

/// The user message of a task: the goal, then its context and guidance — wrapped as
/// untrusted content unless the task is trusted.
pub fn task_message(task: &TaskFile) -> String {
    let part = |title: &str, text: &str| -> String {
        if text.trim().is_empty() {
            return String::new();
        }
        let body = match task.trust_level {
            Trust::Trusted => text.to_string(),
            Trust::Untrusted => crate::untrusted::wrap(DELEGATE_SOURCE, text),
        };
        format!("\n\n{title}:\n{body}")
    };
    format!(
        "{}{}{}",
        task.goal.trim(),
        part("Context", &task.context),
        part("Guidance", &task.guidance)
    )
}

/// Runs the prepared task to its envelope: events go to stdout as the turn goes (flushed
/// before this returns), the envelope is redacted. SIGTERM or SIGINT (the parent stopping
/// it) cancels the turn: its commands and servers stop, the envelope says `cancelled`.
/// `Err` is a contract error (exit 3): the runtime could not be built.
pub fn run(prepared: Prepared) -> Result<Envelope, ContractError> {
    let Prepared {
        task,
        config,
        home,
        cwd,
    } = prepared;
    let mut start = StartOptions::new(config, home, cwd);
    start.events = Some(Box::new(StdoutSink));
    start.threads = Threads::Caller;
    let process = match Process::start(start) {
        Ok(p) => p,
        Err(e) => return Err(ContractError::Start(e.message_without_paths())),
    };
    let redactor = process.redactor.clone();
    if let Some(owner) = task.checkpoints.clone() {
        process.runtime.record_checkpoints_for(owner);
    }
    let files = Arc::new(FilesChanged::default());
    let outcome = process.block_on(async {
        let supervisor = process.supervisor.clone();
        let stopper = tokio::spawn(async move {
            crate::process_group::termination().await;
            supervisor.shutdown().await;
        });
        let outcome = turn(&process, &task, files.clone()).await;
        stopper.abort();
        process.runtime.mcp().shutdown().await;
        outcome
    });
    drop(process);
    let mut envelope = match outcome {
        Ok((session_id, outcome)) => envelope_of(session_id, &outcome),
        Err(SupervisorError::Runtime(e)) => Envelope::contract_error(&e.message_without_paths()),
        Err(e) => Envelope::contract_error(&e.to_string()),
    };
    envelope.files_changed = files.list();
    redact(&mut envelope, &redactor);
    Ok(envelope)
}

async fn turn(
    process: &Process,
    task: &TaskFile,
    files: Arc<FilesChanged>,
) -> Result<(String, TurnOutcome), SupervisorError> {
    let runtime = process.runtime.clone();
    if task.trust_level == Trust::Trusted {
        for warning in runtime.start_mcp().await {
            eprintln!("{warning}");
        }
    }
    let (head, _) = runtime.first_messages();
    let session = runtime.new_child_session(
        &task.goal,
        head,
        ORIGIN_SUBAGENT,
        HOLDER,
        task.parent_session.as_deref(),
    )?;
    let session_id = session.id().to_string();
    let approvals = if task.trust_level == Trust::Trusted && task.ask_parent {
        Approvals::Local(ParentApprover::start())
    } else {
        Approvals::Nobody
    };
    let handle = process.supervisor.submit(Submission {
        runtime,
        session: Some(session),
        input: vec![Message::user(task_message(task))],
        approvals,
        output: files,
        external: Vec::new(),
        origin: ORIGIN_SUBAGENT,
        files: None,
        scope: Default::default(),
    })?;
    Ok((session_id, handle.outcome().await?))
}

fn envelope_of(session_id: String, outcome: &TurnOutcome) -> Envelope {
    // A limit's closing summary is the answer there is.
    let closing = outcome.run.summary.clone().unwrap_or_default();
    let (status, answer, error) = match &outcome.run.result {
        Ok(answer) => (EnvelopeStatus::Ok, answer.clone(), None),
        Err(RunError::Cancelled) => (EnvelopeStatus::Cancelled, closing, Some("cancelled".into())),
        Err(
            e @ RunError::Budget {
                limit: "runtime", ..
            },
        ) => (EnvelopeStatus::Timeout, closing, Some(e.to_string())),
        Err(e) => (EnvelopeStatus::Error, closing, Some(e.to_string())),
    };
    Envelope {
        status,
        summary: Envelope::summary_of(&answer),
        answer,
        files_changed: Vec::new(),
        iterations: outcome.run.iterations,
        tool_calls: outcome.run.tool_calls,
        input_tokens: outcome.run.usage.input_tokens,
        output_tokens: outcome.run.usage.output_tokens,
        cache_read_tokens: outcome.run.usage.cache_read_tokens,
        cache_write_tokens: outcome.run.usage.cache_write_tokens,
        session_id,
        error,
    }
}

/// Redacts every text of the envelope; the summary is cut from the redacted answer, so no
/// piece of a secret survives the cut.
fn redact(envelope: &mut Envelope, redactor: &crate::redact::Redactor) {
    let r = |text: &mut String| *text = redactor.redact(text).into_owned();
    r(&mut envelope.answer);
    envelope.summary = Envelope::summary_of(&envelope.answer);
    envelope.files_changed.iter_mut().for_each(r);
    if let Some(e) = envelope.error.as_mut() {
        r(e);
    }
}

/// A trusted child's approver: asks the parent (a request line on stdout, among the event
/// lines, written whole under stdout's lock) and waits for the answer line on stdin. When
/// stdin closes — the parent is gone — every wait ends as refused.
struct ParentApprover {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<AnswerLine>>>,
}

impl ParentApprover {
    fn start() -> Arc<ParentApprover> {
        let approver = Arc::new(ParentApprover {
            next: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
        });
        let reader = Arc::downgrade(&approver);
        // A thread of its own reads stdin: the process ends without waiting for it (a
        // runtime's blocking thread would hold the runtime's shutdown up).
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                let (Ok(answer), Some(approver)) =
                    (serde_json::from_str::<AnswerLine>(&line), reader.upgrade())
                else {
                    continue;
                };
                let waiter = approver.lock_waiting().remove(&answer.id);
                if let Some(tx) = waiter {
                    let _ = tx.send(answer);
                }
            }
            if let Some(approver) = reader.upgrade() {
                approver.lock_waiting().clear();
            }
        });
        approver
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<AnswerLine>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `ask` to the parent; the answer, or `None` when the parent is gone or the
    /// turn was cancelled.
    async fn request(&self, ask: Ask, cancel: &CancellationToken) -> Option<AnswerLine> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.lock_waiting().insert(id, tx);
        let line = RequestLine {
            odek_subagent_request: Request { id, ask },
        };
        let text = serde_json::to_string(&line).ok()?;
        {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
                return None;
            }
        }
        tokio::select! {
            answer = rx => answer.ok(),
            () = cancel.cancelled() => None,
        }
    }
}

#[async_trait::async_trait]
impl Approver for ParentApprover {
    async fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let items = items.iter().map(asked_item).collect();
        match self.request(Ask::Approval { items }, cancel).await {
            Some(line) => approval_of(&line.answer),
            None if cancel.is_cancelled() => ApprovalAnswer::Cancelled,
            None => ApprovalAnswer::Deny,
        }
    }

    async fn clarify(&self, question: &Question, cancel: &CancellationToken) -> QuestionAnswer {
        match self.request(question_ask(question), cancel).await {
            Some(line) => question_answer_of(&line),
            None if cancel.is_cancelled() => QuestionAnswer::Cancelled,
            None => QuestionAnswer::NoUser,
        }
    }
}

/// The paths the child's file tools changed, in the order first changed.
#[derive(Default)]
pub struct FilesChanged {
    /// Call id → the paths it would change.
    started: Mutex<HashMap<String, Vec<String>>>,
    changed: Mutex<Vec<String>>,
}

impl FilesChanged {
    fn list(&self) -> Vec<String> {
        self.changed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Observer for FilesChanged {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::ToolCallStarted { call, .. } => {
                let paths = crate::tools::catalog::changed_paths(
                    &call.function.name,
                    &call.function.arguments,
                );
                if !paths.is_empty() {
                    self.started
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(call.id.clone(), paths);
                }
            }
            EngineEvent::ToolCallFinished { call, ok, .. } => {
                let paths = self
                    .started
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&call.id);
                // A batch_patch that failed may still have changed some of its files; they
                // are listed too (the list says what may have changed).
                if let Some(paths) = paths.filter(|_| *ok || call.function.name == "batch_patch") {
                    let mut changed = self.changed.lock().unwrap_or_else(PoisonError::into_inner);
                    for p in paths {
                        if !changed.contains(&p) {
                            changed.push(p);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(trust: Trust) -> TaskFile {
        TaskFile {
            goal: "Count the TODOs".into(),
            context: "Step s2: only src/".into(),
            guidance: String::new(),
            trust_level: trust,
            max_risk: None,
            index: 1,
            total: 2,
            parent_session: None,
            checkpoints: None,
            max_iter: 5,
            timeout_seconds: 60,
            max_cost_usd: None,
            model: None,
            base_url: None,
            provider: None,
            tools: None,
            policy: None,
            sandbox: None,
            planning: None,
            ask_parent: false,
            no_agents: false,
            agent: None,
            system: None,
        }
    }

    #[test]
    fn the_context_of_an_untrusted_task_is_wrapped_and_empty_parts_are_left_out() {
        let untrusted = task_message(&task(Trust::Untrusted));
        assert!(
            untrusted.starts_with("Count the TODOs\n\nContext:\n"),
            "{untrusted}"
        );
        let wrapped = untrusted
            .split_once("Context:\n")
            .map(|(_, w)| w)
            .unwrap_or_default();
        let inner = crate::untrusted::unwrap(wrapped).expect("wrapped");
        assert_eq!(inner.body, "Step s2: only src/");
        assert!(!untrusted.contains("Guidance"));
        assert_eq!(
            task_message(&task(Trust::Trusted)),
            "Count the TODOs\n\nContext:\nStep s2: only src/"
        );
    }
}
