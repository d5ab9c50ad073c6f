//! Keeping the transcript within the context window around each model call, and the plan
//! message current after each tool batch.

use tokio_util::sync::CancellationToken;

use super::compaction::{CompactError, compact_conversation};
use super::context::SurvivalReport;
use super::error::RunError;
use super::observer::EngineEvent;
use super::parts::{Engine, RunState};
use crate::config::CompactionMode;
use crate::llm::{Overflow, WindowSize};

/// Survival trims tried for one iteration before the error is given up on.
const MAX_SURVIVAL_TRIMS: u32 = 3;
/// Share of the context a survival trim aims the request at (room for the answer).
const SURVIVAL_FILL: f64 = 0.75;

impl Engine {
    /// The context window: configured, else asked of the model client (server discovery, then
    /// the model profile table); `None` = unknown, no trimming.
    pub(super) async fn context_window(&self) -> Option<WindowSize> {
        match self.settings.context_window {
            0 => self.model.context_window().await,
            tokens => Some(WindowSize {
                tokens,
                source: "the context_window setting".into(),
            }),
        }
    }

    /// Graduated trimming when over budget, the rolling digest of what was dropped, and the
    /// trim warning.
    pub(super) async fn fit_context(&self, state: &mut RunState, cancel: &CancellationToken) {
        if self.summary_due(state) {
            self.auto_summary(state, cancel).await;
        }
        let Some(report) = state.ctx.trim_to_budget(self.tools.defs()) else {
            return;
        };
        if report.dropped_groups > 0 && self.settings.compaction.enabled {
            let previous = state.ctx.digest_body();
            if let Some((summary, usage)) = self
                .compact(previous.as_deref(), &report.dropped, cancel)
                .await
            {
                self.charge(state, &usage);
                state.ctx.upsert_digest(&summary);
                self.observer.on_event(&EngineEvent::ContentIngested {
                    iteration: state.iterations,
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
            shortened_attachments: report.shortened,
            overflow: None,
        });
    }

    /// True when `compaction.mode = summary` and the transcript passed `at_percent` of the
    /// context budget (and no summary failed to help earlier in the run).
    fn summary_due(&self, state: &RunState) -> bool {
        let c = &self.settings.compaction;
        if !c.enabled || c.mode != CompactionMode::Summary || state.summary_spent {
            return false;
        }
        let Some(budget) = state.ctx.budget() else {
            return false;
        };
        state.ctx.estimate(self.tools.defs()) * 100 > budget * c.at_percent
    }

    /// The automatic summary: the turns before the last `keep_turns` (at least the current
    /// one) replaced by the model's summary, or by the digest when that fails.
    async fn auto_summary(&self, state: &mut RunState, cancel: &CancellationToken) {
        let keep = (self.settings.compaction.keep_turns as usize).max(1);
        let tokens = state.ctx.estimate(self.tools.defs());
        self.observer.on_event(&EngineEvent::CompactionStarted {
            trigger: "auto",
            tokens,
        });
        let messages = state.ctx.messages();
        match compact_conversation(self.model.as_ref(), messages, keep, None, cancel).await {
            Ok(done) => {
                self.charge(state, &done.usage);
                state.ctx.replace_all(done.messages);
                self.observer.on_event(&EngineEvent::ContentIngested {
                    iteration: state.iterations,
                    source: "compaction",
                    content: &done.text,
                });
                self.observer.on_event(&EngineEvent::Compacted {
                    mode: done.mode.as_str(),
                    trigger: "auto",
                    before_tokens: done.before_tokens,
                    after_tokens: done.after_tokens,
                    removed_messages: done.removed,
                });
            }
            Err(CompactError::Failed { usage }) => {
                self.charge(state, &usage);
                state.summary_spent = true;
            }
            Err(CompactError::NothingToCompact { .. }) => state.summary_spent = true,
            Err(CompactError::Cancelled) => {}
        }
    }

    /// A model call that answers a context overflow with a survival trim and a retry; an
    /// overflow no trim can cure ends the run with [`RunError::ContextOverflow`].
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
                Err(RunError::Model { error, .. }) => error,
                other => return other,
            };
            let Some(overflow) = error.context_overflow() else {
                return Err(RunError::Model { iteration, error });
            };
            tracing::debug!("context overflow recognised: {overflow}");
            let report = if trims < MAX_SURVIVAL_TRIMS {
                self.survive(state, &overflow, trims)
            } else {
                SurvivalReport::default()
            };
            if !report.changed() {
                return Err(RunError::ContextOverflow {
                    iteration,
                    overflow,
                });
            }
            trims += 1;
            self.observer.on_event(&EngineEvent::ContextTrimmed {
                mode: "survival",
                dropped_groups: report.removed,
                truncated_results: report.truncated,
                shortened_attachments: report.shortened,
                overflow: Some(&overflow),
            });
        }
    }

    /// One survival trim aimed at what the server said: its context size (remembered for
    /// the rest of the run) and, when it counted the request, how far our estimate ran low.
    /// Without a count each further try assumes the estimate runs lower; without a size
    /// (a gateway) the attachments are halved, whatever window was assumed.
    fn survive(&self, state: &mut RunState, overflow: &Overflow, trims: u32) -> SurvivalReport {
        let tools = self.tools.defs();
        let sent = state.ctx.estimate(tools).max(1);
        let scale = match overflow.requested {
            Some(requested) => (requested as f64 / sent as f64).max(1.0),
            None => 1.0 + 0.25 * f64::from(trims),
        };
        let target = overflow.limit.map(|limit| {
            state.ctx.learn_window(limit);
            (limit as f64 * SURVIVAL_FILL / scale) as u64
        });
        state.ctx.survival_trim(tools, target)
    }

    /// Brings the protected plan message up to date (after every tool batch, before the
    /// transcript is persisted). A first render of a new version is reported as ingested
    /// content for the audit log.
    pub(super) fn refresh_plan(&self, state: &mut RunState) {
        let Some(store) = &self.plan else { return };
        if let Some(rendered) = state.ctx.refresh_plan(store) {
            self.observer.on_event(&EngineEvent::ContentIngested {
                iteration: state.iterations,
                source: "plan",
                content: &rendered,
            });
            let plan = store.snapshot();
            self.observer
                .on_event(&EngineEvent::PlanChanged { plan: &plan });
        }
    }
}
