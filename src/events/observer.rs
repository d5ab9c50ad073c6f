//! Engine events → `odek.event/v1` events.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Emitter;
use super::types::*;
use crate::engine::{EngineEvent, Observer};
use crate::plan::PlanEvent;

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
        Box::new(move |event: &PlanEvent| emitter.emit(event.kind(), None, None, event.payload()))
    }

    fn tool_call_started(
        &self,
        iteration: u32,
        call: &crate::llm::ToolCall,
        summary: Option<&Value>,
    ) {
        let args = &call.function.arguments;
        let mut data = json!({
            "call_id": call.id,
            "args_sha256": crate::random::hex(&Sha256::digest(args.as_bytes())),
            "args_bytes": args.len(),
        });
        if let Some(s) = summary {
            data["args_summary"] = s.clone();
        }
        if self.emitter.options().include_args {
            data["args"] = Value::from(args.as_str());
        }
        self.emitter.emit(
            TOOL_CALL_STARTED,
            Some(iteration),
            Some(&call.function.name),
            data,
        );
    }
}

impl Observer for EventsObserver {
    fn on_event(&self, event: &EngineEvent<'_>) {
        let e = &self.emitter;
        match event {
            EngineEvent::RunStarted { model, max_iterations } => e.emit(
                RUN_STARTED,
                None,
                None,
                json!({"model": model, "max_iterations": max_iterations, "sandbox": self.sandbox}),
            ),
            EngineEvent::IterationCompleted {
                iteration,
                usage,
                tools_called,
            } => e.emit(
                ITERATION_COMPLETED,
                Some(*iteration),
                None,
                json!({"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cached_tokens": usage.cache_read_tokens, "tools_called": tools_called}),
            ),
            EngineEvent::ToolCallStarted {
                iteration,
                call,
                event_summary,
                ..
            } => self.tool_call_started(*iteration, call, *event_summary),
            EngineEvent::ToolCallFinished {
                iteration,
                call,
                ok,
                duration,
                result_bytes,
                ..
            } => {
                let ms = duration.as_millis() as u64;
                let (kind, data) = if *ok {
                    (
                        TOOL_CALL_COMPLETED,
                        json!({"call_id": call.id, "duration_ms": ms, "result_bytes": result_bytes, "artifact_count": 0}),
                    )
                } else {
                    (
                        TOOL_CALL_FAILED,
                        json!({"call_id": call.id, "duration_ms": ms, "error_class": "tool_error"}),
                    )
                };
                e.emit(kind, Some(*iteration), Some(&call.function.name), data);
            }
            EngineEvent::SessionSaved { message_count } => {
                e.emit(SESSION_SAVED, None, None, json!({"message_count": message_count}))
            }
            EngineEvent::ContextTrimmed {
                mode,
                dropped_groups,
                truncated_results,
            } => e.emit(
                CONTEXT_TRIMMED,
                None,
                None,
                json!({"mode": mode, "dropped_groups": dropped_groups, "truncated_results": truncated_results}),
            ),
            EngineEvent::BudgetExceeded { limit, observed, max } => e.emit(
                BUDGET_EXCEEDED,
                None,
                None,
                json!({"limit_name": limit, "observed": observed, "limit": max}),
            ),
            EngineEvent::RunFinished {
                result,
                usage,
                duration,
                remaining,
                ..
            } => {
                let ms = duration.as_millis() as u64;
                let (kind, mut data) = match result {
                    Ok(answer) => (
                        RUN_COMPLETED,
                        json!({"duration_ms": ms, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cached_tokens": usage.cache_read_tokens, "answer": answer}),
                    ),
                    Err(err) => (RUN_FAILED, run_failed_data(err, ms)),
                };
                if let Some(r) = remaining {
                    data["remaining"] = json!(r);
                }
                e.emit(kind, None, None, data);
            }
            _ => {}
        }
    }
}

/// `run_failed`'s data: duration, error class and text, and the HTTP status of a model
/// error that had one.
fn run_failed_data(err: &crate::engine::RunError, ms: u64) -> Value {
    let mut data =
        json!({"duration_ms": ms, "error_class": err.error_class(), "error": err.to_string()});
    if let crate::engine::RunError::Model { source, .. } = err
        && let Some(status) = source.http_status()
    {
        data["http_status"] = Value::from(status);
    }
    data
}
