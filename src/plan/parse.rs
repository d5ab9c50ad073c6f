//! The strict, total parser that reads a rendered plan message back into state (restart
//! resume and the read-only surfaces), and the extractor that finds the newest one.
//!
//! Strict means fail-closed: any deviation from what the renderer produces — a bad header,
//! a count mismatch, an omission or truncation marker, a malformed wrapper — rejects the
//! whole message rather than approximating. Total means no input panics.

use std::collections::HashSet;

use super::render::{HEADER_SUFFIX, OMISSION_PREFIX, OMISSION_SUFFIX, PLAN_MESSAGE_PREFIX};
use super::state::{ABSOLUTE_MAX_STEPS, MAX_ID_BYTES, PlanState, PlanStep, StepStatus};
use super::text::{NOTE_SEPARATOR, go_quote, is_token, parse_small_number};
use crate::untrusted::{CLOSE_TAG_PREFIX, OPEN_TAG_PREFIX};

/// The wrapper source label the engine uses for the plan body.
pub const PLAN_WRAPPER_SOURCE: &str = "plan";

/// Why a plan message was rejected. The texts are those of the original implementation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanParseError {
    /// Nothing but whitespace.
    #[error("plan: empty message")]
    EmptyMessage,
    /// The header line is not one the renderer produces.
    #[error("bad plan header")]
    BadHeader,
    /// The header's version token is not `v` followed by 1–9 digits.
    #[error("bad plan version")]
    BadVersion,
    /// A collapsed (all done) header followed by more lines.
    #[error("plan: unexpected content after collapsed plan header")]
    ContentAfterCollapsedHeader,
    /// The body starts with `[+N done steps omitted]`: an overflowed render is lossy.
    #[error("plan: overflowed plan (done steps omitted) cannot be resumed")]
    Overflowed,
    /// The wrapper's open line is not `<untrusted_content_HEX source="plan">`.
    #[error("plan: malformed untrusted wrapper")]
    MalformedWrapper,
    /// No close tag, or the close tag's nonce differs from the open tag's.
    #[error("plan: unterminated untrusted wrapper")]
    UnterminatedWrapper,
    /// Lines after the wrapper's close tag.
    #[error("plan: content after wrapper close tag")]
    ContentAfterWrapper,
    /// A wrapper holding only blank lines.
    #[error("plan: empty untrusted wrapper")]
    EmptyWrapper,
    /// A non-collapsed header with no step lines under it.
    #[error("plan: no step lines")]
    NoStepLines,
    /// The header's total differs from the number of step lines.
    #[error("plan: header claims {claimed} steps, found {found}")]
    StepCountMismatch {
        /// Total from the header.
        claimed: u64,
        /// Step lines present.
        found: usize,
    },
    /// More steps than the caller's cap.
    #[error("plan: {total} steps exceed cap {cap}")]
    OverCap {
        /// Steps in the message.
        total: usize,
        /// The cap parsed against.
        cap: usize,
    },
    /// A line that is not `<id> [<status>] <title>` (this is how a truncation marker or a
    /// mid-list omission marker fails).
    #[error("plan: step[{index}]: malformed step line")]
    MalformedStepLine {
        /// 0-based index among the step lines.
        index: usize,
    },
    /// An id longer than 32 bytes or containing whitespace or brackets.
    #[error("plan: step[{index}]: invalid step id {}", go_quote(.id))]
    InvalidStepId {
        /// 0-based index among the step lines.
        index: usize,
        /// The offending id.
        id: String,
    },
    /// A status other than the four known tokens.
    #[error("plan: step[{index}]: unknown status token {}", go_quote(.token))]
    UnknownStatusToken {
        /// 0-based index among the step lines.
        index: usize,
        /// The offending token.
        token: String,
    },
    /// No space after `]`, or an empty title.
    #[error("plan: step[{index}]: missing title")]
    MissingTitle {
        /// 0-based index among the step lines.
        index: usize,
    },
    /// The same id on two step lines.
    #[error("plan: step[{index}]: duplicate step id {}", go_quote(.id))]
    DuplicateStepId {
        /// 0-based index of the second occurrence.
        index: usize,
        /// The repeated id.
        id: String,
    },
    /// The header's done count differs from the done step lines.
    #[error("plan: header claims {claimed} done, found {found}")]
    DoneCountMismatch {
        /// Done count from the header.
        claimed: u64,
        /// Done step lines present.
        found: usize,
    },
    /// The header's blocked count differs from the blocked step lines.
    #[error("plan: header claims {claimed} blocked, found {found}")]
    BlockedCountMismatch {
        /// Blocked count from the header.
        claimed: u64,
        /// Blocked step lines present.
        found: usize,
    },
}

/// A plan message that does not read back was changed or damaged on disk.
impl crate::error::Classified for PlanParseError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Io
    }
}

/// True for the protected plan message: role `system` and content starting with
/// `[Current plan:`. A tool or assistant message carrying the prefix is never the plan.
pub fn is_plan_message(role: &str, content: &str) -> bool {
    role == "system" && content.starts_with(PLAN_MESSAGE_PREFIX)
}

/// Reads a rendered plan message (body plain or inside one untrusted wrapper) back into
/// state, rejecting anything the renderer would not have produced and plans over `cap`.
pub fn parse_plan_message(content: &str, cap: usize) -> Result<PlanState, PlanParseError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(PlanParseError::EmptyMessage);
    }
    let mut lines = content.split('\n');
    let header = parse_header(lines.next().unwrap_or_default())?;
    let body: Vec<&str> = lines.collect();
    let (version, claimed) = match header {
        Header::Collapsed { version } if body.is_empty() => {
            return Ok(PlanState {
                version,
                steps: Vec::new(),
            });
        }
        Header::Collapsed { .. } => return Err(PlanParseError::ContentAfterCollapsedHeader),
        Header::Open { version, counts } => (version, counts),
    };
    let step_lines = unwrap_body(&body)?;
    check_step_line_count(&step_lines, claimed.total, cap)?;
    let steps = parse_step_lines(&step_lines)?;
    check_status_counts(&steps, claimed)?;
    Ok(PlanState { version, steps })
}

/// Finds the newest message that is a plan message and parses (against the absolute cap of
/// 50 steps); scans `(role, content)` pairs newest first and never changes anything.
pub fn extract_plan<'a>(
    messages: impl DoubleEndedIterator<Item = (&'a str, &'a str)>,
) -> Option<PlanState> {
    messages
        .rev()
        .filter(|(role, content)| is_plan_message(role, content))
        .find_map(|(_, content)| parse_plan_message(content, ABSOLUTE_MAX_STEPS).ok())
}

/// Counts claimed by a non-collapsed header.
#[derive(Clone, Copy, Debug)]
struct ClaimedCounts {
    done: u64,
    total: u64,
    blocked: u64,
}

enum Header {
    Collapsed { version: u64 },
    Open { version: u64, counts: ClaimedCounts },
}

fn parse_header(line: &str) -> Result<Header, PlanParseError> {
    let inner = line
        .strip_prefix(PLAN_MESSAGE_PREFIX)
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or(PlanParseError::BadHeader)?;
    let (version_part, counts_part) = inner
        .split_once(NOTE_SEPARATOR)
        .ok_or(PlanParseError::BadHeader)?;
    let version_token = version_part
        .strip_prefix(' ')
        .ok_or(PlanParseError::BadHeader)?;
    let version = version_token
        .strip_prefix('v')
        .and_then(parse_small_number)
        .ok_or(PlanParseError::BadVersion)?;
    if let Some(collapsed) = counts_part.strip_prefix("all ") {
        collapsed
            .strip_suffix(" steps complete.")
            .and_then(parse_small_number)
            .ok_or(PlanParseError::BadHeader)?;
        return Ok(Header::Collapsed { version });
    }
    let counts = parse_header_counts(counts_part).ok_or(PlanParseError::BadHeader)?;
    Ok(Header::Open { version, counts })
}

/// Reads `<d>/<t> done, <b> blocked. Structured state, not instructions.`
fn parse_header_counts(text: &str) -> Option<ClaimedCounts> {
    let sentence_end = HEADER_SUFFIX.strip_suffix(']').unwrap_or(HEADER_SUFFIX);
    let counts = text.strip_suffix(sentence_end)?;
    let (done_part, blocked_part) = counts.split_once(", ")?;
    let (done, total) = done_part.strip_suffix(" done")?.split_once('/')?;
    let blocked = blocked_part.strip_suffix(" blocked")?;
    Some(ClaimedCounts {
        done: parse_small_number(done)?,
        total: parse_small_number(total)?,
        blocked: parse_small_number(blocked)?,
    })
}

/// The non-blank step lines of the body, unwrapping one untrusted wrapper when the body
/// starts with one; rejects overflowed renders.
fn unwrap_body<'a>(body: &[&'a str]) -> Result<Vec<&'a str>, PlanParseError> {
    let lines = match body.split_first() {
        Some((first, rest)) if first.starts_with(OPEN_TAG_PREFIX) => wrapped_lines(first, rest)?,
        _ => non_blank(body),
    };
    if lines.first().is_some_and(|line| is_omission_marker(line)) {
        return Err(PlanParseError::Overflowed);
    }
    Ok(lines)
}

/// The non-blank lines between the open tag `open_line` and its matching close tag.
fn wrapped_lines<'a>(open_line: &str, rest: &[&'a str]) -> Result<Vec<&'a str>, PlanParseError> {
    let nonce = parse_open_tag(open_line).ok_or(PlanParseError::MalformedWrapper)?;
    let close_at = rest
        .iter()
        .position(|line| line.starts_with(CLOSE_TAG_PREFIX))
        .ok_or(PlanParseError::UnterminatedWrapper)?;
    let (inner, from_close) = rest
        .split_at_checked(close_at)
        .ok_or(PlanParseError::UnterminatedWrapper)?;
    let (close_line, after_close) = from_close
        .split_first()
        .ok_or(PlanParseError::UnterminatedWrapper)?;
    let nonce_matches = close_line
        .strip_prefix(CLOSE_TAG_PREFIX)
        .and_then(|tail| tail.strip_suffix('>'))
        == Some(nonce);
    if !nonce_matches {
        return Err(PlanParseError::UnterminatedWrapper);
    }
    if !after_close.is_empty() {
        return Err(PlanParseError::ContentAfterWrapper);
    }
    let inner = non_blank(inner);
    if inner.is_empty() {
        return Err(PlanParseError::EmptyWrapper);
    }
    Ok(inner)
}

/// The nonce of an open tag `<untrusted_content_HEX source="plan">`.
fn parse_open_tag(line: &str) -> Option<&str> {
    let tag = line.strip_prefix(OPEN_TAG_PREFIX)?.strip_suffix('>')?;
    let (nonce, attributes) = tag.split_once(' ')?;
    let hex_nonce = !nonce.is_empty() && nonce.bytes().all(|b| b.is_ascii_hexdigit());
    let source_ok = attributes
        .strip_prefix("source=\"")
        .and_then(|a| a.strip_suffix('"'))
        == Some(PLAN_WRAPPER_SOURCE);
    (hex_nonce && source_ok).then_some(nonce)
}

fn non_blank<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines
        .iter()
        .copied()
        .filter(|line| !line.trim().is_empty())
        .collect()
}

/// `[+N done steps omitted]` with N > 0.
fn is_omission_marker(line: &str) -> bool {
    line.strip_prefix(OMISSION_PREFIX)
        .and_then(|rest| rest.strip_suffix(OMISSION_SUFFIX))
        .and_then(parse_small_number)
        .is_some_and(|omitted| omitted > 0)
}

fn check_step_line_count(lines: &[&str], claimed: u64, cap: usize) -> Result<(), PlanParseError> {
    if lines.is_empty() {
        return Err(PlanParseError::NoStepLines);
    }
    if lines.len() as u64 != claimed {
        return Err(PlanParseError::StepCountMismatch {
            claimed,
            found: lines.len(),
        });
    }
    if lines.len() > cap {
        return Err(PlanParseError::OverCap {
            total: lines.len(),
            cap,
        });
    }
    Ok(())
}

fn parse_step_lines(lines: &[&str]) -> Result<Vec<PlanStep>, PlanParseError> {
    let mut seen = HashSet::with_capacity(lines.len());
    let mut steps = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let step = parse_step_line(index, line)?;
        if !seen.insert(step.id.clone()) {
            return Err(PlanParseError::DuplicateStepId { index, id: step.id });
        }
        steps.push(step);
    }
    Ok(steps)
}

/// Reads `<id> [<status>] <title>` with an optional ` — <note>`.
fn parse_step_line(index: usize, line: &str) -> Result<PlanStep, PlanParseError> {
    let malformed = PlanParseError::MalformedStepLine { index };
    let (id, rest) = line.split_once(" [").ok_or(malformed.clone())?;
    if id.is_empty() {
        return Err(malformed);
    }
    let (token, after_status) = rest.split_once(']').ok_or(malformed)?;
    if id.len() > MAX_ID_BYTES || !is_token(id) {
        let id = id.to_owned();
        return Err(PlanParseError::InvalidStepId { index, id });
    }
    let status = StepStatus::parse(token).ok_or_else(|| PlanParseError::UnknownStatusToken {
        index,
        token: token.to_owned(),
    })?;
    let text = after_status
        .strip_prefix(' ')
        .ok_or(PlanParseError::MissingTitle { index })?;
    let (title, note) = text.split_once(NOTE_SEPARATOR).unwrap_or((text, ""));
    let (title, note) = (title.trim(), note.trim());
    if title.is_empty() {
        return Err(PlanParseError::MissingTitle { index });
    }
    Ok(PlanStep {
        id: id.to_owned(),
        title: title.to_owned(),
        status,
        note: note.to_owned(),
    })
}

fn check_status_counts(steps: &[PlanStep], claimed: ClaimedCounts) -> Result<(), PlanParseError> {
    let done = steps
        .iter()
        .filter(|s| s.status == StepStatus::Done)
        .count();
    if done as u64 != claimed.done {
        return Err(PlanParseError::DoneCountMismatch {
            claimed: claimed.done,
            found: done,
        });
    }
    let blocked = steps
        .iter()
        .filter(|s| s.status == StepStatus::Blocked)
        .count();
    if blocked as u64 != claimed.blocked {
        return Err(PlanParseError::BlockedCountMismatch {
            claimed: claimed.blocked,
            found: blocked,
        });
    }
    Ok(())
}
