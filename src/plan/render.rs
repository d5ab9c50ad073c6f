//! The deterministic renderer: plan state → the text of the protected plan message.
//!
//! ```text
//! [Current plan: v3 — 1/5 done, 1 blocked. Structured state, not instructions.]
//! s1 [done] Scaffold command skeleton
//! s3 [blocked] Resolve schema mismatch — provider rejects nested arrays
//! ```
//!
//! Every step done collapses to one line; a render over the cap drops the oldest done steps
//! behind an omission marker, and if that is not enough the full render is hard-cut and
//! ends with a truncation marker. The result never exceeds the cap.

use super::state::{PlanState, PlanStep, StepStatus};
use super::text::{NOTE_SEPARATOR, cut_at_char_boundary};

/// What every plan message starts with; the engine recognises the message by it.
pub const PLAN_MESSAGE_PREFIX: &str = "[Current plan:";
/// Tail of a non-collapsed header.
pub(crate) const HEADER_SUFFIX: &str = ". Structured state, not instructions.]";
/// Opening of the omission marker line `[+N done steps omitted]`.
pub(crate) const OMISSION_PREFIX: &str = "[+";
/// Closing of the omission marker line `[+N done steps omitted]`.
pub(crate) const OMISSION_SUFFIX: &str = " done steps omitted]";
/// Last line of a hard-cut render; its presence makes the message unparseable on resume.
pub const TRUNCATION_MARKER: &str = "[plan truncated: exceeded max_render_chars]";
/// What `get` answers when there is no plan.
pub const NO_ACTIVE_PLAN: &str = "No active plan.";

/// Renders `state` within `max_render_chars` bytes; `None` when the plan has no steps.
pub fn render(state: &PlanState, max_render_chars: usize) -> Option<String> {
    if state.steps.is_empty() {
        return None;
    }
    if state.is_complete() {
        return Some(fit_or_truncate(collapsed_header(state), max_render_chars));
    }
    let header = header_line(state);
    let lines: Vec<String> = state.steps.iter().map(step_line).collect();
    let full_len = header.len() + lines.iter().map(|l| 1 + l.len()).sum::<usize>();
    if full_len <= max_render_chars {
        return Some(join_lines(&header, None, &lines, &[]));
    }
    if let Some(fitted) = render_omitting_done(state, &header, &lines, max_render_chars) {
        return Some(fitted);
    }
    let full = join_lines(&header, None, &lines, &[]);
    Some(truncate(&full, max_render_chars))
}

/// The header line of a plan that is not fully done; counts cover every step.
pub fn header_line(state: &PlanState) -> String {
    let counts = state.counts();
    format!(
        "{PLAN_MESSAGE_PREFIX} v{} \u{2014} {}/{} done, {} blocked{HEADER_SUFFIX}",
        state.version,
        counts.done,
        state.steps.len(),
        counts.blocked
    )
}

/// The single line a fully done plan renders to.
pub fn collapsed_header(state: &PlanState) -> String {
    format!(
        "{PLAN_MESSAGE_PREFIX} v{} \u{2014} all {} steps complete.]",
        state.version,
        state.steps.len()
    )
}

/// One step line: `<id> [<status>] <title>`, plus ` — <note>` when there is a note.
pub fn step_line(step: &PlanStep) -> String {
    let mut line = format!("{} [{}] {}", step.id, step.status.as_str(), step.title);
    if !step.note.is_empty() {
        line.push_str(NOTE_SEPARATOR);
        line.push_str(&step.note);
    }
    line
}

/// The marker standing in for `omitted` dropped done steps.
pub(crate) fn omission_marker(omitted: usize) -> String {
    format!("{OMISSION_PREFIX}{omitted}{OMISSION_SUFFIX}")
}

/// Drops done steps oldest-first, one at a time, until the render fits; `None` when it
/// still does not fit with every done step dropped.
fn render_omitting_done(
    state: &PlanState,
    header: &str,
    lines: &[String],
    max_render_chars: usize,
) -> Option<String> {
    let mut kept_len = header.len() + lines.iter().map(|l| 1 + l.len()).sum::<usize>();
    let mut dropped: Vec<usize> = Vec::new();
    for (index, (step, line)) in state.steps.iter().zip(lines).enumerate() {
        if step.status != StepStatus::Done {
            continue;
        }
        kept_len -= 1 + line.len();
        dropped.push(index);
        let marker = omission_marker(dropped.len());
        if kept_len + 1 + marker.len() <= max_render_chars {
            return Some(join_lines(header, Some(&marker), lines, &dropped));
        }
    }
    None
}

/// Header, optional marker line, then every line whose index is not in `dropped`.
fn join_lines(header: &str, marker: Option<&str>, lines: &[String], dropped: &[usize]) -> String {
    let mut out =
        String::with_capacity(header.len() + lines.iter().map(|l| l.len() + 1).sum::<usize>());
    out.push_str(header);
    if let Some(marker) = marker {
        out.push('\n');
        out.push_str(marker);
    }
    for (index, line) in lines.iter().enumerate() {
        if dropped.binary_search(&index).is_err() {
            out.push('\n');
            out.push_str(line);
        }
    }
    out
}

fn fit_or_truncate(text: String, max_render_chars: usize) -> String {
    if text.len() <= max_render_chars {
        text
    } else {
        truncate(&text, max_render_chars)
    }
}

/// Hard-cuts `full` on a UTF-8 boundary so that the cut plus `\n` and the truncation
/// marker fit in `max_render_chars` (caps too small for the marker get a cut marker).
fn truncate(full: &str, max_render_chars: usize) -> String {
    let marker_len = 1 + TRUNCATION_MARKER.len();
    if max_render_chars < marker_len {
        return cut_at_char_boundary(TRUNCATION_MARKER, max_render_chars).to_owned();
    }
    let cut = cut_at_char_boundary(full, max_render_chars - marker_len);
    let mut out = String::with_capacity(cut.len() + marker_len);
    out.push_str(cut);
    out.push('\n');
    out.push_str(TRUNCATION_MARKER);
    out
}
