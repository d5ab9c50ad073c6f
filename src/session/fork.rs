//! Forking a session at a turn: a new session holding the first turns of the old one, with
//! the plan as it was then (`odek session fork`, `odek rewind --conversation`). The old
//! session is not changed.

use super::store::SessionStore;
use super::{ForkOrigin, Message, Role, Session, SessionError, count_turns};
use crate::plan::PlanState;
use crate::util::timestamp::now_rfc3339;

/// What a fork made.
#[derive(Debug, Clone)]
pub struct Forked {
    /// The new session, saved.
    pub session: Session,
    /// Whether the plan of then is known (sessions saved before plans were noted per turn
    /// fork without one).
    pub plan_known: bool,
}

impl SessionStore {
    /// Saves a new session with the first `keep` turns of session `id` (0: none of them)
    /// and the plan as the last of them left it.
    pub fn fork(&self, id: &str, keep: u32) -> Result<Forked, SessionError> {
        let old = self.load(id)?;
        if keep > old.turns {
            return Err(SessionError::NoSuchTurn {
                id: id.to_string(),
                turns: old.turns,
                at: keep,
            });
        }
        let (plan, plan_known) = plan_at(&old, keep);
        let messages = first_turns(&old.messages, keep, plan.as_ref());
        let now = now_rfc3339();
        let mut fork = Session {
            id: super::new_session_id(),
            created_at: now.clone(),
            updated_at: now,
            turns: count_turns(&messages),
            messages,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            runs: runs_of_turns(&old.runs, keep),
            plan,
            revision: 0,
            name: None,
            turn_plans: old
                .turn_plans
                .iter()
                .filter(|t| t.turn <= keep)
                .cloned()
                .collect(),
            forked_from: Some(ForkOrigin {
                session: old.id.clone(),
                turn: keep,
            }),
            ..old
        };
        for run in &fork.runs {
            fork.input_tokens += run.input_tokens;
            fork.output_tokens += run.output_tokens;
            fork.cached_tokens += run.cached_tokens;
        }
        self.save(&mut fork)?;
        Ok(Forked {
            session: fork,
            plan_known,
        })
    }
}

/// The records of the first `keep` turns, with the compactions made before the last of
/// them (a compaction's record is not a turn's).
fn runs_of_turns(runs: &[super::RunRecord], keep: u32) -> Vec<super::RunRecord> {
    let mut turns = 0;
    let mut kept = Vec::new();
    for run in runs {
        if (run.compaction && turns >= keep) || (!run.compaction && turns == keep) {
            break;
        }
        turns += u32::from(!run.compaction);
        kept.push(run.clone());
    }
    kept
}

/// The messages before the user message that starts turn `keep + 1`, the plan message
/// showing `plan` (none: no plan message).
fn first_turns(messages: &[Message], keep: u32, plan: Option<&PlanState>) -> Vec<Message> {
    let mut users = 0;
    let end = messages
        .iter()
        .position(|m| {
            if m.role == Role::User {
                users += 1;
            }
            users > keep
        })
        .unwrap_or(messages.len());
    let is_plan = |m: &Message| crate::plan::is_plan_message(m.role.as_str(), &m.content);
    let rendered = plan.and_then(|p| crate::plan::render(p, crate::plan::MAX_RENDER_CHARS));
    let mut kept: Vec<Message> = messages[..end].to_vec();
    match (plan, rendered) {
        (None, _) => kept.retain(|m| !is_plan(m)),
        // The engine restores the saved state over the plan message and renders it anew.
        (Some(_), None) => {}
        (Some(_), Some(text)) => {
            let wrapped = crate::plan::wrap_plan_message(&text, &crate::untrusted::new_nonce());
            for m in kept.iter_mut().filter(|m| is_plan(m)) {
                m.content = wrapped.clone();
            }
        }
    }
    kept
}

/// The plan as turn `keep` left it, and whether it is known.
fn plan_at(session: &Session, keep: u32) -> (Option<PlanState>, bool) {
    if keep == 0 {
        return (None, true);
    }
    match session.turn_plans.iter().rev().find(|t| t.turn <= keep) {
        Some(noted) => (noted.plan.clone(), true),
        // Nothing noted since the first turn: the plan never changed, or the file predates
        // the notes (then only a fork at the last turn knows it).
        None if keep == session.turns => (session.plan.clone(), true),
        None => (
            None,
            session.turn_plans.first().is_some_and(|t| t.turn == 1),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::RunRecord;

    fn turn(n: u64) -> RunRecord {
        RunRecord {
            input_tokens: n,
            iterations: 1,
            ..RunRecord::default()
        }
    }

    fn compaction(n: u64) -> RunRecord {
        RunRecord {
            input_tokens: n,
            compaction: true,
            ..RunRecord::default()
        }
    }

    #[test]
    fn a_fork_takes_the_records_of_its_turns_and_the_compactions_between_them() {
        let runs = [turn(1), turn(2), compaction(10), turn(3), compaction(20)];
        let tokens = |keep| -> Vec<u64> {
            runs_of_turns(&runs, keep)
                .iter()
                .map(|r| r.input_tokens)
                .collect()
        };
        assert_eq!(tokens(0), Vec::<u64>::new());
        assert_eq!(tokens(2), [1, 2]);
        assert_eq!(tokens(3), [1, 2, 10, 3]);
        assert_eq!(tokens(9), [1, 2, 10, 3, 20]);
    }
}
