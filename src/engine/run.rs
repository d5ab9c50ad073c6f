//! The ReAct loop: ask the model, run the tool calls it requests (in parallel, results in call
//! order), feed the results back, until it answers without tools or a limit is reached.

pub mod attachments;
mod batch;
mod compaction;
pub mod context;
mod error;
mod fit;
mod hints;
pub mod observer;
pub mod output;
mod summary;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::llm::{ChatModel, ChatRequest, Message, Usage};
use crate::plan::{PlanActivity, PlanPlacement, PlanState, PlanStore};
use crate::redact::Redactor;
use crate::tools::ToolRegistry;
use crate::tools::approval::Gate;
use crate::transcript::TranscriptDelta;
pub use error::RunError;
use hints::HintTracker;
pub use observer::{EngineEvent, Fanout, NoopObserver, Observer};

/// How long a cancelled batch may take to wind down before its tools are abandoned.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// What bounds one batch of tool calls: the run's deadline, and what is left of its cost
/// budget (for a tool that runs models of its own).
struct BatchLimits {
    deadline: Option<Instant>,
    cost_left: Option<crate::tools::CostLeft>,
}

/// The source of [`EngineEvent::ContentIngested`] for an image of the input (its content is
/// the image's `data:` URL).
pub const IMAGE_SOURCE: &str = "image";

/// Saves what changed: called at the start of a run when there is anything unsaved, after
/// every tool batch, and after the final answer, with the edits made since the previous call
/// (never the whole history). Called on a blocking thread; an error is reported and the run
/// goes on.
pub type PersistFn = Arc<dyn Fn(TranscriptDelta) -> Result<(), PersistError> + Send + Sync>;

/// Why a save failed (the session store's error; the engine only reports it).
pub type PersistError = Box<dyn std::error::Error + Send + Sync>;

/// What a run starts from.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// System prompt, history and the new input.
    pub messages: Vec<Message>,
    /// How many of `messages` are saved already; the rest is saved when the run starts.
    pub saved_len: usize,
    /// The plan's structured state saved with the conversation; `None` = rebuild the plan
    /// from the newest plan message that parses (transcripts of the Go original).
    pub saved_plan: Option<PlanState>,
    /// `startup` or `resume` when this run starts the session in this process (the
    /// `SessionStart` hooks run), else `None`.
    pub session_start: Option<&'static str>,
}

impl Conversation {
    /// A conversation of which nothing is saved yet and no plan state is known.
    pub fn new(messages: Vec<Message>) -> Self {
        Conversation {
            messages,
            saved_len: 0,
            saved_plan: None,
            session_start: Some("startup"),
        }
    }
}

/// Execution budgets; 0 = no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budgets {
    /// Wall-clock seconds.
    pub max_runtime_seconds: u64,
    /// Tool calls.
    pub max_tool_calls: u64,
    /// Input tokens.
    pub max_input_tokens: u64,
    /// Output tokens.
    pub max_output_tokens: u64,
    /// US dollars, at `price`.
    pub max_cost_usd: f64,
    /// The model's price, when known: the run's cost is reported, and `max_cost_usd` holds.
    pub price: Option<crate::llm::pricing::Price>,
}

/// Loop settings, all resolved from the configuration.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Model calls per run before the partial summary.
    pub max_iterations: u32,
    /// Tool calls of one batch running at once.
    pub max_tool_parallel: usize,
    /// Ask for streamed answers.
    pub stream: bool,
    /// Execution budgets.
    pub budgets: Budgets,
    /// Working directory of the tools.
    pub cwd: std::path::PathBuf,
    /// Context window in tokens; 0 = ask the model client (discovery, profile table).
    pub context_window: u64,
    /// Summarise dropped turns into a rolling digest.
    pub compaction: bool,
    /// Where requests carry the plan message.
    pub plan_placement: PlanPlacement,
    /// The model takes images: messages' images go as image parts (else a note says how
    /// many were left out).
    pub images: bool,
}

/// The plan's step counts when a limit ended the run (`data.remaining` of the terminal
/// event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RemainingSteps {
    /// Steps in the plan.
    pub steps: usize,
    /// Steps not started.
    pub pending: usize,
    /// Steps in progress.
    pub in_progress: usize,
    /// Blocked steps.
    pub blocked: usize,
}

impl RemainingSteps {
    fn of(plan: &PlanState) -> Self {
        let c = plan.counts();
        RemainingSteps {
            steps: plan.steps.len(),
            pending: c.pending,
            in_progress: c.in_progress,
            blocked: c.blocked,
        }
    }
}

/// What a run did with its plan: the store's activity, the final step counts and the bytes
/// of plan message sent to the model (saved with the session, rolled up by `odek usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanTelemetry {
    /// Creates, updates, blocked transitions and streaks.
    pub activity: PlanActivity,
    /// Steps done at the end of the run.
    pub steps_done: u64,
    /// Steps in the plan at the end of the run.
    pub steps_total: u64,
    /// Bytes of plan message carried by the run's requests.
    pub plan_bytes_sent: u64,
}

/// How a run ended, with everything the caller needs to save and report it.
#[derive(Debug)]
pub struct RunOutcome {
    /// The final transcript (what was saved).
    pub messages: Vec<Message>,
    /// The plan's final state (`None` when planning is off).
    pub plan: Option<PlanState>,
    /// The answer, or why there is none.
    pub result: Result<String, RunError>,
    /// True when the answer is the partial summary made at the iteration cap.
    pub partial: bool,
    /// The closing summary when a limit ended the run without an answer (`result` is the
    /// error; the summary is the transcript's last message): a budget, or the iteration cap
    /// when the model could not report but the plan has open steps.
    pub summary: Option<String>,
    /// Tokens used by the run.
    pub usage: Usage,
    /// What they cost in US dollars, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// Iterations made.
    pub iterations: u32,
    /// Tool calls made.
    pub tool_calls: u64,
    /// What the run did with its plan (`None` when planning is off).
    pub plan_telemetry: Option<PlanTelemetry>,
    /// Wall time.
    pub duration: Duration,
    /// Why the model stopped writing the final answer, when not of its own accord.
    pub answer_cut: Option<AnswerCut>,
}

/// A final answer the model did not end itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerCut {
    /// The output-token limit (`finish_reason: "length"`): the answer is cut short.
    Length,
    /// The provider's filter or the model's refusal (`finish_reason: "content_filter"`).
    Refusal,
}

impl AnswerCut {
    /// The cut a final answer's `finish_reason` says, if any.
    fn of(finish_reason: Option<&str>) -> Option<AnswerCut> {
        match finish_reason? {
            "length" => Some(AnswerCut::Length),
            "content_filter" => Some(AnswerCut::Refusal),
            _ => None,
        }
    }
}

/// The loop with everything it drives.
pub struct Engine {
    model: Arc<dyn ChatModel>,
    tools: Arc<ToolRegistry>,
    gate: Arc<Gate>,
    plan: Option<Arc<PlanStore>>,
    redactor: Arc<Redactor>,
    observer: Arc<dyn Observer>,
    settings: EngineSettings,
    taint: Arc<crate::tools::Taint>,
    turn_block: Option<Message>,
    checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    hooks: Option<crate::hooks::HookRun>,
    jobs: Option<Arc<crate::tools::background::Jobs>>,
    files: Option<Arc<dyn crate::tools::EditorFiles>>,
}

/// The parts an engine is built from (see `runtime::Runtime::turn`).
pub struct EngineParts {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// The tools.
    pub tools: Arc<ToolRegistry>,
    /// The approval gate.
    pub gate: Arc<Gate>,
    /// The plan store shared with the `plan` tool; `None` = planning off.
    pub plan: Option<Arc<PlanStore>>,
    /// Secret redaction for tool output.
    pub redactor: Arc<Redactor>,
    /// Who hears about the run.
    pub observer: Arc<dyn Observer>,
    /// Settings.
    pub settings: EngineSettings,
    /// Marked when a tool brings in external content (shared with the `memory` tool).
    pub taint: Arc<crate::tools::Taint>,
    /// The turn's frozen block — the skills listing and the memory facts — sent right after
    /// the system prompt in every request and never kept in the transcript (see
    /// `skills::block`, `memory::block`).
    pub turn_block: Option<String>,
    /// The session's checkpoints, taken by the file tools (none: nothing to rewind to).
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The user's hooks around tool calls (none: no hooks configured).
    pub hooks: Option<crate::hooks::HookRun>,
    /// The session's background jobs: the notice of each that ended goes into the next
    /// model request.
    pub jobs: Option<Arc<crate::tools::background::Jobs>>,
    /// The editor's files, when the surface offers them (the file tools go through it).
    pub files: Option<Arc<dyn crate::tools::EditorFiles>>,
}

/// Most final answers of one run a `Stop` hook may refuse (a hook that refuses every answer
/// would otherwise hold the run until its iteration cap).
const MAX_STOP_REFUSALS: u32 = 8;

struct RunState {
    ctx: context::Context,
    /// Plan version of the last save (`None` = no plan state saved yet).
    saved_plan_version: Option<u64>,
    usage: Usage,
    tool_calls: u64,
    iterations: u32,
    hints: HintTracker,
    started: Instant,
    partial: bool,
    plan_bytes_sent: u64,
    /// Final answers a `Stop` hook refused in this run.
    stop_refusals: u32,
    /// How the last final answer was cut, if it was.
    answer_cut: Option<AnswerCut>,
}

enum Step {
    Continue,
    Done(String),
}

impl Engine {
    /// Assembles an engine.
    pub fn new(parts: EngineParts) -> Self {
        Engine {
            model: parts.model,
            tools: parts.tools,
            gate: parts.gate,
            plan: parts.plan,
            redactor: parts.redactor,
            observer: parts.observer,
            settings: parts.settings,
            taint: parts.taint,
            turn_block: parts.turn_block.map(Message::system),
            checkpoints: parts.checkpoints,
            hooks: parts.hooks,
            jobs: parts.jobs,
            files: parts.files,
        }
    }

    /// The wrapped attachments of the new input (`--ctx` files, `@path`) for the audit log:
    /// the unsaved messages, and on a conversation's first run (nothing answered yet) its
    /// saved head too (a new session saves its `--ctx` message before the run).
    fn report_input_ingests(&self, conversation: &Conversation) {
        let saved =
            &conversation.messages[..conversation.saved_len.min(conversation.messages.len())];
        let first_run = !saved.iter().any(|m| m.role == crate::llm::Role::Assistant);
        let from = if first_run { 0 } else { saved.len() };
        let new = conversation.messages.iter().skip(from);
        let input =
            |m: &&Message| matches!(m.role, crate::llm::Role::User | crate::llm::Role::System);
        for message in new.filter(input) {
            for wrapper in crate::untrusted::wrappers(&message.content) {
                self.observer.on_event(&EngineEvent::ContentIngested {
                    iteration: 0,
                    source: wrapper.source,
                    content: wrapper.body,
                });
            }
            // Images are never wrapped; the audit logs each as its data URL's size and hash.
            for image in &message.images {
                self.observer.on_event(&EngineEvent::ContentIngested {
                    iteration: 0,
                    source: IMAGE_SOURCE,
                    content: &image.url,
                });
            }
        }
    }

    /// The plan store, when planning is on.
    pub fn plan_store(&self) -> Option<&Arc<PlanStore>> {
        self.plan.as_ref()
    }

    /// Runs the loop over the conversation (system prompt, history, the new user message)
    /// until a final answer, an error, a budget, or `cancel`. What changed is persisted when
    /// the run starts (the unsaved input), after every tool batch and at the end; a failed
    /// run saves what it has.
    pub async fn run(
        &self,
        conversation: Conversation,
        persist: Option<PersistFn>,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let window = self.context_window().await;
        self.report_input_ingests(&conversation);
        let mut ctx =
            context::Context::new(conversation.messages, window.as_ref().map(|w| w.tokens));
        if let Some(block) = &self.turn_block {
            ctx.reserve(context::estimate_message(block));
        }
        if persist.is_some() {
            ctx.track_edits(conversation.saved_len);
        }
        let mut state = RunState {
            ctx,
            saved_plan_version: conversation.saved_plan.as_ref().map(|p| p.version),
            usage: Usage::default(),
            tool_calls: 0,
            iterations: 0,
            hints: HintTracker::default(),
            started: Instant::now(),
            partial: false,
            plan_bytes_sent: 0,
            stop_refusals: 0,
            answer_cut: None,
        };
        self.observer.on_event(&EngineEvent::RunStarted {
            model: self.model.model_name(),
            max_iterations: self.settings.max_iterations,
            context_window: window.as_ref(),
        });
        if let Some(store) = &self.plan {
            state.ctx.sync_plan(store, conversation.saved_plan);
            self.refresh_plan(&mut state);
        }
        if let Some(source) = conversation.session_start {
            self.session_start_hooks(&mut state, source).await;
        }
        let blocked = self.prompt_hooks(&mut state).await;
        self.persist_if_changed(persist.as_ref(), &mut state).await;
        let result = match blocked {
            Some(reason) => Err(RunError::PromptBlocked(reason)),
            None => self.run_loop(&mut state, persist.as_ref(), &cancel).await,
        };
        let (result, summary) = self
            .close(&mut state, result, persist.as_ref(), &cancel)
            .await;
        let remaining = self.remaining_if_limited(&state, &result);
        let duration = state.started.elapsed();
        let cost_usd = self
            .settings
            .budgets
            .price
            .map(|p| p.cost_usd(&state.usage));
        self.observer.on_event(&EngineEvent::RunFinished {
            result: &result,
            usage: &state.usage,
            duration,
            iterations: state.iterations,
            remaining,
            summary: summary.as_deref(),
            cost_usd,
        });
        RunOutcome {
            plan: self.plan.as_ref().map(|p| p.snapshot()),
            plan_telemetry: self.plan_telemetry(&state),
            messages: state.ctx.into_messages(),
            result,
            partial: state.partial,
            summary,
            cost_usd,
            usage: state.usage,
            iterations: state.iterations,
            tool_calls: state.tool_calls,
            duration,
            answer_cut: state.answer_cut,
        }
    }

    /// The end of a run that did not answer: every failure leaves a valid transcript,
    /// saved. A limit (the iteration cap, a budget) gets its closing summary as the
    /// transcript's last message: at the iteration cap a report from the model is the
    /// run's answer (`partial`); otherwise the run fails and the summary goes along.
    async fn close(
        &self,
        state: &mut RunState,
        result: Result<String, RunError>,
        persist: Option<&PersistFn>,
        cancel: &CancellationToken,
    ) -> (Result<String, RunError>, Option<String>) {
        let Err(mut error) = result else {
            return (result, None);
        };
        state.ctx.drop_unanswered_tool_calls();
        let mut summary = None;
        if let Some(limit) = summary::Limit::of(&error) {
            match self.closing_summary(state, limit, cancel).await {
                Ok(Some(closing)) => {
                    state.ctx.push(Message::assistant(closing.text.clone()));
                    if closing.reported && matches!(limit, summary::Limit::Iterations) {
                        state.partial = true;
                        self.persist(persist, state).await;
                        return (Ok(closing.text), None);
                    }
                    summary = Some(closing.text);
                }
                Ok(None) => {}
                Err(cancelled) => error = cancelled,
            }
        }
        self.persist(persist, state).await;
        (Err(error), summary)
    }

    /// The plan's counts when a limit ended the run and there is a plan.
    fn remaining_if_limited(
        &self,
        state: &RunState,
        result: &Result<String, RunError>,
    ) -> Option<RemainingSteps> {
        let limited = state.partial
            || matches!(
                result,
                Err(RunError::MaxIterations(_) | RunError::Budget { .. })
            );
        let plan = self.plan.as_ref()?.snapshot();
        (limited && plan.version > 0 && !plan.steps.is_empty()).then(|| RemainingSteps::of(&plan))
    }

    fn plan_telemetry(&self, state: &RunState) -> Option<PlanTelemetry> {
        let store = self.plan.as_ref()?;
        let plan = store.snapshot();
        Some(PlanTelemetry {
            activity: store.activity(),
            steps_done: plan.counts().done as u64,
            steps_total: plan.steps.len() as u64,
            plan_bytes_sent: state.plan_bytes_sent,
        })
    }

    async fn run_loop(
        &self,
        state: &mut RunState,
        persist: Option<&PersistFn>,
        cancel: &CancellationToken,
    ) -> Result<String, RunError> {
        let deadline = self.deadline(state.started);
        // Tools get a child token so a runtime budget can stop them without cancelling the
        // caller's token.
        let tool_cancel = cancel.child_token();
        for i in 1..=self.settings.max_iterations {
            state.iterations = i;
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled);
            }
            self.check_runtime(state, deadline)?;
            match self
                .iterate(i, state, persist, cancel, &tool_cancel, deadline)
                .await?
            {
                Step::Continue => {}
                Step::Done(answer) => return Ok(answer),
            }
        }
        Err(RunError::MaxIterations(self.settings.max_iterations))
    }

    async fn iterate(
        &self,
        iteration: u32,
        state: &mut RunState,
        persist: Option<&PersistFn>,
        cancel: &CancellationToken,
        tool_cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Result<Step, RunError> {
        self.background_notices(iteration, state);
        self.fit_context(state, cancel).await;
        let answer = self
            .call_model_surviving(iteration, state, cancel, deadline)
            .await?;
        let cut_off = answer.finish_reason.as_deref() == Some("length");
        let mut message = answer.message;
        assign_missing_call_ids(&mut message, iteration);
        if message.tool_calls.is_empty() {
            state.answer_cut = AnswerCut::of(answer.finish_reason.as_deref());
            let answer = message.content.clone();
            state.ctx.push(message);
            let sent_back = self.stop_hooks(iteration, state, &answer).await;
            self.iteration_completed(iteration, state, 0);
            self.persist(persist, state).await;
            return Ok(match sent_back {
                true => Step::Continue,
                false => Step::Done(answer),
            });
        }
        self.check_token_budgets(state)?;
        self.check_tool_budget(state, message.tool_calls.len())?;
        // The calls as the model sent them run (or are refused); the transcript keeps `{}`
        // for arguments that are not JSON, which servers refuse to read back.
        let calls = message.tool_calls.clone();
        batch::replace_invalid_arguments(&mut message);
        state.ctx.push(message);
        state.tool_calls += calls.len() as u64;
        let limits = BatchLimits {
            deadline,
            cost_left: self.cost_left(state),
        };
        let (results, spent) = self
            .run_batch_until(iteration, &calls, cut_off, cancel, tool_cancel, limits)
            .await;
        // What the calls spent on models of their own (sub-agents) counts as the run's.
        state.usage.add(&spent);
        self.append_results(iteration, state, &calls, results);
        self.refresh_plan(state);
        self.persist(persist, state).await;
        self.iteration_completed(iteration, state, calls.len());
        if cancel.is_cancelled() {
            return Err(RunError::Cancelled);
        }
        self.check_runtime(state, deadline)?;
        // Sub-agents' tokens may have used a token budget up: the run stops before its next
        // model call rather than after it.
        self.check_token_budgets(state)?;
        Ok(Step::Continue)
    }

    /// Runs the `SessionStart` hooks (`source`: `startup` or `resume`): what they say is
    /// added to the prompt for the model.
    async fn session_start_hooks(&self, state: &mut RunState, source: &str) {
        use crate::hooks::HookEvent;
        let Some(hooks) = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::SessionStart, None))
        else {
            return;
        };
        let mut fields = serde_json::Map::new();
        fields.insert("source".into(), source.into());
        let (outcome, reports) = hooks.fire(HookEvent::SessionStart, None, fields).await;
        for report in &reports {
            self.observer.on_event(&EngineEvent::Hook {
                iteration: 0,
                report,
            });
        }
        for text in outcome.context {
            let text = self.redactor.redact(&text);
            state.ctx.append_to_prompt(&format!("[hook] {text}"));
        }
    }

    /// Runs the `UserPromptSubmit` hooks on the turn's prompt: their context is added to
    /// it; a block's reason is returned (the model is then not asked).
    async fn prompt_hooks(&self, state: &mut RunState) -> Option<String> {
        use crate::hooks::{Decision, HookEvent};
        let hooks = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::UserPromptSubmit, None))?;
        let prompt = state.ctx.prompt_text()?.to_string();
        let mut fields = serde_json::Map::new();
        fields.insert("prompt".into(), prompt.into());
        let (outcome, reports) = hooks.fire(HookEvent::UserPromptSubmit, None, fields).await;
        for report in &reports {
            self.observer.on_event(&EngineEvent::Hook {
                iteration: 0,
                report,
            });
        }
        if let Decision::Block(reason) = outcome.decision {
            return Some(self.redactor.redact(&reason).into_owned());
        }
        for text in outcome.context {
            let text = self.redactor.redact(&text);
            state.ctx.append_to_prompt(&format!("[hook] {text}"));
        }
        None
    }

    /// Runs the `Stop` hooks on a final answer; true when one sent the model back to work
    /// (its reason is then the transcript's last message). `stop_hook_active` tells a hook
    /// that this answer follows one of its refusals, as in Claude Code.
    /// The background jobs that ended since the last request: a system message each, the
    /// last lines of its output wrapped as untrusted (they are what a command printed).
    fn background_notices(&self, iteration: u32, state: &mut RunState) {
        let Some(jobs) = &self.jobs else {
            return;
        };
        for ended in jobs.take_notices() {
            let mut text = crate::tools::background::notice(&ended);
            let tail = self.redactor.redact(&ended.tail);
            if !tail.trim().is_empty() {
                let source = format!(
                    "$ {} (job {}, last lines)",
                    crate::text::first_line(&ended.command, 200),
                    ended.id
                );
                let source = self.redactor.redact(&source).into_owned();
                self.observer.on_event(&EngineEvent::ContentIngested {
                    iteration,
                    source: &source,
                    content: &tail,
                });
                self.taint.mark_files(crate::tools::background::TOOL_NAME);
                text.push_str(" Its last lines:\n");
                text.push_str(&crate::untrusted::wrap(&source, &tail));
            }
            state.ctx.push(Message::system(text));
        }
    }

    async fn stop_hooks(&self, iteration: u32, state: &mut RunState, answer: &str) -> bool {
        use crate::hooks::{Decision, HookEvent};
        let Some(hooks) = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::Stop, None))
        else {
            return false;
        };
        let mut fields = serde_json::Map::new();
        fields.insert("stop_hook_active".into(), state.stop_refusals.gt(&0).into());
        fields.insert(
            "last_assistant_message".into(),
            self.redactor.redact(answer).into_owned().into(),
        );
        let (outcome, reports) = hooks.fire(HookEvent::Stop, None, fields).await;
        for report in &reports {
            self.observer
                .on_event(&EngineEvent::Hook { iteration, report });
        }
        let Decision::Block(reason) = outcome.decision else {
            return false;
        };
        if state.stop_refusals >= MAX_STOP_REFUSALS {
            tracing::warn!(
                "a Stop hook refused the answer {MAX_STOP_REFUSALS} times; the run ends"
            );
            return false;
        }
        state.stop_refusals += 1;
        state.ctx.push(Message::system(format!(
            "[hook] A Stop hook did not accept this answer and sent you back to work: {}",
            self.redactor.redact(&reason)
        )));
        true
    }

    /// One model call, raced against cancellation and the runtime budget.
    async fn call_model(
        &self,
        iteration: u32,
        state: &mut RunState,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Result<crate::llm::ChatResponse, RunError> {
        self.observer
            .on_event(&EngineEvent::ModelCallStarted { iteration });
        state.ctx.note_request_estimate(self.tools.defs());
        let observer = &self.observer;
        let on_retry = |n: &crate::llm::RetryNotice| {
            observer.on_event(&EngineEvent::ModelRetry {
                attempt: n.attempt,
                max_attempts: n.max_attempts,
                wait: n.wait,
                reason: &n.reason,
                discards_partial_answer: n.discards_partial_answer,
            })
        };
        // Without a plan store there is no current plan: the transcript goes as it is.
        let messages = match self.plan {
            Some(_) => {
                let (messages, plan_bytes) =
                    state.ctx.request_messages(self.settings.plan_placement);
                state.plan_bytes_sent += plan_bytes;
                messages
            }
            None => crate::llm::RequestMessages::new(state.ctx.messages()),
        }
        .with_second(self.turn_block.as_ref())
        .with_images(self.settings.images);
        let request = ChatRequest {
            messages,
            tools: self.tools.defs(),
            stream: self.settings.stream,
            max_tokens: None,
            on_retry: Some(&on_retry),
        };
        let streamed = std::sync::atomic::AtomicBool::new(false);
        let sink = |delta: crate::llm::Delta<'_>| {
            streamed.store(true, std::sync::atomic::Ordering::Relaxed);
            observer.on_event(&EngineEvent::Delta { iteration, delta });
        };
        let call = self.model.complete(&request, Some(&sink));
        let response = tokio::select! {
            r = call => r,
            _ = cancel.cancelled() => return Err(RunError::Cancelled),
            _ = sleep_until(deadline) => return Err(self.runtime_exceeded(state)),
        };
        let response = response.map_err(|error| RunError::Model { iteration, error })?;
        state.usage.add(&response.usage);
        if state.ctx.calibrate(response.usage.input_tokens) {
            tracing::debug!("token estimate ran low; context budget lowered to 65% of the window");
        }
        self.observer.on_event(&EngineEvent::ModelCallFinished {
            iteration,
            message: &response.message,
            usage: &response.usage,
            streamed: streamed.load(std::sync::atomic::Ordering::Relaxed),
        });
        Ok(response)
    }

    async fn run_batch_until(
        &self,
        iteration: u32,
        calls: &[crate::llm::ToolCall],
        cut_off: bool,
        cancel: &CancellationToken,
        tool_cancel: &CancellationToken,
        limits: BatchLimits,
    ) -> (Vec<batch::CallResult>, Usage) {
        let BatchLimits {
            deadline,
            cost_left,
        } = limits;
        // What the calls spend on models of their own (sub-agents' tokens).
        let spent = Arc::new(std::sync::Mutex::new(Usage::default()));
        let batch = self.run_batch(iteration, calls, cut_off, tool_cancel, &spent, cost_left);
        tokio::pin!(batch);
        let stopped = tokio::select! {
            r = &mut batch => Some(r),
            _ = cancel.cancelled() => None,
            _ = sleep_until(deadline) => {
                tool_cancel.cancel();
                None
            }
        };
        // Cancelled: tools see the token and stop; their results still answer every call. A tool
        // that ignores the token is abandoned (and aborted) after a short grace period.
        let results = match stopped {
            Some(results) => results,
            None => match tokio::time::timeout(CANCEL_GRACE, &mut batch).await {
                Ok(results) => results,
                Err(_) => batch::cancelled_results(calls),
            },
        };
        let spent = spent.lock().map(|u| *u).unwrap_or_default();
        (results, spent)
    }

    fn append_results(
        &self,
        iteration: u32,
        state: &mut RunState,
        calls: &[crate::llm::ToolCall],
        results: Vec<batch::CallResult>,
    ) {
        let mut hints = Vec::new();
        for (call, result) in calls.iter().zip(results) {
            if let Some(h) = state.hints.observe(
                &call.function.name,
                &call.function.arguments,
                result.ok,
                &result.message.content,
            ) && !hints.contains(&h)
            {
                hints.push(h);
            }
            state.ctx.push(result.message);
        }
        if let Some(store) = &self.plan
            && store.take_blocked_streak()
        {
            hints.push(hints::BLOCKED_STREAK_HINT.to_string());
        }
        if !hints.is_empty() {
            if let Some(suffix) = self
                .plan
                .as_ref()
                .and_then(|p| hints::plan_suffix(&p.snapshot()))
            {
                hints.push(suffix);
            }
            let text = hints.join("\n");
            self.observer.on_event(&EngineEvent::Hint {
                iteration,
                text: &text,
            });
            state.ctx.push(Message::system(text));
        }
    }

    fn iteration_completed(&self, iteration: u32, state: &RunState, tools_called: usize) {
        self.observer.on_event(&EngineEvent::IterationCompleted {
            iteration,
            usage: &state.usage,
            tools_called,
        });
    }

    /// Saves what changed since the previous save (the edits and, when its version moved,
    /// the plan state) and reports it, even when nothing changed, so every batch shows up in
    /// the event stream.
    async fn persist(&self, persist: Option<&PersistFn>, state: &mut RunState) {
        self.save_changes(persist, state, true).await;
    }

    /// Like [`Self::persist`] at the start of a run: only when there is something unsaved
    /// (the new input, a plan restored from the transcript), and unreported when it works.
    async fn persist_if_changed(&self, persist: Option<&PersistFn>, state: &mut RunState) {
        self.save_changes(persist, state, false).await;
    }

    async fn save_changes(
        &self,
        persist: Option<&PersistFn>,
        state: &mut RunState,
        report_success: bool,
    ) {
        let Some(persist) = persist.cloned() else {
            return;
        };
        let delta = self.take_delta(state);
        if delta.is_empty() && !report_success {
            return;
        }
        let count = delta.len;
        let saved = tokio::task::spawn_blocking(move || persist(delta))
            .await
            .map_err(PersistError::from)
            .and_then(|r| r);
        match saved {
            Ok(()) if report_success => self.observer.on_event(&EngineEvent::SessionSaved {
                message_count: count,
            }),
            Ok(()) => {}
            Err(error) => self.observer.on_event(&EngineEvent::SessionSaveFailed {
                error: &error.to_string(),
            }),
        }
    }

    fn take_delta(&self, state: &mut RunState) -> TranscriptDelta {
        let plan = self
            .plan
            .as_ref()
            .map(|store| store.snapshot())
            .filter(|p| state.saved_plan_version != Some(p.version) && p.version > 0);
        if let Some(p) = &plan {
            state.saved_plan_version = Some(p.version);
        }
        TranscriptDelta {
            edits: state.ctx.take_edits(),
            len: state.ctx.len(),
            plan,
        }
    }

    fn deadline(&self, started: Instant) -> Option<Instant> {
        match self.settings.budgets.max_runtime_seconds {
            0 => None,
            secs => Some(started + Duration::from_secs(secs)),
        }
    }

    fn check_runtime(&self, state: &RunState, deadline: Option<Instant>) -> Result<(), RunError> {
        match deadline {
            Some(d) if Instant::now() >= d => Err(self.runtime_exceeded(state)),
            _ => Ok(()),
        }
    }

    fn runtime_exceeded(&self, state: &RunState) -> RunError {
        self.budget_exceeded(
            "runtime",
            state.started.elapsed().as_secs(),
            self.settings.budgets.max_runtime_seconds,
        )
    }

    /// What is left of `max_cost_usd` after what the run has spent (none: no cost budget, or
    /// the model's price is unknown).
    fn cost_left(&self, state: &RunState) -> Option<crate::tools::CostLeft> {
        let b = &self.settings.budgets;
        let price = b.price.filter(|_| b.max_cost_usd > 0.0)?;
        Some(crate::tools::CostLeft {
            usd: (b.max_cost_usd - price.cost_usd(&state.usage)).max(0.0),
            price,
        })
    }

    fn check_token_budgets(&self, state: &RunState) -> Result<(), RunError> {
        let b = &self.settings.budgets;
        if let (Some(price), true) = (b.price, b.max_cost_usd > 0.0) {
            let spent = price.cost_usd(&state.usage);
            if spent > b.max_cost_usd {
                return Err(self.budget_exceeded(
                    "cost_microusd",
                    crate::llm::pricing::microdollars(spent),
                    crate::llm::pricing::microdollars(b.max_cost_usd),
                ));
            }
        }
        if b.max_input_tokens > 0 && state.usage.input_tokens > b.max_input_tokens {
            return Err(self.budget_exceeded(
                "input_tokens",
                state.usage.input_tokens,
                b.max_input_tokens,
            ));
        }
        if b.max_output_tokens > 0 && state.usage.output_tokens > b.max_output_tokens {
            return Err(self.budget_exceeded(
                "output_tokens",
                state.usage.output_tokens,
                b.max_output_tokens,
            ));
        }
        Ok(())
    }

    fn check_tool_budget(&self, state: &RunState, batch: usize) -> Result<(), RunError> {
        let max = self.settings.budgets.max_tool_calls;
        let wanted = state.tool_calls + batch as u64;
        if max > 0 && wanted > max {
            return Err(self.budget_exceeded("tool_calls", wanted, max));
        }
        Ok(())
    }

    fn budget_exceeded(&self, limit: &'static str, observed: u64, max: u64) -> RunError {
        self.observer.on_event(&EngineEvent::BudgetExceeded {
            limit,
            observed,
            max,
        });
        RunError::Budget {
            limit,
            observed,
            max,
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Gives every tool call an id (`call_<iteration>_<n>`) when the provider sent none, so each
/// result can answer its call.
fn assign_missing_call_ids(message: &mut Message, iteration: u32) {
    for (n, call) in message.tool_calls.iter_mut().enumerate() {
        if call.id.trim().is_empty() {
            call.id = format!("call_{iteration}_{n}");
        }
    }
}

#[cfg(test)]
mod tests;
