//! One model call: the request as the plan's placement and the turn's block make it, streamed
//! deltas to the observer, raced against cancellation and the runtime budget.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::error::RunError;
use super::observer::EngineEvent;
use super::parts::{Engine, RunState};
use crate::llm::ChatRequest;

impl Engine {
    /// One model call, raced against cancellation and the runtime budget.
    pub(super) async fn call_model(
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
        self.charge(state, &response.usage);
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
}

/// Waits until `deadline` (forever when there is none).
pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}
