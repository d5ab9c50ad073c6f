//! Fail-closed validation of the verbs' inputs. Each function works on a copy of the
//! steps and returns the new list or the first error, so nothing is ever partly applied.

use std::collections::HashSet;

use super::args::{NewStep, StepUpdate};
use super::state::{MAX_ID_BYTES, MAX_TITLE_BYTES, PlanStep, StepStatus};
use super::text::{go_quote, is_token, normalize_text};

/// A rejected `plan` call. The texts are the tool's contract with the model, word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The arguments are not valid JSON of the right shape.
    #[error("plan: parse args: {0}")]
    ParseArgs(String),
    /// A verb other than create/update/complete/get (or none).
    #[error("plan: unknown verb {} (want create/update/complete/get)", go_quote(.0))]
    UnknownVerb(String),
    /// `create` with no steps or more than `max_steps`.
    #[error("plan: create wants 1..{max} steps, got {got}")]
    CreateStepCount {
        /// The configured cap.
        max: usize,
        /// Steps received.
        got: usize,
    },
    /// One `create` step is invalid.
    #[error("plan: step[{index}]: {problem}")]
    InvalidStep {
        /// 0-based position in `steps`.
        index: usize,
        /// What is wrong with it.
        problem: StepProblem,
    },
    /// `update` with an empty (or missing) `updates` array.
    #[error("plan: update: no updates given")]
    NoUpdates,
    /// `update` naming a step that does not exist.
    #[error("plan: update: unknown step id {}", go_quote(.0))]
    UpdateUnknownId(String),
    /// `update` with a status token outside the four statuses.
    #[error("plan: update: step[{index}]: unknown status {}", go_quote(.status))]
    UnknownStatus {
        /// 0-based position in `updates`.
        index: usize,
        /// The token received.
        status: String,
    },
    /// `complete` naming a step that does not exist (or no step at all).
    #[error("plan: complete: unknown step id {}", go_quote(.0))]
    CompleteUnknownId(String),
}

/// The plan tool's errors are the model's mistakes: the tool answers them to the model.
impl crate::error::Classified for PlanError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

/// What is wrong with one `create` step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepProblem {
    /// Missing or empty id.
    #[error("id is required")]
    IdRequired,
    /// Id longer than 32 bytes.
    #[error("id is too long ({0} > 32 chars)")]
    IdTooLong(usize),
    /// Id containing whitespace or square brackets.
    #[error("id {} must be a short token without whitespace or brackets", go_quote(.0))]
    IdNotToken(String),
    /// Id already used by an earlier step.
    #[error("duplicate step id {}", go_quote(.0))]
    DuplicateId(String),
    /// Missing title, or empty after normalisation.
    #[error("title is required")]
    TitleRequired,
    /// Title longer than 200 bytes after normalisation.
    #[error("title is too long ({0} > 200 chars)")]
    TitleTooLong(usize),
}

impl crate::error::Classified for StepProblem {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

/// Validates a whole `create` list; every step starts pending.
pub(crate) fn validate_create(
    steps: &[Option<NewStep>],
    max_steps: usize,
) -> Result<Vec<PlanStep>, PlanError> {
    if steps.is_empty() || steps.len() > max_steps {
        return Err(PlanError::CreateStepCount {
            max: max_steps,
            got: steps.len(),
        });
    }
    let mut seen = HashSet::with_capacity(steps.len());
    let mut validated = Vec::with_capacity(steps.len());
    for (index, input) in steps.iter().enumerate() {
        let input = input.clone().unwrap_or_default();
        let step = validate_new_step(input, &mut seen)
            .map_err(|problem| PlanError::InvalidStep { index, problem })?;
        validated.push(step);
    }
    Ok(validated)
}

fn validate_new_step(input: NewStep, seen: &mut HashSet<String>) -> Result<PlanStep, StepProblem> {
    let id = input.id.unwrap_or_default();
    if id.is_empty() {
        return Err(StepProblem::IdRequired);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(StepProblem::IdTooLong(id.len()));
    }
    if !is_token(&id) {
        return Err(StepProblem::IdNotToken(id));
    }
    if !seen.insert(id.clone()) {
        return Err(StepProblem::DuplicateId(id));
    }
    let title = normalize_text(input.title.as_deref().unwrap_or_default());
    if title.is_empty() {
        return Err(StepProblem::TitleRequired);
    }
    if title.len() > MAX_TITLE_BYTES {
        return Err(StepProblem::TitleTooLong(title.len()));
    }
    Ok(PlanStep {
        id,
        title,
        status: StepStatus::Pending,
        note: normalize_text(input.note.as_deref().unwrap_or_default()),
    })
}

/// Applies `updates` in order to a copy of `current`; any invalid entry fails the whole
/// batch. A status or note is only changed when given non-empty.
pub(crate) fn apply_updates(
    current: &[PlanStep],
    updates: &[Option<StepUpdate>],
) -> Result<Vec<PlanStep>, PlanError> {
    if updates.is_empty() {
        return Err(PlanError::NoUpdates);
    }
    let mut working = current.to_vec();
    for (index, update) in updates.iter().enumerate() {
        let update = update.clone().unwrap_or_default();
        let id = update.id.unwrap_or_default();
        let Some(step) = working.iter_mut().find(|s| s.id == id) else {
            return Err(PlanError::UpdateUnknownId(id));
        };
        let status = update.status.unwrap_or_default();
        if !status.is_empty() {
            step.status =
                StepStatus::parse(&status).ok_or(PlanError::UnknownStatus { index, status })?;
        }
        let note = normalize_text(update.note.as_deref().unwrap_or_default());
        if !note.is_empty() {
            step.note = note;
        }
    }
    Ok(working)
}

/// Marks `step_id` done on a copy of `current`.
pub(crate) fn apply_complete(
    current: &[PlanStep],
    step_id: &str,
) -> Result<Vec<PlanStep>, PlanError> {
    let mut working = current.to_vec();
    let step = working
        .iter_mut()
        .find(|s| s.id == step_id)
        .ok_or_else(|| PlanError::CompleteUnknownId(step_id.to_owned()))?;
    step.status = StepStatus::Done;
    Ok(working)
}
