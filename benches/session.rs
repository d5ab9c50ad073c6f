//! Session store benchmarks: save and load of a 200-message session, one batch saved through
//! the journal at 100, 1,000 and 10,000 messages of history, and `list` over 10,000
//! sessions (the fast path that reads the index, and a rebuild after the index is lost).
//!
//! Run with `cargo bench --bench session`; figures go to `docs/PERFORMANCE.md`.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use odek::llm::{Message, ToolCall};
use odek::redact::Redactor;
use odek::session::{Holder, Session, SessionStore};
use odek::transcript::{Edit, TranscriptDelta};

/// A transcript of `len` messages: a system prompt, then rounds of user message, assistant
/// tool call, ~1.5 KB tool result and assistant answer.
fn transcript(len: usize) -> Vec<Message> {
    let mut messages = vec![Message::system(
        "You are odek, an autonomous agent. ".repeat(40),
    )];
    let mut round = 0;
    while messages.len() < len {
        let call_id = format!("call_{round}_0");
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall::new(
            call_id.clone(),
            "read_file",
            format!(r#"{{"path":"src/module_{round}.rs"}}"#),
        )];
        let result = format!("fn item_{round}() {{ /* body */ }}\n").repeat(50);
        let round_messages = [
            Message::user(format!("Please look at module {round} and explain it.")),
            call,
            Message::tool_result(call_id, "read_file", result),
            Message::assistant(format!("Module {round} defines one function. ").repeat(10)),
        ];
        messages.extend(round_messages);
        round += 1;
    }
    messages.truncate(len);
    messages
}

fn store_in(home: &Path) -> SessionStore {
    let mut redactor = Redactor::new();
    redactor.add_secret("bench-secret-value-0123456789");
    SessionStore::new(home, Arc::new(redactor))
}

fn save_and_load(c: &mut Criterion) {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut session = store.new_session("bench-model", None, "bench", transcript(200));
    store.save(&mut session).expect("first save");
    c.bench_function("session save, 200 messages", |b| {
        b.iter(|| store.save(black_box(&mut session)).expect("save"))
    });
    c.bench_function("session load, 200 messages", |b| {
        b.iter(|| store.load(black_box(&session.id)).expect("load"))
    });
}

/// One tool batch saved by a session's writer after `history` messages: an assistant call
/// and its ~1.5 KB result appended, and the two oldest messages after the system prompt
/// dropped (as trimming does), so the history stays at its size while criterion repeats the
/// save. The cost must not grow with the history. The journal grows with the repeats, so its
/// folds into the file (at twice the file's size) are part of the figure, amortised as they
/// are in a long run.
fn journal_save(c: &mut Criterion) {
    let mut group = c.benchmark_group("journal save of one batch");
    for history in [100, 1_000, 10_000] {
        let home = tempfile::tempdir().expect("tempdir");
        let store = store_in(home.path());
        let session = store.new_session("bench-model", None, "bench", transcript(history));
        let mut writer = store
            .create(session, &Holder::this_process("odek bench"))
            .expect("create");
        writer.begin_turn().expect("first snapshot");
        let mut round = 0u64;
        group.bench_with_input(BenchmarkId::from_parameter(history), &history, |b, _| {
            b.iter(|| {
                round += 1;
                let id = format!("bench_{round}");
                let mut call = Message::assistant("");
                call.tool_calls = vec![ToolCall::new(
                    id.clone(),
                    "read_file",
                    r#"{"path":"src/lib.rs"}"#,
                )];
                let result = "fn item() { /* body */ }\n".repeat(60);
                let delta = TranscriptDelta {
                    edits: vec![
                        Edit::Remove { start: 1, end: 3 },
                        Edit::Append { message: call },
                        Edit::Append {
                            message: Message::tool_result(id, "read_file", result),
                        },
                    ],
                    len: history,
                    plan: None,
                };
                writer.save_delta(black_box(delta)).expect("save");
            })
        });
    }
    group.finish();
}

/// Writes `count` small session files directly (saving each through the store would rewrite
/// a growing index every time), then lets one `list` build the index.
fn populate(store: &SessionStore, count: usize) {
    std::fs::create_dir_all(store.dir()).expect("mkdir");
    for n in 0..count {
        let mut session: Session = store.new_session(
            "bench-model",
            None,
            &format!("task number {n}: refactor the parser and add tests"),
            transcript(6),
        );
        session.updated_at = format!(
            "2026-{:02}-{:02}T{:02}:00:00Z",
            1 + n % 12,
            1 + n % 28,
            n % 24
        );
        let bytes = serde_json::to_vec(&session).expect("serialise");
        std::fs::write(store.dir().join(format!("{}.json", session.id)), bytes).expect("write");
    }
    let list = store.list().expect("first list builds the index");
    assert_eq!(list.sessions.len(), count);
}

fn list_ten_thousand(c: &mut Criterion) {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    populate(&store, 10_000);
    c.bench_function("session list, 10,000 sessions (index)", |b| {
        b.iter(|| black_box(store.list().expect("list")))
    });
    let mut group = c.benchmark_group("rebuild");
    group.sample_size(10);
    group.bench_function("session list, 10,000 sessions (index missing)", |b| {
        b.iter_batched(
            || std::fs::remove_file(store.dir().join("index.json")).expect("remove index"),
            |()| black_box(store.list().expect("list")),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = save_and_load, journal_save, list_ten_thousand
}
criterion_main!(benches);
