//! One test per strict-parser rejection case, each asserting the exact error text.

use super::{NONCE, seed_example};
use crate::plan::{parse_plan_message, render, wrap_plan_message};

const HEADER: &str =
    "[Current plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions.]";
const BODY: &str = "s1 [done] one\ns2 [blocked] two — why\ns3 [pending] three";

fn rejects(content: &str, expected: &str) {
    match parse_plan_message(content, 50) {
        Ok(state) => panic!("accepted {content:?} as {state:?}"),
        Err(err) => assert_eq!(err.to_string(), expected, "content: {content:?}"),
    }
}

fn with_header(header: &str) -> String {
    format!("{header}\n{BODY}")
}

fn wrapped(body: &str) -> String {
    format!(
        "{HEADER}\n{}",
        crate::untrusted::wrap_with_nonce(NONCE, "plan", body)
    )
}

#[test]
fn the_fixture_parses() {
    let state = parse_plan_message(&with_header(HEADER), 50).unwrap();
    assert_eq!(state.version, 3);
    assert_eq!(state.steps.len(), 3);
    assert_eq!(state.steps[1].note, "why");
    assert_eq!(parse_plan_message(&wrapped(BODY), 50).unwrap(), state);
}

#[test]
fn empty_message() {
    rejects("", "plan: empty message");
    rejects(" \n\t ", "plan: empty message");
}

#[test]
fn case_01_header_prefix_and_closing_bracket() {
    rejects(
        &with_header(
            "[Current Plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header(
            "Current plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions.",
        ),
        "bad plan header",
    );
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions.] ",
        ),
        "bad plan header",
    );
    rejects("s1 [done] one", "bad plan header");
}

#[test]
fn case_02_header_without_em_dash_separator() {
    rejects(
        &with_header(
            "[Current plan: v3 - 1/3 done, 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header("[Current plan: v3—1/3 done, 1 blocked. Structured state, not instructions.]"),
        "bad plan header",
    );
    rejects("[Current plan:]", "bad plan header");
}

#[test]
fn case_03_bad_version_token() {
    for version in [
        "3",
        "vx",
        "v",
        "v-1",
        "v+1",
        "V3",
        "v 3",
        "v3a",
        "v1234567890",
        "v٣",
    ] {
        let header = format!(
            "[Current plan: {version} — 1/3 done, 1 blocked. Structured state, not instructions.]"
        );
        rejects(&with_header(&header), "bad plan version");
    }
    // The token must follow exactly one space.
    rejects(
        &with_header(
            "[Current plan:v3 — 1/3 done, 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
}

#[test]
fn case_04_collapsed_header_with_bad_count() {
    for count in ["five", "", "-5", "5 ", "1234567890"] {
        rejects(
            &format!("[Current plan: v7 — all {count} steps complete.]"),
            "bad plan header",
        );
    }
    rejects(
        "[Current plan: v7 — all 5 steps complete]",
        "bad plan header",
    );
    rejects(
        "[Current plan: v7 — all 5 step complete.]",
        "bad plan header",
    );
}

#[test]
fn case_05_missing_structured_state_suffix() {
    rejects(
        &with_header("[Current plan: v3 — 1/3 done, 1 blocked.]"),
        "bad plan header",
    );
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions!]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 done, 1 blocked. Structured state, not instructions. ]",
        ),
        "bad plan header",
    );
}

#[test]
fn case_06_missing_comma_between_done_and_blocked() {
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 done 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 done,1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
}

#[test]
fn case_07_done_part_shape() {
    rejects(
        &with_header(
            "[Current plan: v3 — 1 of 3 done, 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header(
            "[Current plan: v3 — 1/3 finished, 1 blocked. Structured state, not instructions.]",
        ),
        "bad plan header",
    );
    rejects(
        &with_header("[Current plan: v3 — 1/3, 1 blocked. Structured state, not instructions.]"),
        "bad plan header",
    );
}

#[test]
fn case_08_done_or_total_not_digits() {
    for part in ["x/3", "1/x", "/3", "1/", "+1/3", "1/ 3", "1/3/3"] {
        let header = format!(
            "[Current plan: v3 — {part} done, 1 blocked. Structured state, not instructions.]"
        );
        rejects(&with_header(&header), "bad plan header");
    }
}

#[test]
fn case_09_blocked_part_shape_or_digits() {
    for part in [
        "x blocked",
        "1 stuck",
        "blocked",
        "-1 blocked",
        "1  blocked",
    ] {
        let header =
            format!("[Current plan: v3 — 1/3 done, {part}. Structured state, not instructions.]");
        rejects(&with_header(&header), "bad plan header");
    }
}

#[test]
fn case_10_content_after_collapsed_header() {
    rejects(
        "[Current plan: v7 — all 3 steps complete.]\ns1 [done] one",
        "plan: unexpected content after collapsed plan header",
    );
    rejects(
        "[Current plan: v7 — all 3 steps complete.]\n\n  \nx",
        "plan: unexpected content after collapsed plan header",
    );
}

#[test]
fn case_11_omission_marker_first() {
    let body = "[+1 done steps omitted]\ns2 [blocked] two\ns3 [pending] three";
    rejects(
        &format!("{HEADER}\n{body}"),
        "plan: overflowed plan (done steps omitted) cannot be resumed",
    );
    rejects(
        &wrapped(body),
        "plan: overflowed plan (done steps omitted) cannot be resumed",
    );
    // A real overflowed render, plain and wrapped.
    let mut state = seed_example();
    state.steps[0].title = "t".repeat(150);
    let rendered = render(&state, 300).unwrap();
    assert!(rendered.contains("[+1 done steps omitted]"), "{rendered}");
    rejects(
        &rendered,
        "plan: overflowed plan (done steps omitted) cannot be resumed",
    );
    rejects(
        &wrap_plan_message(&rendered, NONCE),
        "plan: overflowed plan (done steps omitted) cannot be resumed",
    );
}

#[test]
fn case_11b_omission_marker_elsewhere_is_a_malformed_step_line() {
    let body = "s1 [done] one\n[+1 done steps omitted]\ns3 [pending] three";
    rejects(
        &format!("{HEADER}\n{body}"),
        "plan: step[1]: malformed step line",
    );
    // A zero count is not a valid marker either: it fails as a step line.
    let body = "[+0 done steps omitted]\ns2 [blocked] two\ns3 [pending] three";
    rejects(
        &format!("{HEADER}\n{body}"),
        "plan: step[0]: malformed step line",
    );
}

#[test]
fn case_12_malformed_wrapper_open_line() {
    for open in [
        "<untrusted_content_0123 source=\"plan\"",
        "<untrusted_content_0123 source=\"plan\"> ",
        "<untrusted_content_ source=\"plan\">",
        "<untrusted_content_xyz source=\"plan\">",
        "<untrusted_content_0123 source=\"read_file\">",
        "<untrusted_content_0123>",
        "<untrusted_content_0123 source=plan>",
    ] {
        let content = format!("{HEADER}\n{open}\n{BODY}\n</untrusted_content_0123>");
        rejects(&content, "plan: malformed untrusted wrapper");
    }
}

#[test]
fn case_13_unterminated_wrapper() {
    let open = format!("<untrusted_content_{NONCE} source=\"plan\">");
    rejects(
        &format!("{HEADER}\n{open}\n{BODY}"),
        "plan: unterminated untrusted wrapper",
    );
    // A close tag whose nonce differs from the open tag's does not terminate it.
    rejects(
        &format!("{HEADER}\n{open}\n{BODY}\n</untrusted_content_ffff>"),
        "plan: unterminated untrusted wrapper",
    );
    rejects(
        &format!("{HEADER}\n{open}\n{BODY}\n</untrusted_content_{NONCE}"),
        "plan: unterminated untrusted wrapper",
    );
}

#[test]
fn case_14_content_after_close_tag() {
    rejects(
        &format!("{}\nextra", wrapped(BODY)),
        "plan: content after wrapper close tag",
    );
    rejects(
        &format!("{}\n\ns4 [pending] four", wrapped(BODY)),
        "plan: content after wrapper close tag",
    );
}

#[test]
fn case_15_empty_wrapper() {
    let open = format!("<untrusted_content_{NONCE} source=\"plan\">");
    let close = format!("</untrusted_content_{NONCE}>");
    rejects(
        &format!("{HEADER}\n{open}\n{close}"),
        "plan: empty untrusted wrapper",
    );
    rejects(
        &format!("{HEADER}\n{open}\n  \n\t\n{close}"),
        "plan: empty untrusted wrapper",
    );
}

#[test]
fn case_16_no_step_lines() {
    rejects(HEADER, "plan: no step lines");
    rejects(&format!("{HEADER}\n   "), "plan: no step lines");
}

#[test]
fn case_17_step_count_mismatch() {
    rejects(
        &format!("{HEADER}\ns1 [done] one\ns2 [blocked] two"),
        "plan: header claims 3 steps, found 2",
    );
    rejects(
        &format!("{HEADER}\n{BODY}\ns4 [pending] four"),
        "plan: header claims 3 steps, found 4",
    );
}

#[test]
fn case_18_over_cap() {
    match parse_plan_message(&with_header(HEADER), 2) {
        Err(err) => assert_eq!(err.to_string(), "plan: 3 steps exceed cap 2"),
        Ok(state) => panic!("accepted {state:?}"),
    }
    assert!(parse_plan_message(&with_header(HEADER), 3).is_ok());
}

fn with_lines(lines: &[&str]) -> String {
    format!("{HEADER}\n{}", lines.join("\n"))
}

#[test]
fn case_19a_malformed_step_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["s1 [done] one", "s2 blocked two", "s3 [pending] three"],
            "plan: step[1]: malformed step line",
        ),
        (
            &["s1 [done] one", " [blocked] two", "s3 [pending] three"],
            "plan: step[1]: malformed step line",
        ),
        (
            &["s1 [done one", "s2 [blocked] two", "s3 [pending] three"],
            "plan: step[0]: malformed step line",
        ),
        (
            &["s1 [done] one", "s2 [blocked] two", "s3[pending] three"],
            "plan: step[2]: malformed step line",
        ),
        (
            &[
                "s1 [done] one",
                "s2 [blocked] two",
                "[plan truncated: exceeded max_render_chars]",
            ],
            "plan: step[2]: malformed step line",
        ),
    ];
    for (lines, expected) in cases {
        rejects(&with_lines(lines), expected);
    }
}

#[test]
fn case_19b_invalid_step_id() {
    let long = format!("{} [done] one", "x".repeat(33));
    let cases: &[(&str, &str)] = &[
        (
            long.as_str(),
            &format!("plan: step[0]: invalid step id \"{}\"", "x".repeat(33)),
        ),
        (
            "s\t1 [done] one",
            "plan: step[0]: invalid step id \"s\\t1\"",
        ),
        ("a]b [done] one", "plan: step[0]: invalid step id \"a]b\""),
        ("a[b [done] one", "plan: step[0]: invalid step id \"a[b\""),
        ("a b [done] one", "plan: step[0]: invalid step id \"a b\""),
    ];
    for (first, expected) in cases {
        rejects(
            &with_lines(&[first, "s2 [blocked] two", "s3 [pending] three"]),
            expected,
        );
    }
}

#[test]
fn case_19c_unknown_status_token() {
    rejects(
        &with_lines(&[
            "s1 [finished] one",
            "s2 [blocked] two",
            "s3 [pending] three",
        ]),
        "plan: step[0]: unknown status token \"finished\"",
    );
    rejects(
        &with_lines(&["s1 [done] one", "s2 [Blocked] two", "s3 [pending] three"]),
        "plan: step[1]: unknown status token \"Blocked\"",
    );
    rejects(
        &with_lines(&["s1 [done] one", "s2 [] two", "s3 [pending] three"]),
        "plan: step[1]: unknown status token \"\"",
    );
}

#[test]
fn case_19d_missing_title() {
    for line in [
        "s3 [pending]",
        "s3 [pending]three",
        "s3 [pending]  — note only",
        "s3 [pending]   ",
    ] {
        rejects(
            &with_lines(&["s1 [done] one", "s2 [blocked] two", line]),
            "plan: step[2]: missing title",
        );
    }
}

#[test]
fn case_20_duplicate_step_id() {
    rejects(
        &with_lines(&["s1 [done] one", "s1 [blocked] two", "s3 [pending] three"]),
        "plan: step[1]: duplicate step id \"s1\"",
    );
}

#[test]
fn case_21_status_count_mismatch() {
    rejects(
        &with_lines(&["s1 [done] one", "s2 [blocked] two", "s3 [done] three"]),
        "plan: header claims 1 done, found 2",
    );
    rejects(
        &with_lines(&["s1 [done] one", "s2 [pending] two", "s3 [pending] three"]),
        "plan: header claims 1 blocked, found 0",
    );
}

#[test]
fn truncated_renders_are_always_rejected() {
    let steps = (1..=6)
        .map(|i| {
            super::step(
                &format!("s{i}"),
                crate::plan::StepStatus::Pending,
                &"w".repeat(80),
                "",
            )
        })
        .collect();
    let state = super::plan(4, steps);
    for cap in 200..=560 {
        let rendered = render(&state, cap).unwrap();
        assert!(rendered.ends_with("[plan truncated: exceeded max_render_chars]"));
        assert!(parse_plan_message(&rendered, 50).is_err(), "cap {cap}");
        assert!(
            parse_plan_message(&wrap_plan_message(&rendered, NONCE), 50).is_err(),
            "cap {cap}"
        );
    }
}
