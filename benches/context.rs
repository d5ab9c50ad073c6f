//! Context-manager costs on long transcripts (1,000 and 10,000 messages): graduated trimming
//! that both truncates old tool outputs and drops whole groups, the no-op check that runs
//! before every model call, the survival trim, a plan refresh that hits the render cache,
//! and the token estimate.
//!
//! Run with `cargo bench --bench context`; figures go to `docs/PERFORMANCE.md`.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use odek::config::Config;
use odek::engine::context::{Context, estimate_message};
use odek::llm::{Message, ToolCall, ToolDef};
use odek::plan::{PlanLimits, PlanStore};
use odek::tools::{RegistryParts, ToolSelection, build_registry};

/// Transcript sizes measured.
const SIZES: [usize; 2] = [1_000, 10_000];
/// A real model's context window (tokens); the budget is 75 % of it.
const WINDOW: u64 = 128_000;

/// A small deterministic generator (xorshift), so every run measures the same transcript.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The size of one tool output: mostly small, about a third over the 2000-byte truncation
/// threshold, a few large (a file read, a test log).
fn output_len(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=44 => 80 + rng.below(900) as usize,
        45..=69 => 1_000 + rng.below(1_000) as usize,
        70..=91 => 2_000 + rng.below(4_000) as usize,
        _ => 6_000 + rng.below(10_000) as usize,
    }
}

/// Text of roughly `len` bytes that looks like tool output (source lines, log lines).
fn output_text(len: usize, n: usize) -> String {
    let line =
        format!("{n:>6} | let value_{n} = compute(&input, Options {{ verbose: false }})?;\n");
    let mut s = line.repeat(len / line.len() + 1);
    s.truncate(len);
    s
}

/// One tool call with realistic arguments; the tool's name for its result.
fn call(rng: &mut Rng, id: &str, n: usize) -> ToolCall {
    let (name, args) = match rng.below(5) {
        0 | 1 => (
            "shell",
            format!(
                r#"{{"command":"cargo test --lib module_{n} 2>&1 | tail -n 40","description":"run the tests of module {n}"}}"#
            ),
        ),
        2 => ("read_file", format!(r#"{{"path":"src/module_{n}.rs"}}"#)),
        3 => (
            "search_files",
            format!(r#"{{"pattern":"fn handle_{n}","path":"src","mode":"content"}}"#),
        ),
        _ => (
            "patch",
            format!(
                r#"{{"path":"src/module_{n}.rs","old":"let value = compute(&input)?;","new":"let value = compute(&input).context(\"module {n}\")?;"}}"#
            ),
        ),
    };
    ToolCall::new(id, name, args)
}

/// A transcript of exactly `len` messages: the system prompt, the task, the plan message,
/// then assistant messages with 1–3 tool calls (some with narration or reasoning) and their
/// wrapped results, a corrective hint now and then, and a follow-up user turn every ~200
/// messages (a session continued a few times). Returns the messages (with the plan message
/// in place) and the plan store whose render cache the context holds.
fn transcript(len: usize) -> (Vec<Message>, Arc<PlanStore>) {
    let config = Config::default();
    let mut messages = vec![
        Message::system(odek::prompt::system_prompt(
            &config,
            Path::new("/home/user/project"),
            None,
        )),
        Message::user(
            "Refactor the request parser into its own module, keep the public API, and make \
             every existing test pass; add tests for the error paths.",
        ),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut n = 0usize;
    // Leave room for the plan message (inserted below) and up to two closing messages.
    while messages.len() + 1 + 4 + 2 <= len {
        n += 1;
        if n.is_multiple_of(75) {
            messages.push(Message::assistant(format!(
                "Step {n} is finished: the parser module compiles and its tests pass. "
            )));
            messages.push(Message::user(format!(
                "Good. Now continue with part {n}, and keep the changes small."
            )));
            continue;
        }
        if n.is_multiple_of(40) {
            messages.push(Message::system(
                "[Hint: the last 3 tool calls failed. Read the error messages carefully and try a different approach.]",
            ));
        }
        let calls = [1, 1, 2, 1, 3][n % 5];
        let mut assistant = Message::assistant(if n.is_multiple_of(3) {
            format!("Now I will look at module {n} and run its tests.")
        } else {
            String::new()
        });
        if n.is_multiple_of(4) {
            assistant.reasoning_content = Some(
                "The failure comes from the borrow of `input` outliving the parser; moving the \
                 allocation up one level should fix it. "
                    .repeat(3),
            );
        }
        assistant.tool_calls = (0..calls)
            .map(|k| call(&mut rng, &format!("call_{n}_{k}"), n))
            .collect();
        let results: Vec<Message> = assistant
            .tool_calls
            .iter()
            .map(|c| {
                let body = output_text(output_len(&mut rng), n);
                Message::tool_result(
                    c.id.clone(),
                    c.function.name.clone(),
                    odek::untrusted::wrap(&c.function.name, &body),
                )
            })
            .collect();
        messages.push(assistant);
        messages.extend(results);
    }
    while messages.len() + 1 < len {
        messages.push(Message::assistant(
            "All parts are done; the test suite passes.",
        ));
    }
    let store = Arc::new(PlanStore::new(PlanLimits::default()));
    let steps: Vec<serde_json::Value> = (1..=8)
        .map(|i| {
            serde_json::json!({"id": format!("s{i}"), "title": format!("Move part {i} of the parser into the new module and test it")})
        })
        .collect();
    store
        .call(&serde_json::json!({"verb": "create", "steps": steps}).to_string())
        .expect("create the plan");
    for i in 1..=3 {
        store
            .call(&serde_json::json!({"verb": "complete", "step_id": format!("s{i}")}).to_string())
            .expect("complete a step");
    }
    let mut ctx = Context::new(messages, None);
    assert!(ctx.refresh_plan(&store).is_some(), "the plan is rendered");
    assert_eq!(ctx.len(), len);
    (ctx.into_messages(), store)
}

/// The tool definitions sent with every request (the built-in tools and `plan`).
fn tool_defs(store: &Arc<PlanStore>) -> Vec<ToolDef> {
    let parts = RegistryParts {
        plan: Some(store.clone()),
        ..RegistryParts::default()
    };
    build_registry(&ToolSelection::default(), parts)
        .expect("registry")
        .defs()
        .to_vec()
}

fn bench_context(c: &mut Criterion) {
    for len in SIZES {
        let (messages, store) = transcript(len);
        let tools = tool_defs(&store);
        let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
        let tokens: u64 = messages.iter().map(estimate_message).sum();

        // The trim really does both things at this size.
        let mut probe = Context::new(messages.clone(), Some(WINDOW));
        let report = probe.trim_to_budget(&tools).expect("over budget");
        assert!(
            report.truncated > 0 && report.dropped_groups > 0,
            "{report:?}"
        );
        eprintln!(
            "context/{len}: {bytes} content bytes, ~{tokens} tokens; trim at window {WINDOW}: \
             {} outputs truncated, {} groups dropped, {} messages left",
            report.truncated,
            report.dropped_groups,
            probe.len()
        );
        let mut survivor = Context::new(messages.clone(), Some(WINDOW));
        let removed = survivor.survival_trim(&tools, Some(WINDOW * 3 / 4)).removed;
        eprintln!("context/{len}: survival trim removes {removed} messages");

        let mut group = c.benchmark_group(format!("context/{len}"));
        group.bench_function("trim_to_budget", |b| {
            b.iter_batched(
                || Context::new(messages.clone(), Some(WINDOW)),
                |mut ctx| {
                    let report = ctx.trim_to_budget(black_box(&tools));
                    (ctx, report)
                },
                BatchSize::LargeInput,
            )
        });
        // Under budget: what runs before every model call while nothing has to change.
        let mut roomy = Context::new(messages.clone(), Some(u64::MAX / 2));
        assert!(roomy.trim_to_budget(&tools).is_none());
        group.bench_function("trim_to_budget_under_budget", |b| {
            b.iter(|| roomy.trim_to_budget(black_box(&tools)))
        });
        group.bench_function("survival_trim", |b| {
            b.iter_batched(
                || Context::new(messages.clone(), Some(WINDOW)),
                |mut ctx| {
                    let report = ctx.survival_trim(black_box(&tools), Some(WINDOW * 3 / 4));
                    (ctx, report)
                },
                BatchSize::LargeInput,
            )
        });
        // A context whose cache holds the current plan version: the refresh after a tool
        // batch that did not touch the plan.
        let mut cached = Context::new(messages.clone(), Some(WINDOW));
        cached.sync_plan(&store, None).expect("the plan restores");
        assert!(cached.refresh_plan(&store).is_none(), "cache hit");
        group.bench_function("refresh_plan_cached", |b| {
            b.iter(|| cached.refresh_plan(black_box(&store)))
        });
        let ctx = Context::new(messages.clone(), Some(WINDOW));
        group.bench_function("estimate", |b| b.iter(|| ctx.estimate(black_box(&tools))));
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_context
}
criterion_main!(benches);
