//! The loop: a run from its start (hooks, the plan restored, the input saved) through its
//! iterations — fit the context, ask the model, run the tool batch, append the results and
//! hints, save — to its end (the closing summary of a limit, the outcome).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::batch;
use super::context;
use super::error::RunError;
use super::hints::{self, HintTracker};
use super::model_call::sleep_until;
use super::observer::{EngineEvent, IMAGE_SOURCE};
use super::outcome::{AnswerCut, Conversation, PlanTelemetry, RemainingSteps, RunOutcome};
use super::parts::{Engine, RunState};
use super::persist::PersistFn;
use super::summary;
use crate::llm::{Message, Usage};

/// How long a cancelled batch may take to wind down before its tools are abandoned.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// What bounds one batch of tool calls: the run's deadline, and what is left of its cost
/// budget (for a tool that runs models of its own).
struct BatchLimits {
    deadline: Option<Instant>,
    cost_left: Option<crate::tools::CostLeft>,
}

enum Step {
    Continue,
    Done(String),
}

impl Engine {
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
        if let Some(notes) = &self.notes {
            notes.seen(&conversation.messages);
        }
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
            summary_spent: false,
            spent_usd: 0.0,
            unpriced: self.settings.budgets.price.is_none(),
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
        let cost_usd = state.cost_usd();
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
        self.take_steers(iteration, state);
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
        state.charge(&spent, self.settings.budgets.price);
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

    /// Appends the steer messages waiting for this request (see `steer.rs`).
    fn take_steers(&self, iteration: u32, state: &mut RunState) {
        let Some(steering) = &self.steering else {
            return;
        };
        for text in steering.take(iteration) {
            state.ctx.push(super::steer_message(&text));
        }
    }

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
