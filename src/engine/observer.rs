//! What the loop reports while it runs. The terminal, the event stream and tests are all just
//! observers; the loop never prints.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::error::RunError;
use super::outcome::RemainingSteps;
use crate::llm::{Delta, Message, Overflow, ToolCall, Usage, WindowSize};

/// The source of [`EngineEvent::ContentIngested`] for an image of the input (its content is
/// the image's `data:` URL).
pub const IMAGE_SOURCE: &str = "image";

/// One thing that happened in a run. Iterations are 1-based.
#[derive(Debug)]
pub enum EngineEvent<'a> {
    /// The run begins.
    RunStarted {
        /// Model name.
        model: &'a str,
        /// Iteration cap.
        max_iterations: u32,
        /// The context window and where its size came from; `None` when unknown.
        context_window: Option<&'a WindowSize>,
    },
    /// A request to the model is about to be sent.
    ModelCallStarted {
        /// Iteration number.
        iteration: u32,
    },
    /// The model client will retry after a transient failure.
    ModelRetry {
        /// The attempt about to be made (2 = first retry).
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// How long it waits first.
        wait: Duration,
        /// Why (status line or error).
        reason: &'a str,
        /// True when the text streamed by the failed attempt is discarded.
        discards_partial_answer: bool,
    },
    /// A request's retries were spent on a transient failure: the turn goes on with the
    /// next model of `fallback_models`.
    ModelFallback {
        /// The model given up on.
        from: &'a str,
        /// The model asked now (`provider:model`).
        to: &'a str,
        /// Why (status line or error).
        reason: &'a str,
    },
    /// Streamed text arrived.
    Delta {
        /// Iteration number.
        iteration: u32,
        /// The text.
        delta: Delta<'a>,
    },
    /// The model answered.
    ModelCallFinished {
        /// Iteration number.
        iteration: u32,
        /// The assistant message.
        message: &'a Message,
        /// Tokens of this call.
        usage: &'a Usage,
        /// Whether the text already reached the sink as deltas.
        streamed: bool,
    },
    /// A tool call is about to run (after approval).
    ToolCallStarted {
        /// Iteration number.
        iteration: u32,
        /// The call.
        call: &'a ToolCall,
        /// Short human summary of the arguments.
        summary: &'a str,
        /// Structured summary for events.
        event_summary: Option<&'a Value>,
    },
    /// A running tool call reported progress (a sub-agent started or ended).
    ToolReport {
        /// Iteration number.
        iteration: u32,
        /// The call.
        call: &'a ToolCall,
        /// What it reported.
        report: &'a crate::tools::ToolReport,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// Iteration number.
        iteration: u32,
        /// The call.
        call: &'a ToolCall,
        /// Short human summary of the arguments (redacted).
        summary: &'a str,
        /// False for any error result.
        ok: bool,
        /// Wall time of the call.
        duration: Duration,
        /// Bytes of the result the model receives.
        result_bytes: usize,
        /// The result the model receives (redacted, cut, wrapped as untrusted where the
        /// tool's output is external).
        result: &'a str,
        /// First line of an error, for the terminal.
        error: Option<&'a str>,
    },
    /// A corrective hint was added for the model.
    Hint {
        /// Iteration number.
        iteration: u32,
        /// The hint text.
        text: &'a str,
    },
    /// An iteration ended.
    IterationCompleted {
        /// Iteration number.
        iteration: u32,
        /// Tokens used so far in the run.
        usage: &'a Usage,
        /// Tool calls in this iteration.
        tools_called: usize,
    },
    /// The transcript was saved by the persist callback.
    SessionSaved {
        /// Messages in the saved transcript.
        message_count: usize,
    },
    /// Saving failed (the run goes on).
    SessionSaveFailed {
        /// Why.
        error: &'a str,
    },
    /// The transcript was trimmed to fit the context window.
    ContextTrimmed {
        /// `proactive` or `survival`.
        mode: &'a str,
        /// Message groups dropped.
        dropped_groups: usize,
        /// Tool outputs shortened.
        truncated_results: usize,
        /// Attached texts (`--ctx` files, recalled episodes) shortened.
        shortened_attachments: usize,
        /// The server's overflow error that caused it (survival only).
        overflow: Option<&'a Overflow>,
    },
    /// A summary of the conversation is being asked for (`/compact`, or `compaction.mode =
    /// summary` past `at_percent`).
    CompactionStarted {
        /// `manual` or `auto`.
        trigger: &'a str,
        /// Estimated tokens of the transcript.
        tokens: u64,
    },
    /// The conversation was compacted: the turns before the last ones replaced by a summary.
    Compacted {
        /// `summary`, or `digest` when the summary failed and the digest replaced it.
        mode: &'a str,
        /// `manual` or `auto`.
        trigger: &'a str,
        /// Estimated tokens before.
        before_tokens: u64,
        /// Estimated tokens after.
        after_tokens: u64,
        /// Messages taken out.
        removed_messages: usize,
    },
    /// Externally derived text entered the model's context: the plan render, the compaction
    /// digest, a tool's wrapped output, a wrapped attachment of the input (`--ctx` files,
    /// `@path`); the session's audit log records it.
    ContentIngested {
        /// Model calls made so far in this run (0: before the first).
        iteration: u32,
        /// Where it came from (`plan`, `compaction`, `read_file:src/x.rs`, `$ cargo test`…).
        source: &'a str,
        /// The text.
        content: &'a str,
    },
    /// The plan changed, or a run began with one: its whole state, for the surfaces that
    /// draw it (`odek acp`'s `plan` updates). Sent when the plan message is rendered anew.
    PlanChanged {
        /// The plan as it is now.
        plan: &'a crate::plan::PlanState,
    },
    /// A background job ended (heard at once; the model reads the notice in its next
    /// request).
    BackgroundFinished {
        /// How it ended.
        ended: &'a crate::tools::background::JobEnded,
    },
    /// A hook ran.
    Hook {
        /// Model calls made so far in this run.
        iteration: u32,
        /// What ran and what it decided (never its output).
        report: &'a crate::hooks::HookReport,
    },
    /// An execution budget ran out.
    BudgetExceeded {
        /// Which limit.
        limit: &'a str,
        /// The value observed.
        observed: u64,
        /// The limit.
        max: u64,
    },
    /// The run ended (exactly once per run).
    RunFinished {
        /// The final answer or the error.
        result: &'a Result<String, RunError>,
        /// Tokens used by the run.
        usage: &'a Usage,
        /// Wall time of the run.
        duration: Duration,
        /// Iterations made.
        iterations: u32,
        /// The plan's step counts when a limit (iterations, a budget) ended the run and
        /// there is a plan.
        remaining: Option<RemainingSteps>,
        /// The closing summary when a budget ended the run (`result` is the error).
        summary: Option<&'a str>,
        /// What the run cost in US dollars, when the model's price is known.
        cost_usd: Option<f64>,
    },
}

/// Receives engine events. Called from the loop and from tool tasks, so it must be cheap and
/// thread-safe.
pub trait Observer: Send + Sync {
    /// Handles one event.
    fn on_event(&self, event: &EngineEvent<'_>);
}

/// Ignores everything.
pub struct NoopObserver;

/// The line a surface shows after a compaction.
pub fn compacted_line(mode: &str, before: u64, after: u64, removed: usize) -> String {
    let how = if mode == "summary" {
        "summarised"
    } else {
        "digested (the summary failed)"
    };
    format!(
        "odek: conversation {how}: {removed} message(s) replaced, about {before} → {after} tokens"
    )
}

impl EngineEvent<'_> {
    /// The line every surface shows for what the user must hear of even away from a
    /// terminal — a fallback to another model, a compaction (SPEC: "shown on every
    /// surface"); `None` for the other events.
    pub fn notice(&self) -> Option<String> {
        match self {
            EngineEvent::ModelFallback { from, to, reason } => Some(format!(
                "{reason} — retries spent on {from}, falling back to {to}"
            )),
            EngineEvent::Compacted {
                mode,
                before_tokens,
                after_tokens,
                removed_messages,
                ..
            } => {
                let line = compacted_line(mode, *before_tokens, *after_tokens, *removed_messages);
                Some(line.trim_start_matches("odek: ").to_string())
            }
            _ => None,
        }
    }
}

impl Observer for NoopObserver {
    fn on_event(&self, _event: &EngineEvent<'_>) {}
}

/// Hands every event to several observers, in order.
pub struct Fanout(pub Vec<Arc<dyn Observer>>);

impl Observer for Fanout {
    fn on_event(&self, event: &EngineEvent<'_>) {
        for o in &self.0 {
            o.on_event(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_and_a_compaction_have_a_notice_for_every_surface() {
        let fell = EngineEvent::ModelFallback {
            from: "m",
            to: "backup:b",
            reason: "503 Service Unavailable",
        };
        assert_eq!(
            fell.notice().as_deref(),
            Some("503 Service Unavailable — retries spent on m, falling back to backup:b")
        );
        let compacted = EngineEvent::Compacted {
            mode: "summary",
            trigger: "auto",
            before_tokens: 900,
            after_tokens: 200,
            removed_messages: 7,
        };
        assert_eq!(
            compacted.notice().as_deref(),
            Some("conversation summarised: 7 message(s) replaced, about 900 → 200 tokens")
        );
        let hint = EngineEvent::Hint {
            iteration: 1,
            text: "x",
        };
        assert_eq!(hint.notice(), None);
    }
}
