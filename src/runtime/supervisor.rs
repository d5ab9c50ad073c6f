//! The supervisor: every running turn of the process — a terminal's, `odek serve`'s, the
//! Telegram bot's, and later a schedule's or a sub-agent's — is submitted here, and only
//! here is a running turn kept track of.
//!
//! In the manner of a submission queue and an event queue: a surface submits a turn
//! ([`Supervisor::submit`]: its runtime, session, input, who answers approvals and the
//! surface's own output) and gets a [`RunHandle`] whose outcome it may await; it reads the
//! supervisor's frames ([`Supervisor::subscribe`]: streamed answer text redacted as a
//! stream, approvals requested and resolved); it answers an approval by id
//! ([`Supervisor::answer`]), cancels a run ([`Supervisor::cancel`]), and at the end shuts
//! everything down with one grace period ([`Supervisor::shutdown`]).
//!
//! The run id is chosen before the turn starts, so every event and frame of the run carries
//! it. Approvals are async (a oneshot per approval, no thread waits on them), their ids are
//! random, and whoever closes one — an answer, the timeout, a cancel, the shutdown — sends
//! the one `approval_resolved` frame.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::pending::{Approval, Clarify, Closing, QuestionHow, Request, Requests};
use super::{Runtime, RuntimeError, SessionHandle, SupervisorError, Surface, TurnOutcome};
use crate::engine::{EngineEvent, Fanout, Observer, RunError};
use crate::llm::{Delta, Message};
use crate::protocol::api::{
    ApprovalStatus, ApprovalView, JobView, QuestionStatus, QuestionView, RunStatus, RunView,
};
use crate::protocol::{AnswerDelta, ApprovalRequested, ClarifyRequested, Event};
use crate::redact::{Redactor, StreamRedactor};
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};
use crate::tools::background::Jobs;

mod inbox;
pub use inbox::{Delivered, Delivery};

/// Ended runs kept for their views.
const ENDED_RUNS_KEPT: usize = 200;

/// Who answers the approvals of a turn.
pub enum Approvals {
    /// The surface's own approver (the terminal's prompt).
    Local(Arc<dyn Approver>),
    /// Whoever reads the supervisor's frames answers by id ([`Supervisor::answer`],
    /// [`Supervisor::answer_question`]); with no answer within its time an approval expires
    /// (the calls do not run) and a question expires (the model decides alone).
    Remote {
        /// How long an approval waits.
        approval: Duration,
        /// How long a `clarify` question waits.
        question: Duration,
    },
    /// Nobody: the policy's `non_interactive` decides.
    Nobody,
}

/// A turn to run.
pub struct Submission {
    /// The runtime that builds the turn.
    pub runtime: Arc<Runtime>,
    /// The session it continues (held for writing by this process), or none.
    pub session: Option<Arc<SessionHandle>>,
    /// The new user message and attachments.
    pub input: Vec<Message>,
    /// Who answers approvals.
    pub approvals: Approvals,
    /// The surface's own output (the terminal, a chat's progress message).
    pub output: Arc<dyn Observer>,
    /// Where the input's external content came from (a file sent through a chat), if any:
    /// the turn's memory writes become pending ([`super::Turn::mark_external`]).
    pub external: Vec<String>,
    /// Who started the run: `cli`, `serve`, `telegram`, `schedule`, `subagent`, `mcp`,
    /// `acp` (its view says so).
    pub origin: &'static str,
    /// The editor's files, when the surface is an editor that offers them (`odek acp`).
    pub files: Option<Arc<dyn crate::tools::EditorFiles>>,
    /// What a custom command narrows for this turn (its model, its tools); the default
    /// narrows nothing ([`super::Runtime::expand_command`] gives a command's).
    pub scope: super::TurnScope,
}

/// A frame for the surfaces: an [`Event`] that is an `answer_delta`, `approval_requested`
/// or `approval_resolved`, with the run's session. Already redacted.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The run.
    pub run_id: String,
    /// Its session.
    pub session_id: String,
    /// The frame.
    pub event: Event,
}

/// A submitted run.
pub struct RunHandle {
    /// Its id (on every event and frame).
    pub run_id: String,
    /// Its session ("" for a turn without one).
    pub session_id: String,
    /// Its event stream (for an exit that cannot wait for the run to end).
    pub events: Option<crate::events::Emitter>,
    outcome: oneshot::Receiver<(Result<TurnOutcome, RuntimeError>, Option<String>)>,
    supervisor: Weak<Inner>,
}

impl Approvals {
    /// Answered through the supervisor, with the standard waits (60 s for an approval, 5
    /// minutes for a question).
    pub fn remote() -> Approvals {
        Approvals::Remote {
            approval: crate::tools::approval::REMOTE_APPROVAL_TIMEOUT,
            question: crate::tools::approval::REMOTE_QUESTION_TIMEOUT,
        }
    }
}

impl RunHandle {
    /// Waits for the run to end. A message sent to the session meanwhile that the run
    /// did not take stays in the session's inbox for its next turn's end.
    pub async fn outcome(self) -> Result<TurnOutcome, RuntimeError> {
        let (supervisor, session_id) = (self.supervisor.clone(), self.session_id.clone());
        let (outcome, next) = self.outcome_and_next().await;
        if let (Some(text), Some(inner)) = (next, supervisor.upgrade()) {
            inner.requeue(&session_id, text);
        }
        outcome
    }

    /// Waits for the run to end; with it, the message the session's next turn starts with
    /// (a steer that came after the run's last model request, else the first queued one),
    /// which the caller now owns: it starts that turn.
    pub async fn outcome_and_next(self) -> (Result<TurnOutcome, RuntimeError>, Option<String>) {
        // The task always sends; only a panic in it could drop the sender.
        self.outcome
            .await
            .unwrap_or((Err(RuntimeError::TurnInProgress(self.session_id)), None))
    }
}

/// See the module docs. Cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
}

struct Inner {
    grace: Duration,
    redactor: Arc<Redactor>,
    accepting: AtomicBool,
    table: Mutex<Table>,
    subscribers: Mutex<Vec<Subscriber>>,
    tasks: TaskTracker,
}

/// Hears every frame; false when it no longer listens.
type Subscriber = Box<dyn Fn(&Arc<Frame>) -> bool + Send + Sync>;

#[derive(Default)]
struct Table {
    runs: HashMap<String, Arc<RunSlot>>,
    /// Session id → its running run.
    running: HashMap<String, String>,
    /// Approval or question id → its run.
    requests: HashMap<String, String>,
    /// Session id → the messages sent to it while it ran.
    inboxes: HashMap<String, Inbox>,
    ended: VecDeque<String>,
}

/// The messages sent to one session while it ran (see `inbox.rs`).
#[derive(Default)]
struct Inbox {
    steers: VecDeque<String>,
    queued: VecDeque<String>,
}

/// One run in the table.
pub struct RunSlot {
    run_id: String,
    session_id: String,
    cancel: CancellationToken,
    started: Instant,
    state: Mutex<RunView>,
    approvals: Requests<Approval>,
    questions: Requests<Clarify>,
    supervisor: Weak<Inner>,
    /// The session's background jobs (weak: they end with the run, not with its record).
    jobs: Mutex<Weak<Jobs>>,
}

/// A job as the runs list shows it, its strings redacted.
fn job_view(job: &crate::tools::background::Job, redactor: Option<&Redactor>) -> JobView {
    let redact = |text: &str| match redactor {
        Some(r) => r.redact(text).into_owned(),
        None => text.to_string(),
    };
    let ended = job.ended();
    JobView {
        id: job.id,
        command: redact(&job.command),
        status: ended
            .as_ref()
            .map_or_else(|| "running".to_string(), |e| e.status.clone()),
        seconds: ended
            .map_or_else(|| job.running_for(), |e| e.duration)
            .as_secs(),
        tail: redact(&job.tail()),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Supervisor {
    /// A supervisor whose shutdown waits up to `grace` for cancelled turns to save;
    /// `redactor` redacts every frame.
    pub fn new(grace: Duration, redactor: Arc<Redactor>) -> Supervisor {
        Supervisor {
            inner: Arc::new(Inner {
                grace,
                redactor,
                accepting: AtomicBool::new(true),
                table: Mutex::new(Table::default()),
                subscribers: Mutex::new(Vec::new()),
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// Every frame of every run from now on, in order, on a channel.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<Frame>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.on_frame(move |frame| tx.send(frame.clone()).is_ok());
        rx
    }

    /// Calls `hear` with every frame of every run from now on, as it is published (it must
    /// be quick: the run waits for it); `hear` returns false to stop listening.
    pub fn on_frame(&self, hear: impl Fn(&Arc<Frame>) -> bool + Send + Sync + 'static) {
        lock(&self.inner.subscribers).push(Box::new(hear));
    }

    /// Starts a turn: its run id is chosen, the turn built by the submission's runtime
    /// with the supervisor's approvals and frames added, and run in a task of its own.
    pub fn submit(&self, submission: Submission) -> Result<RunHandle, SupervisorError> {
        if !self.inner.accepting.load(Ordering::SeqCst) {
            return Err(SupervisorError::ShuttingDown);
        }
        let run_id = crate::random::hex_id::<16>();
        let session_id = submission
            .session
            .as_ref()
            .map_or_else(String::new, |s| s.id().to_string());
        let slot = self.register(&run_id, &session_id, submission.origin)?;
        let approver: Option<Arc<dyn Approver>> = match submission.approvals {
            Approvals::Local(approver) => Some(approver),
            Approvals::Remote { approval, question } => Some(Arc::new(RemoteApprover {
                slot: slot.clone(),
                timeout: approval,
                question_timeout: question,
            })),
            Approvals::Nobody => None,
        };
        let frames = Arc::new(FrameOutput {
            slot: slot.clone(),
            stream: Mutex::new(StreamRedactor::new(self.inner.redactor.clone())),
        });
        let surface = Surface {
            approver,
            output: Arc::new(Fanout(vec![submission.output, frames])),
            files: submission.files,
            scope: submission.scope,
        };
        let mut turn = match submission
            .runtime
            .turn(submission.session.as_ref(), surface, &run_id)
        {
            Ok(turn) => turn,
            Err(e) => {
                self.forget(&slot);
                return Err(e.into());
            }
        };
        for source in &submission.external {
            turn.mark_external(source);
        }
        if !session_id.is_empty() {
            let steering = self.steering_for(&session_id, turn.events());
            turn.steer_with(steering);
        }
        if let Some(jobs) = turn.jobs() {
            *lock(&slot.jobs) = Arc::downgrade(jobs);
        }
        let (tx, rx) = oneshot::channel();
        let events = turn.events().cloned();
        let cancel = slot.cancel.clone();
        let (inner, ended) = (self.inner.clone(), slot.clone());
        let (session, runtime, input) = (submission.session, submission.runtime, submission.input);
        self.inner.tasks.spawn(async move {
            let outcome = turn.run(input, cancel).await;
            drop(session);
            drop(runtime);
            ended.finish(&outcome, &inner.redactor);
            let next = inner.ended(&ended);
            if let Err((_, Some(text))) = tx.send((outcome, next)) {
                inner.requeue(&ended.session_id, text);
            }
        });
        Ok(RunHandle {
            run_id,
            session_id,
            events,
            outcome: rx,
            supervisor: Arc::downgrade(&self.inner),
        })
    }

    fn register(
        &self,
        run_id: &str,
        session_id: &str,
        origin: &str,
    ) -> Result<Arc<RunSlot>, SupervisorError> {
        let mut table = lock(&self.inner.table);
        if !session_id.is_empty() && table.running.contains_key(session_id) {
            return Err(RuntimeError::TurnInProgress(session_id.to_string()).into());
        }
        let slot = Arc::new(RunSlot::new(run_id, session_id, origin, &self.inner));
        table.runs.insert(run_id.to_string(), slot.clone());
        if !session_id.is_empty() {
            table
                .running
                .insert(session_id.to_string(), run_id.to_string());
        }
        Ok(slot)
    }

    /// Drops a run that never started.
    fn forget(&self, slot: &RunSlot) {
        let mut table = lock(&self.inner.table);
        table.runs.remove(&slot.run_id);
        table.running.remove(&slot.session_id);
    }

    /// A run by id (running, or among the last ended).
    pub fn run(&self, run_id: &str) -> Result<Arc<RunSlot>, SupervisorError> {
        lock(&self.inner.table)
            .runs
            .get(run_id)
            .cloned()
            .ok_or_else(|| SupervisorError::NoRun(run_id.to_string()))
    }

    /// Every known run, newest first.
    pub fn views(&self) -> Vec<RunView> {
        let slots: Vec<Arc<RunSlot>> = lock(&self.inner.table).runs.values().cloned().collect();
        let mut views: Vec<RunView> = slots.iter().map(|s| s.view()).collect();
        views.sort_by(|a, b| b.started_at.cmp(&a.started_at));
        views
    }

    /// The running run of `session_id`, if any.
    pub fn running_in(&self, session_id: &str) -> Option<String> {
        lock(&self.inner.table).running.get(session_id).cloned()
    }

    /// Runs running now.
    pub fn running(&self) -> usize {
        lock(&self.inner.table)
            .runs
            .values()
            .filter(|s| s.is_running())
            .count()
    }

    /// Runs running now that `origin` started (`schedule`, `serve`, …).
    pub fn running_of(&self, origin: &str) -> usize {
        lock(&self.inner.table)
            .runs
            .values()
            .filter(|s| s.is_running() && lock(&s.state).origin == origin)
            .count()
    }

    /// Asks run `run_id` to stop (its pending approvals are closed at once); false when it
    /// has ended already.
    pub fn cancel(&self, run_id: &str) -> Result<bool, SupervisorError> {
        Ok(self.run(run_id)?.cancel())
    }

    /// Answers approval `approval_id` (of any run).
    pub fn answer(&self, approval_id: &str, approve: bool) -> Result<(), SupervisorError> {
        self.run_asking::<Approval>(approval_id)?
            .answer(approval_id, approve)
    }

    /// Answers question `question_id` (of any run) with `answer`.
    pub fn answer_question(&self, question_id: &str, answer: &str) -> Result<(), SupervisorError> {
        self.run_asking::<Clarify>(question_id)?
            .answer_question(question_id, answer)
    }

    /// The run that made request `id`.
    fn run_asking<R: Request>(&self, id: &str) -> Result<Arc<RunSlot>, SupervisorError> {
        let run_id = lock(&self.inner.table)
            .requests
            .get(id)
            .cloned()
            .ok_or_else(|| R::unknown(id))?;
        self.run(&run_id)
    }

    /// True once shutdown has begun.
    pub fn is_stopping(&self) -> bool {
        !self.inner.accepting.load(Ordering::SeqCst)
    }

    /// Refuses new turns, cancels the running ones (closing their approvals) and waits up
    /// to the grace period for them to save and end. Returns how many were running.
    pub async fn shutdown(&self) -> usize {
        self.inner.accepting.store(false, Ordering::SeqCst);
        let slots: Vec<Arc<RunSlot>> = lock(&self.inner.table).runs.values().cloned().collect();
        let running = slots.iter().filter(|s| s.cancel()).count();
        self.inner.tasks.close();
        let _ = tokio::time::timeout(self.inner.grace, self.inner.tasks.wait()).await;
        running
    }
}

impl Inner {
    /// Sends a frame to every subscriber still listening.
    fn publish(&self, slot: &RunSlot, event: Event) {
        let frame = Arc::new(Frame {
            run_id: slot.run_id.clone(),
            session_id: slot.session_id.clone(),
            event,
        });
        lock(&self.subscribers).retain(|hear| hear(&frame));
    }

    /// Moves a run to the ended ones (the oldest ended are forgotten). Whatever it still
    /// had open is closed as cancelled first (one frame each), so no surface keeps waiting
    /// for an answer nobody reads. Returns the message the session's next turn starts with,
    /// if its inbox holds one.
    fn ended(&self, slot: &RunSlot) -> Option<String> {
        slot.close_all();
        let mut table = lock(&self.table);
        let mut next = None;
        if table.running.get(&slot.session_id) == Some(&slot.run_id) {
            table.running.remove(&slot.session_id);
            next = Inner::next_of(&mut table, &slot.session_id);
        }
        for id in slot.approvals.ids().into_iter().chain(slot.questions.ids()) {
            table.requests.remove(&id);
        }
        table.ended.push_back(slot.run_id.clone());
        while table.ended.len() > ENDED_RUNS_KEPT {
            if let Some(old) = table.ended.pop_front() {
                table.runs.remove(&old);
            }
        }
        next
    }
}

impl RunSlot {
    fn new(run_id: &str, session_id: &str, origin: &str, inner: &Arc<Inner>) -> Self {
        RunSlot {
            run_id: run_id.to_string(),
            session_id: session_id.to_string(),
            cancel: CancellationToken::new(),
            started: Instant::now(),
            state: Mutex::new(RunView {
                run_id: run_id.to_string(),
                session_id: session_id.to_string(),
                origin: origin.to_string(),
                status: RunStatus::Running,
                started_at: crate::util::timestamp::now_rfc3339(),
                ended_at: None,
                answer: None,
                partial: false,
                error: None,
                summary: None,
                iterations: 0,
                tool_calls: 0,
                input_tokens: 0,
                output_tokens: 0,
                cached_tokens: 0,
                pending_approvals: 0,
                pending_questions: 0,
                jobs: Vec::new(),
            }),
            jobs: Mutex::new(Weak::new()),
            approvals: Requests::default(),
            questions: Requests::default(),
            supervisor: Arc::downgrade(inner),
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// How long it has been running (or ran).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The run's public state.
    pub fn view(&self) -> RunView {
        let mut view = lock(&self.state).clone();
        view.pending_approvals = self.approvals.open_count();
        view.pending_questions = self.questions.open_count();
        // A finished run's jobs are stopping with its session, if not stopped yet.
        let running = view.status == RunStatus::Running;
        if let Some(jobs) = lock(&self.jobs).upgrade().filter(|_| running) {
            let redactor = self.supervisor.upgrade().map(|s| s.redactor.clone());
            view.jobs = jobs
                .list()
                .iter()
                .map(|j| job_view(j, redactor.as_deref()))
                .collect();
        }
        view
    }

    /// Every question the run asked, oldest first.
    pub fn question_views(&self) -> Vec<QuestionView> {
        self.questions.views()
    }

    /// Every approval the run asked for, oldest first.
    pub fn approval_views(&self) -> Vec<ApprovalView> {
        self.approvals.views()
    }

    fn is_running(&self) -> bool {
        lock(&self.state).status == RunStatus::Running
    }

    /// Asks the run to stop and closes its pending approvals; false when it has ended.
    pub fn cancel(&self) -> bool {
        if !self.is_running() {
            return false;
        }
        self.cancel.cancel();
        self.close_all();
        true
    }

    /// Closes every approval and question still pending as cancelled.
    fn close_all(&self) {
        let mut frames = self.approvals.cancel_all(&self.run_id);
        frames.extend(self.questions.cancel_all(&self.run_id));
        for frame in frames {
            self.publish(frame);
        }
    }

    /// Sends one of this run's frames.
    fn publish(&self, frame: Event) {
        if let Some(inner) = self.supervisor.upgrade() {
            inner.publish(self, frame);
        }
    }

    /// Closes request `id` of `requests` if it is still open.
    fn close<R: Request>(&self, requests: &Requests<R>, id: &str, how: R::How) {
        if let Some(frame) = requests.close(id, how, &self.run_id) {
            self.publish(frame);
        }
    }

    /// Answers question `question_id` of this run.
    pub fn answer_question(&self, question_id: &str, answer: &str) -> Result<(), SupervisorError> {
        let how = QuestionHow::Answered(answer.to_string());
        let frame = self.questions.answer(question_id, how, &self.run_id)?;
        self.publish(frame);
        Ok(())
    }

    /// Records a new question (random id) and returns its id and where its answer arrives;
    /// the browsers and chats hear of it.
    fn open_question(&self, asked: &Question) -> (String, oneshot::Receiver<QuestionAnswer>) {
        let question_id = format!("q{}", crate::random::hex_id::<8>());
        let Some(inner) = self.supervisor.upgrade() else {
            return (question_id, oneshot::channel().1);
        };
        let redact = |text: &str| inner.redactor.redact(text).into_owned();
        let view = QuestionView {
            question_id: question_id.clone(),
            status: QuestionStatus::Pending,
            question: redact(&asked.question),
            options: asked.options.iter().map(|o| redact(o)).collect(),
        };
        lock(&inner.table)
            .requests
            .insert(question_id.clone(), self.run_id.clone());
        let rx = self.questions.open(view.clone());
        inner.publish(
            self,
            Event::ClarifyRequested(ClarifyRequested {
                run_id: self.run_id.clone(),
                question_id: question_id.clone(),
                question: view.question,
                options: view.options,
            }),
        );
        (question_id, rx)
    }

    /// Answers approval `approval_id` of this run.
    pub fn answer(&self, approval_id: &str, approve: bool) -> Result<(), SupervisorError> {
        let how = if approve {
            Closing::Approved
        } else {
            Closing::Denied
        };
        let frame = self.approvals.answer(approval_id, how, &self.run_id)?;
        self.publish(frame);
        Ok(())
    }

    /// Records a new approval (random id) and returns its id and where its answer arrives;
    /// the browsers and chats hear of it.
    fn open_approval(&self, items: &[ApprovalItem]) -> (String, oneshot::Receiver<ApprovalAnswer>) {
        let approval_id = format!("a{}", crate::random::hex_id::<8>());
        let Some(inner) = self.supervisor.upgrade() else {
            return (approval_id, oneshot::channel().1);
        };
        let redact = |text: &str| inner.redactor.redact(text).into_owned();
        let items: Vec<crate::protocol::ApprovalItem> = items
            .iter()
            .map(|i| crate::protocol::ApprovalItem {
                tool: i.tool.clone(),
                resource: redact(&i.resource),
                class: i.class.to_string(),
                reason: redact(&i.reasons()),
            })
            .collect();
        lock(&inner.table)
            .requests
            .insert(approval_id.clone(), self.run_id.clone());
        let rx = self.approvals.open(ApprovalView {
            approval_id: approval_id.clone(),
            status: ApprovalStatus::Pending,
            items: items.clone(),
        });
        let first = items.first().cloned();
        inner.publish(
            self,
            Event::ApprovalRequested(ApprovalRequested {
                run_id: self.run_id.clone(),
                approval_id: approval_id.clone(),
                tool: first.as_ref().map(|i| i.tool.clone()).unwrap_or_default(),
                resource: first
                    .as_ref()
                    .map(|i| i.resource.clone())
                    .unwrap_or_default(),
                class: first.map(|i| i.class).unwrap_or_default(),
                items,
            }),
        );
        (approval_id, rx)
    }

    /// Records how the run ended, every text redacted.
    fn finish(&self, outcome: &Result<TurnOutcome, RuntimeError>, redactor: &Redactor) {
        let mut state = lock(&self.state);
        state.ended_at = Some(crate::util::timestamp::now_rfc3339());
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                state.status = RunStatus::Failed;
                state.error = Some(redactor.redact(&e.message_without_paths()).into_owned());
                return;
            }
        };
        state.iterations = outcome.run.iterations;
        state.tool_calls = outcome.run.tool_calls;
        state.input_tokens = outcome.run.usage.input_tokens;
        state.output_tokens = outcome.run.usage.output_tokens;
        state.cached_tokens = outcome.run.usage.cache_read_tokens;
        state.partial = outcome.run.partial;
        let redact = |text: &str| redactor.redact(text).into_owned();
        state.summary = outcome.run.summary.as_deref().map(redact);
        (state.status, state.answer, state.error) = match &outcome.run.result {
            Ok(answer) => (RunStatus::Completed, Some(redact(answer)), None),
            Err(RunError::Cancelled) => (RunStatus::Cancelled, None, Some("cancelled".into())),
            Err(e @ RunError::Budget { .. }) => (
                RunStatus::BudgetExceeded,
                None,
                Some(redact(&e.to_string())),
            ),
            Err(e) => (RunStatus::Failed, None, Some(redact(&e.to_string()))),
        };
        if let Some(Err(e)) = &outcome.saved {
            eprintln!(
                "odek: run {}: the session could not be saved: {e}",
                self.run_id
            );
            let e = redact(&e.message_without_paths());
            state.error = Some(match state.error.take() {
                Some(first) => format!("{first}; the session could not be saved: {e}"),
                None => format!("the session could not be saved: {e}"),
            });
        }
    }
}

/// Approvals and questions answered by id through the supervisor.
struct RemoteApprover {
    slot: Arc<RunSlot>,
    timeout: Duration,
    question_timeout: Duration,
}

/// Closes an approval or a question as cancelled when the wait for it is dropped before
/// it was closed (the engine stops waiting at its own cancel, or aborts the call): nothing
/// stays pending after its turn stopped listening. A closed one is left as it is.
struct CloseOnDrop<'a, R: Request> {
    slot: &'a RunSlot,
    requests: &'a Requests<R>,
    id: String,
}

impl<R: Request> Drop for CloseOnDrop<'_, R> {
    fn drop(&mut self) {
        self.slot.close(self.requests, &self.id, R::CANCELLED);
    }
}

impl RemoteApprover {
    /// Waits for request `id`'s answer: closed as expired after `timeout`, as cancelled
    /// when the turn is cancelled or stops waiting.
    async fn wait<R: Request>(
        &self,
        requests: &Requests<R>,
        id: String,
        mut answer: oneshot::Receiver<R::Answer>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<R::Answer> {
        let _closed = CloseOnDrop {
            slot: &self.slot,
            requests,
            id: id.clone(),
        };
        tokio::select! {
            got = &mut answer => return got.ok(),
            () = tokio::time::sleep(timeout) => self.slot.close(requests, &id, R::EXPIRED),
            () = cancel.cancelled() => self.slot.close(requests, &id, R::CANCELLED),
        }
        // Closed just now, or an answer got there first: either way it is in the channel.
        answer.await.ok()
    }
}

#[async_trait::async_trait]
impl Approver for RemoteApprover {
    async fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let (id, answer) = self.slot.open_approval(items);
        self.wait(&self.slot.approvals, id, answer, self.timeout, cancel)
            .await
            .unwrap_or(ApprovalAnswer::Cancelled)
    }

    async fn clarify(&self, question: &Question, cancel: &CancellationToken) -> QuestionAnswer {
        let (id, answer) = self.slot.open_question(question);
        self.wait(
            &self.slot.questions,
            id,
            answer,
            self.question_timeout,
            cancel,
        )
        .await
        .unwrap_or(QuestionAnswer::Cancelled)
    }
}

/// The run's streamed answer as `answer_delta` frames, redacted as a stream (a secret split
/// across deltas is held back until it can be recognised).
struct FrameOutput {
    slot: Arc<RunSlot>,
    stream: Mutex<StreamRedactor>,
}

impl FrameOutput {
    fn send(&self, text: String, restart: bool) {
        if text.is_empty() && !restart {
            return;
        }
        if let Some(inner) = self.slot.supervisor.upgrade() {
            inner.publish(
                &self.slot,
                Event::AnswerDelta(AnswerDelta {
                    run_id: self.slot.run_id.clone(),
                    text,
                    restart,
                }),
            );
        }
    }
}

impl Observer for FrameOutput {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::Delta {
                delta: Delta::Content(text),
                ..
            } => {
                let out = lock(&self.stream).push(text);
                self.send(out, false);
            }
            EngineEvent::Delta {
                delta: Delta::Restart,
                ..
            } => {
                lock(&self.stream).reset();
                self.send(String::new(), true);
            }
            EngineEvent::ModelCallFinished { .. } | EngineEvent::RunFinished { .. } => {
                let out = lock(&self.stream).finish();
                self.send(out, false);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
