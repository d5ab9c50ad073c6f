//! Render, parse and tool-call costs of the plan module at the default (12) and absolute
//! (50) step caps. Figures are recorded in `docs/PERFORMANCE.md`.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use odek::plan::{
    PlanLimits, PlanState, PlanStep, PlanStore, StepStatus, parse_plan_message, render,
    wrap_plan_message,
};

/// A realistic plan: a quarter done, one blocked with a note, the rest pending.
fn sample_plan(steps: usize) -> PlanState {
    let steps = (0..steps)
        .map(|i| {
            let status = match i {
                _ if i < steps / 4 => StepStatus::Done,
                _ if i == steps / 4 => StepStatus::InProgress,
                _ if i == steps / 4 + 1 => StepStatus::Blocked,
                _ => StepStatus::Pending,
            };
            let note = if status == StepStatus::Blocked {
                "provider rejects nested arrays in the tool schema".to_owned()
            } else {
                String::new()
            };
            PlanStep {
                id: format!("s{}", i + 1),
                title: format!(
                    "Implement part {} of the feature and cover it with tests",
                    i + 1
                ),
                status,
                note,
            }
        })
        .collect();
    PlanState { version: 7, steps }
}

fn bench_render(c: &mut Criterion) {
    for steps in [12, 50] {
        let state = sample_plan(steps);
        c.bench_function(&format!("plan/render/{steps}"), |b| {
            b.iter(|| render(black_box(&state), black_box(8000)))
        });
    }
}

fn bench_render_overflow(c: &mut Criterion) {
    // 50 steps at the default 2000-byte cap: every done step is dropped, then the hard cut.
    let state = sample_plan(50);
    c.bench_function("plan/render_over_cap/50", |b| {
        b.iter(|| render(black_box(&state), black_box(2000)))
    });
}

fn bench_parse(c: &mut Criterion) {
    for steps in [12, 50] {
        let state = sample_plan(steps);
        let rendered = render(&state, 8000).unwrap_or_default();
        let message = wrap_plan_message(&rendered, "0123456789abcdef");
        assert_eq!(parse_plan_message(&message, 50).ok(), Some(state));
        c.bench_function(&format!("plan/parse/{steps}"), |b| {
            b.iter(|| parse_plan_message(black_box(&message), black_box(50)))
        });
    }
}

fn bench_tool_call(c: &mut Criterion) {
    for steps in [12, 50] {
        let store = PlanStore::new(PlanLimits::clamped(50, 8000));
        store.restore(sample_plan(steps));
        // Alternating statuses keep every call effective (a version bump and a fresh render).
        let calls = [
            r#"{"verb":"update","updates":[{"id":"s4","status":"in_progress","note":"halfway"}]}"#,
            r#"{"verb":"update","updates":[{"id":"s4","status":"pending","note":"again"}]}"#,
        ];
        let mut turn = 0;
        c.bench_function(&format!("plan/call_update/{steps}"), |b| {
            b.iter(|| {
                turn ^= 1;
                store.call(black_box(calls[turn]))
            })
        });
    }
}

criterion_group!(
    benches,
    bench_render,
    bench_render_overflow,
    bench_parse,
    bench_tool_call
);
criterion_main!(benches);
