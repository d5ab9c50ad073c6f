//! `Runtime::compact`: the conversation of a session summarised on the user's demand
//! (`/compact` on every surface, `odek session compact`), saved at once, with its events
//! and its cost (see docs/COMPACTION.md).

use tokio_util::sync::CancellationToken;

use super::{Runtime, RuntimeError, SessionHandle};
use crate::config::CompactionMode;
use crate::engine::compaction::{Compaction, compact_conversation};
use crate::engine::{EngineEvent, Observer};
use crate::events::EventsObserver;
use crate::session::RunRecord;

/// What a compaction on demand did.
#[derive(Debug, Clone)]
pub struct CompactionOutcome {
    /// `Summary`, or `Digest` when the summary failed and the digest replaced it.
    pub mode: CompactionMode,
    /// Estimated tokens of the transcript before.
    pub before_tokens: u64,
    /// Estimated tokens after.
    pub after_tokens: u64,
    /// Messages taken out.
    pub removed: usize,
    /// The session that keeps the conversation as it was before (a fork at its last turn):
    /// continuing it undoes the compaction.
    pub backup: Option<String>,
    /// What the summary request cost, when the model's price is known.
    pub cost_usd: Option<f64>,
}

impl CompactionOutcome {
    /// The line a surface shows.
    pub fn line(&self) -> String {
        let mut line = crate::engine::observer::compacted_line(
            self.mode.as_str(),
            self.before_tokens,
            self.after_tokens,
            self.removed,
        );
        if let Some(backup) = &self.backup {
            line.push_str(&format!(
                "; the conversation before is kept as session {backup} (`odek continue {backup}` to go back)"
            ));
        }
        line
    }
}

/// Marks the session busy while it is compacted (no turn may start meanwhile).
struct Busy<'a>(&'a SessionHandle);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.end_turn();
    }
}

impl Runtime {
    /// Summarises `session`'s conversation before its last `compaction.keep_turns` turns
    /// (keeping `focus` in particular): the model's summary — or, when it fails, the digest
    /// — replaces those turns' answers and tool calls; the user's messages and the plan stay
    /// as they are. The conversation before is first kept as a fork, the session is saved
    /// at once, the request's tokens and cost are recorded with it, and the
    /// `compaction_started` and `compacted` events go to the event stream. Refused while a
    /// turn of the session runs.
    pub async fn compact(
        &self,
        session: &SessionHandle,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, RuntimeError> {
        if !session.start_turn() {
            return Err(RuntimeError::TurnInProgress(session.id().to_string()));
        }
        let _busy = Busy(session);
        let observer = self.compaction_events(session);
        let messages = session.live().messages.clone();
        observer.on_event(&EngineEvent::CompactionStarted {
            trigger: "manual",
            tokens: crate::engine::context::estimate_messages(&messages),
        });
        let keep = usize::try_from(self.config.compaction.keep_turns).unwrap_or(usize::MAX);
        let model = self.chat_model_for(&self.session_model(Some(session)))?;
        let done = compact_conversation(model.as_ref(), &messages, keep, focus, cancel).await;
        let price = crate::llm::pricing::price_for(model.model_name(), &self.config.pricing);
        let done = match done {
            Ok(done) => done,
            Err(e) => {
                if let crate::engine::compaction::CompactError::Failed { usage } = &e
                    && session.is_saved()
                {
                    // The failed requests are counted too; the transcript is unchanged.
                    let record =
                        run_record(model.model_name(), usage, price.map(|p| p.cost_usd(usage)));
                    session
                        .writer()
                        .finish_turn(&mut messages.clone(), record)?;
                }
                return Err(RuntimeError::Compact(e));
            }
        };
        let backup = self.keep_before(session)?;
        let cost_usd = price.map(|p| p.cost_usd(&done.usage));
        let name = model.model_name().to_string();
        let outcome = self.save_compaction(session, done, name, backup, cost_usd)?;
        observer.on_event(&EngineEvent::Compacted {
            mode: outcome.mode.as_str(),
            trigger: "manual",
            before_tokens: outcome.before_tokens,
            after_tokens: outcome.after_tokens,
            removed_messages: outcome.removed,
        });
        Ok(outcome)
    }

    /// Where a compaction's events go: the event stream, when there is one.
    fn compaction_events(&self, session: &SessionHandle) -> Box<dyn Observer> {
        match &self.events {
            Some(writer) => {
                let run_id = crate::random::hex_id::<16>();
                let emitter = writer.run(&run_id, Some(session.id().to_string()));
                Box::new(EventsObserver::new(emitter, self.sandbox.is_on()))
            }
            None => Box::new(crate::engine::NoopObserver),
        }
    }

    /// Keeps the conversation as it is as a fork at its last turn; `None` for a session
    /// with no file yet.
    fn keep_before(&self, session: &SessionHandle) -> Result<Option<String>, RuntimeError> {
        if !session.is_saved() {
            return Ok(None);
        }
        let turns = session.saved().turns;
        Ok(Some(self.sessions.fork(session.id(), turns)?.session.id))
    }

    /// Saves the compacted transcript with the request's record and makes it the live one.
    fn save_compaction(
        &self,
        session: &SessionHandle,
        done: Compaction,
        model: String,
        backup: Option<String>,
        cost_usd: Option<f64>,
    ) -> Result<CompactionOutcome, RuntimeError> {
        let mut messages = done.messages;
        let record = run_record(&model, &done.usage, cost_usd);
        let mut writer = session.writer();
        writer.save_delta(crate::transcript::TranscriptDelta {
            edits: vec![crate::transcript::Edit::Reset {
                messages: messages.clone(),
            }],
            len: messages.len(),
            plan: None,
        })?;
        writer.finish_turn(&mut messages, record)?;
        drop(writer);
        session.live().messages = messages;
        Ok(CompactionOutcome {
            mode: done.mode,
            before_tokens: done.before_tokens,
            after_tokens: done.after_tokens,
            removed: done.removed,
            backup,
            cost_usd,
        })
    }
}

/// The record of a compaction's side calls: tokens and cost, no iteration (so `odek usage`
/// counts the tokens and the cost, not a run).
fn run_record(model: &str, usage: &crate::llm::Usage, cost_usd: Option<f64>) -> RunRecord {
    RunRecord {
        model: Some(model.to_string()),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_tokens: usage.cache_read_tokens,
        reasoning_tokens: usage.reasoning_tokens,
        cost_microusd: cost_usd.map(crate::llm::pricing::microdollars),
        compaction: true,
        ..RunRecord::default()
    }
}
