//! `/plan_status`: the chat session's structured plan as one MarkdownV2 message — the seed's
//! renderer. Header `📋 *Plan* — vN · X/Y done[ · Z blocked]`, one line per step (glyph, id
//! as code, title, note cut at 80 characters), at most 3800 UTF-16 units as sent: whole step
//! lines are dropped from the end behind `_N more step\(s\) omitted_`.

use super::text::{escape, escape_code, utf16_len};
use crate::plan::{PlanState, StepStatus};

/// The reply when the session has no plan, or none that parses (sent as plain text).
pub const NO_PLAN: &str = "No active plan in this session.";
/// The bound on the reply, in UTF-16 units of the text as sent.
pub const MAX_UNITS: usize = 3800;
/// Notes longer than this many characters are cut and end with `…`.
pub const NOTE_MAX_CHARS: usize = 80;

/// What `/plan_status` sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanStatus {
    /// MarkdownV2 text.
    Markdown(String),
    /// Plain text ([`NO_PLAN`]).
    Plain(&'static str),
}

/// The glyph of a step status.
pub fn glyph(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Done => "✅",
        StepStatus::InProgress => "🔄",
        StepStatus::Pending => "⬜",
        StepStatus::Blocked => "⛔",
    }
}

/// A note cut at [`NOTE_MAX_CHARS`] characters, with `…` when it was longer (the web
/// panel cuts the same way).
pub fn cut_note(note: &str) -> String {
    crate::text::truncate(note, NOTE_MAX_CHARS).into_owned()
}

/// Renders the plan (or its absence) for `/plan_status`.
pub fn render(plan: Option<&PlanState>) -> PlanStatus {
    let Some(plan) = plan else {
        return PlanStatus::Plain(NO_PLAN);
    };
    let counts = plan.counts();
    let mut header = format!(
        "📋 *Plan* — v{} · {}/{} done",
        plan.version,
        counts.done,
        plan.steps.len()
    );
    if counts.blocked > 0 {
        header.push_str(&format!(" · {} blocked", counts.blocked));
    }
    let lines: Vec<String> = plan
        .steps
        .iter()
        .map(|s| {
            let mut line = format!(
                "{} `{}` {}",
                glyph(s.status),
                escape_code(&s.id),
                escape(&s.title)
            );
            if !s.note.is_empty() {
                line.push_str(" — _");
                line.push_str(&escape(&cut_note(&s.note)));
                line.push('_');
            }
            line
        })
        .collect();
    PlanStatus::Markdown(bounded(&header, &lines))
}

/// Header and as many whole lines as fit in [`MAX_UNITS`], with the omission trailer when
/// lines were dropped.
fn bounded(header: &str, lines: &[String]) -> String {
    let joined = |kept: &[String]| {
        let mut text = header.to_string();
        for line in kept {
            text.push('\n');
            text.push_str(line);
        }
        text
    };
    let all = joined(lines);
    if utf16_len(&all) <= MAX_UNITS {
        return all;
    }
    let mut kept = lines.len();
    loop {
        kept -= 1;
        let trailer = format!("_{} more step\\(s\\) omitted_", lines.len() - kept);
        let text = format!("{}\n{trailer}", joined(&lines[..kept]));
        if utf16_len(&text) <= MAX_UNITS || kept == 0 {
            return text;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanStep;

    fn step(id: &str, title: &str, status: StepStatus, note: &str) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: title.into(),
            status,
            note: note.into(),
        }
    }

    fn markdown(p: PlanStatus) -> String {
        match p {
            PlanStatus::Markdown(m) => m,
            PlanStatus::Plain(t) => panic!("plain: {t}"),
        }
    }

    #[test]
    fn no_plan_is_the_plain_sentence() {
        assert_eq!(
            render(None),
            PlanStatus::Plain("No active plan in this session.")
        );
    }

    #[test]
    fn header_glyphs_ids_titles_and_notes() {
        let plan = PlanState {
            version: 4,
            steps: vec![
                step("s1", "Scaffold", StepStatus::Done, ""),
                step(
                    "s2",
                    "Wire flags",
                    StepStatus::InProgress,
                    "short flags left",
                ),
                step("s3", "Docs", StepStatus::Pending, ""),
                step("s4", "Ship", StepStatus::Blocked, "waiting for CI"),
            ],
        };
        assert_eq!(
            markdown(render(Some(&plan))),
            "📋 *Plan* — v4 · 1/4 done · 1 blocked\n\
             ✅ `s1` Scaffold\n\
             🔄 `s2` Wire flags — _short flags left_\n\
             ⬜ `s3` Docs\n\
             ⛔ `s4` Ship — _waiting for CI_"
        );
        let unblocked = PlanState {
            version: 1,
            steps: vec![step("a", "A", StepStatus::Pending, "")],
        };
        assert_eq!(
            markdown(render(Some(&unblocked))),
            "📋 *Plan* — v1 · 0/1 done\n⬜ `a` A"
        );
        let collapsed = PlanState {
            version: 9,
            steps: vec![],
        };
        assert_eq!(
            markdown(render(Some(&collapsed))),
            "📋 *Plan* — v9 · 0/0 done"
        );
    }

    #[test]
    fn hostile_titles_and_notes_are_escaped_and_notes_cut_at_80_characters() {
        let note = "é".repeat(100);
        let plan = PlanState {
            version: 2,
            steps: vec![step(
                "x`1",
                "*bold* [link](http://e.x) _it_ ~s~ `c` > #1 + - = | {} . ! \\",
                StepStatus::Pending,
                &note,
            )],
        };
        let text = markdown(render(Some(&plan)));
        assert!(text.contains(
            "⬜ `x\\`1` \\*bold\\* \\[link\\]\\(http://e\\.x\\) \\_it\\_ \\~s\\~ \\`c\\` \\> \\#1 \\+ \\- \\= \\| \\{\\} \\. \\! \\\\"
        ), "{text}");
        assert!(
            text.ends_with(&format!(" — _{}…_", "é".repeat(80))),
            "{text}"
        );
    }

    #[test]
    fn a_long_plan_drops_whole_lines_behind_the_trailer() {
        let plan = PlanState {
            version: 3,
            steps: (1..=50)
                .map(|i| {
                    step(
                        &format!("s{i}"),
                        &"Ω".repeat(150),
                        StepStatus::Pending,
                        "note",
                    )
                })
                .collect(),
        };
        let text = markdown(render(Some(&plan)));
        assert!(utf16_len(&text) <= MAX_UNITS, "{}", utf16_len(&text));
        let lines: Vec<&str> = text.lines().collect();
        let shown = lines.len() - 2;
        assert_eq!(
            *lines.last().expect("trailer"),
            format!("_{} more step\\(s\\) omitted_", 50 - shown)
        );
        for (i, line) in lines[1..=shown].iter().enumerate() {
            assert!(line.starts_with(&format!("⬜ `s{}` ", i + 1)), "{line}");
            assert!(line.ends_with(" — _note_"), "a cut line: {line}");
        }
        // One more line would not have fitted.
        assert!((20..50).contains(&shown), "{shown}");
    }
}
