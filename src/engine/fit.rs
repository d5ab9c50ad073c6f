//! Keeping the transcript within the context window around each model call, and the plan
//! message current after each tool batch.

use tokio_util::sync::CancellationToken;

use super::observer::EngineEvent;
use super::{Engine, RunError, RunState};

/// Survival trims tried for one iteration before the error is given up on.
const MAX_SURVIVAL_TRIMS: u32 = 2;

impl Engine {
    /// The context window: configured, else asked of the model client (server discovery, then
    /// the model profile table); `None` = unknown, no trimming.
    pub(super) async fn context_window(&self) -> Option<u64> {
        match self.settings.context_window {
            0 => self.model.context_window().await,
            n => Some(n),
        }
    }

    /// Graduated trimming when over budget, the rolling digest of what was dropped, and the
    /// trim warning.
    pub(super) async fn fit_context(&self, state: &mut RunState, cancel: &CancellationToken) {
        let Some(report) = state.ctx.trim_to_budget(self.tools.defs()) else {
            return;
        };
        if report.dropped_groups > 0 && self.settings.compaction {
            let previous = state.ctx.digest_body();
            if let Some((summary, usage)) = self
                .compact(previous.as_deref(), &report.dropped, cancel)
                .await
            {
                state.usage.add(&usage);
                state.ctx.upsert_digest(&summary);
                self.observer.on_event(&EngineEvent::ContentIngested {
                    source: "compaction",
                    content: &summary,
                });
            }
        }
        state.ctx.upsert_trim_warning();
        self.observer.on_event(&EngineEvent::ContextTrimmed {
            mode: "proactive",
            dropped_groups: report.dropped_groups,
            truncated_results: report.truncated,
        });
    }

    /// A model call that answers a context-length error with a survival trim and a retry.
    pub(super) async fn call_model_surviving(
        &self,
        iteration: u32,
        state: &mut RunState,
        cancel: &CancellationToken,
        deadline: Option<std::time::Instant>,
    ) -> Result<crate::llm::ChatResponse, RunError> {
        let mut trims = 0;
        loop {
            let error = match self.call_model(iteration, state, cancel, deadline).await {
                Err(RunError::Model { error, .. })
                    if error.is_context_length() && trims < MAX_SURVIVAL_TRIMS =>
                {
                    error
                }
                other => return other,
            };
            let removed = state.ctx.survival_trim();
            if removed == 0 {
                return Err(RunError::Model { iteration, error });
            }
            trims += 1;
            self.observer.on_event(&EngineEvent::ContextTrimmed {
                mode: "survival",
                dropped_groups: removed,
                truncated_results: 0,
            });
        }
    }

    /// Brings the protected plan message up to date (after every tool batch, before the
    /// transcript is persisted). A first render of a new version is reported as ingested
    /// content for the audit log.
    pub(super) fn refresh_plan(&self, state: &mut RunState) {
        let Some(store) = &self.plan else { return };
        if let Some(rendered) = state.ctx.refresh_plan(store) {
            self.observer.on_event(&EngineEvent::ContentIngested {
                source: "plan",
                content: &rendered,
            });
        }
    }
}
