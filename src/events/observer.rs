//! Engine events → `odek.event/v1` events (typed in [`crate::protocol`]).

use sha2::{Digest, Sha256};

use super::Emitter;
use crate::engine::{EngineEvent, Observer, RemainingSteps};
use crate::plan::PlanEvent;
use crate::protocol::{
    BackgroundFinished, BudgetExceeded, CheckpointFile, CheckpointTaken, Compacted,
    CompactionStarted, ContextTrimmed, Event, HookRan, IterationCompleted, PlanBlocked,
    PlanCreated, PlanUpdated, Remaining, RunCompleted, RunFailed, RunStarted, SessionSaved,
    SubagentFinished, SubagentStarted, ToolCallCompleted, ToolCallFailed, ToolCallStarted,
};
use crate::tools::ToolReport;

/// Observes a run and writes its event stream.
pub struct EventsObserver {
    emitter: Emitter,
    sandbox: bool,
}

impl EventsObserver {
    /// An observer writing through `emitter`; `sandbox` tells whether shell commands run
    /// sandboxed (reported in `run_started`).
    pub fn new(emitter: Emitter, sandbox: bool) -> Self {
        EventsObserver { emitter, sandbox }
    }

    /// The callback to hand the plan store: one event per effective mutation, no iteration,
    /// counts and version only.
    pub fn plan_callback(emitter: Emitter) -> Box<dyn Fn(&PlanEvent) + Send + Sync> {
        Box::new(move |event: &PlanEvent| emitter.emit(plan_event(event), None, None))
    }

    fn tool_call_started(
        &self,
        iteration: u32,
        call: &crate::llm::ToolCall,
        summary: Option<&serde_json::Value>,
    ) {
        let args = &call.function.arguments;
        let event = ToolCallStarted {
            call_id: call.id.clone(),
            args_sha256: crate::util::hex::encode(&Sha256::digest(args.as_bytes())),
            args_bytes: args.len(),
            args_summary: summary.cloned(),
            args: self.emitter.options().include_args.then(|| args.clone()),
        };
        self.emitter.emit(
            Event::ToolCallStarted(event),
            Some(iteration),
            Some(&call.function.name),
        );
    }
}

/// A plan store's mutation as its event.
pub fn plan_event(event: &PlanEvent) -> Event {
    match *event {
        PlanEvent::Created { steps, version } => Event::PlanCreated(PlanCreated { steps, version }),
        PlanEvent::Updated {
            steps,
            done,
            in_progress,
            blocked,
            pending,
            version,
        } => Event::PlanUpdated(PlanUpdated {
            steps,
            done,
            in_progress,
            blocked,
            pending,
            version,
        }),
        PlanEvent::Blocked {
            steps,
            blocked,
            version,
        } => Event::PlanBlocked(PlanBlocked {
            steps,
            blocked,
            version,
        }),
    }
}

fn remaining(r: &RemainingSteps) -> Remaining {
    Remaining {
        steps: r.steps,
        pending: r.pending,
        in_progress: r.in_progress,
        blocked: r.blocked,
    }
}

impl Observer for EventsObserver {
    fn on_event(&self, event: &EngineEvent<'_>) {
        let e = &self.emitter;
        match event {
            EngineEvent::RunStarted {
                model,
                max_iterations,
                ..
            } => e.emit(
                Event::RunStarted(RunStarted {
                    model: model.to_string(),
                    max_iterations: *max_iterations,
                    sandbox: self.sandbox,
                }),
                None,
                None,
            ),
            EngineEvent::IterationCompleted {
                iteration,
                usage,
                tools_called,
            } => e.emit(
                Event::IterationCompleted(IterationCompleted {
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cached_tokens: usage.cache_read_tokens,
                    tools_called: *tools_called,
                }),
                Some(*iteration),
                None,
            ),
            EngineEvent::ToolCallStarted {
                iteration,
                call,
                event_summary,
                ..
            } => self.tool_call_started(*iteration, call, *event_summary),
            EngineEvent::ToolReport {
                iteration,
                call,
                report,
            } => {
                let event = match report {
                    ToolReport::SubagentStarted { index, total } => {
                        Event::SubagentStarted(SubagentStarted {
                            call_id: call.id.clone(),
                            index: *index,
                            total: *total,
                        })
                    }
                    ToolReport::SubagentFinished {
                        index,
                        total,
                        status,
                        iterations,
                        tool_calls,
                        input_tokens,
                        output_tokens,
                        duration_ms,
                    } => Event::SubagentFinished(SubagentFinished {
                        call_id: call.id.clone(),
                        index: *index,
                        total: *total,
                        status: status.clone(),
                        iterations: *iterations,
                        tool_calls: *tool_calls,
                        input_tokens: *input_tokens,
                        output_tokens: *output_tokens,
                        duration_ms: *duration_ms,
                    }),
                    ToolReport::Checkpoint(taken) => Event::Checkpoint(CheckpointTaken {
                        call_id: call.id.clone(),
                        number: taken.number,
                        files: taken
                            .files
                            .iter()
                            .map(|(path, change)| CheckpointFile::new(path, change))
                            .collect(),
                        not_covered: taken.not_covered.clone(),
                    }),
                };
                e.emit(event, Some(*iteration), Some(&call.function.name));
            }
            EngineEvent::BackgroundFinished { ended } => e.emit(
                Event::BackgroundFinished(BackgroundFinished {
                    job: ended.id,
                    command: ended.command.clone(),
                    status: ended.status.clone(),
                    exit_code: ended.exit_code,
                    duration_ms: u64::try_from(ended.duration.as_millis()).unwrap_or(u64::MAX),
                }),
                None,
                None,
            ),
            EngineEvent::Hook { iteration, report } => e.emit(
                Event::Hook(HookRan {
                    event: report.event.as_str().to_string(),
                    command: report.command.clone(),
                    decision: report.decision.clone(),
                    duration_ms: report.duration_ms,
                }),
                Some(*iteration),
                None,
            ),
            EngineEvent::ToolCallFinished {
                iteration,
                call,
                ok,
                duration,
                result_bytes,
                ..
            } => {
                let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
                let call_id = call.id.clone();
                let event = if *ok {
                    Event::ToolCallCompleted(ToolCallCompleted {
                        call_id,
                        duration_ms,
                        result_bytes: *result_bytes,
                        artifact_count: 0,
                    })
                } else {
                    Event::ToolCallFailed(ToolCallFailed {
                        call_id,
                        duration_ms,
                        error_class: "tool_error".into(),
                    })
                };
                e.emit(event, Some(*iteration), Some(&call.function.name));
            }
            EngineEvent::SessionSaved { message_count } => e.emit(
                Event::SessionSaved(SessionSaved {
                    message_count: *message_count,
                }),
                None,
                None,
            ),
            EngineEvent::ModelFallback { from, to, reason } => e.emit(
                Event::ModelFallback(crate::protocol::ModelFallback {
                    from: from.to_string(),
                    to: to.to_string(),
                    reason: reason.to_string(),
                }),
                None,
                None,
            ),
            EngineEvent::ContextTrimmed {
                mode,
                dropped_groups,
                truncated_results,
                shortened_attachments,
                overflow,
            } => e.emit(
                Event::ContextTrimmed(ContextTrimmed {
                    mode: mode.to_string(),
                    dropped_groups: *dropped_groups,
                    truncated_results: *truncated_results,
                    shortened_attachments: *shortened_attachments,
                    reason: overflow.map(ToString::to_string),
                }),
                None,
                None,
            ),
            EngineEvent::CompactionStarted { trigger, tokens } => e.emit(
                Event::CompactionStarted(CompactionStarted {
                    trigger: trigger.to_string(),
                    tokens: *tokens,
                }),
                None,
                None,
            ),
            EngineEvent::Compacted {
                mode,
                trigger,
                before_tokens,
                after_tokens,
                removed_messages,
            } => e.emit(
                Event::Compacted(Compacted {
                    mode: mode.to_string(),
                    trigger: trigger.to_string(),
                    before_tokens: *before_tokens,
                    after_tokens: *after_tokens,
                    removed_messages: *removed_messages,
                }),
                None,
                None,
            ),
            EngineEvent::BudgetExceeded {
                limit,
                observed,
                max,
            } => e.emit(
                Event::BudgetExceeded(BudgetExceeded {
                    limit_name: limit.to_string(),
                    observed: *observed,
                    limit: *max,
                }),
                None,
                None,
            ),
            EngineEvent::RunFinished {
                result,
                usage,
                duration,
                remaining: left,
                cost_usd,
                ..
            } => {
                let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
                let left = left.as_ref().map(remaining);
                let event = match result {
                    Ok(answer) => Event::RunCompleted(RunCompleted {
                        duration_ms,
                        input_tokens: usage.input_tokens,
                        output_tokens: usage.output_tokens,
                        cached_tokens: usage.cache_read_tokens,
                        answer: answer.clone(),
                        remaining: left,
                        cost_usd: *cost_usd,
                    }),
                    Err(err) => Event::RunFailed(RunFailed {
                        duration_ms: Some(duration_ms),
                        error_class: err.error_class().to_string(),
                        error: err.to_string(),
                        http_status: http_status(err),
                        remaining: left,
                        cost_usd: *cost_usd,
                    }),
                };
                e.emit(event, None, None);
            }
            // Not events of `odek.event/v1`: the model's calls and text reach the stream as
            // the run's end and its tool events, the plan through the store's own events
            // ([`plan_event`]), a failed save as the run's error.
            EngineEvent::ModelCallStarted { .. }
            | EngineEvent::ModelRetry { .. }
            | EngineEvent::Delta { .. }
            | EngineEvent::ModelCallFinished { .. }
            | EngineEvent::Hint { .. }
            | EngineEvent::SessionSaveFailed { .. }
            | EngineEvent::ContentIngested { .. }
            | EngineEvent::PlanChanged { .. } => {}
        }
    }
}

/// The HTTP status of a model error that had one.
fn http_status(err: &crate::engine::RunError) -> Option<u16> {
    match err {
        crate::engine::RunError::Model { error, .. } => error.http_status(),
        _ => None,
    }
}
