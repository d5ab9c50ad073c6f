//! Memory benchmarks over `odek.db` (SQLite as itself, in a temporary home):
//! - `session_search` over 10,000 indexed sessions: criterion's figure, and p50/p99 over 500
//!   queries of one to three words;
//! - the index update at the end of one turn (two new messages of a 40-message session);
//! - the database's size per 1,000 sessions;
//! - the memory block of a turn (active facts of both stores, rendered).
//!
//! Run with `cargo bench --bench memory`; figures go to `docs/PERFORMANCE.md`.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use odek::llm::{Message, ToolCall};
use odek::memory::facts::WriteContext;
use odek::memory::{Budgets, Memory, MemoryTarget};
use odek::redact::Redactor;
use odek::session::{Session, SessionStore};

const SESSIONS: usize = 10_000;

/// Words that sessions talk about; each session mixes a few, so a query matches a share.
const TOPICS: &[&str] = &[
    "parser",
    "scheduler",
    "migration",
    "tokenizer",
    "allocator",
    "renderer",
    "cache",
    "index",
    "webhook",
    "sandbox",
    "telemetry",
    "retry",
    "backoff",
    "cursor",
    "checksum",
    "manifest",
    "lockfile",
    "compiler",
    "linker",
    "profiler",
    "benchmark",
    "fixture",
    "snapshot",
    "daemon",
    "socket",
    "certificate",
    "resolver",
    "serializer",
    "throttle",
    "watchdog",
    "zeppelin",
    "aardvark",
    "quartz",
    "nebula",
    "lantern",
    "harbour",
    "meadow",
    "glacier",
    "falcon",
    "orchid",
];

fn topic(i: usize, k: usize) -> &'static str {
    TOPICS[(i * 7 + k * 13) % TOPICS.len()]
}

/// A session of `turns` rounds (user, tool call, result, answer) about three topics.
fn session(store: &SessionStore, i: usize, turns: usize) -> Session {
    let mut messages = vec![Message::system("You are odek.")];
    for t in 0..turns {
        let (a, b, c) = (topic(i, t), topic(i, t + 1), topic(i, t + 2));
        messages.push(Message::user(format!(
            "Look at the {a} and tell me why the {b} fails when the {c} restarts (case {i}.{t})."
        )));
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall::new(
            format!("c{t}"),
            "search_files",
            format!(r#"{{"pattern": "{a}_state", "path": "src/{b}"}}"#),
        )];
        messages.push(call);
        messages.push(Message::tool_result(
            format!("c{t}"),
            "search_files",
            "src/x.rs:1: match",
        ));
        messages.push(Message::assistant(format!(
            "The {b} keeps a stale {a} handle; after the {c} restarts it reads freed state. \
             I moved the handle into the {c} and added a regression test for case {i}.{t}."
        )));
    }
    let mut s = store.new_session("bench-model", None, &format!("task {i}"), messages);
    s.id = format!("20260101-{i:032x}");
    s
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn benches(c: &mut Criterion) {
    let home = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(home.path(), Default::default());
    let memory = Memory::open(home.path()).expect("opens");
    let redactor = Redactor::new();
    let started = Instant::now();
    let mut size_at_1000 = 0;
    for i in 0..SESSIONS {
        memory
            .index_session(&session(&store, i, 3), &redactor, false)
            .expect("indexes");
        if i == 999 {
            size_at_1000 = db_bytes(home.path());
        }
    }
    eprintln!(
        "indexed {SESSIONS} sessions (12 messages each) in {:.1} s; odek.db: {} bytes after 1,000 sessions, {} after {SESSIONS}",
        started.elapsed().as_secs_f64(),
        size_at_1000,
        db_bytes(home.path())
    );

    let queries: Vec<String> = (0..500)
        .map(|q| {
            (0..(1 + q % 3))
                .map(|k| topic(q * 3 + 1, k))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            black_box(memory.search_sessions(q, 5).expect("search"));
            t.elapsed()
        })
        .collect();
    times.sort();
    eprintln!(
        "session_search over {SESSIONS} sessions, 500 queries: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().expect("times")
    );
    c.bench_function("session_search/10000_sessions/two_words", |b| {
        b.iter(|| {
            black_box(
                memory
                    .search_sessions("zeppelin scheduler", 5)
                    .expect("search"),
            )
        })
    });

    // One turn of a 40-message session: the two new messages are indexed, nothing else.
    let mut grown = session(&store, SESSIONS + 1, 10);
    memory
        .index_session(&grown, &redactor, false)
        .expect("indexes");
    let mut turn = 0;
    c.bench_function("index_update/one_turn_of_a_40_message_session", |b| {
        b.iter(|| {
            turn += 1;
            grown
                .messages
                .push(Message::user(format!("and the cursor {turn}?")));
            grown
                .messages
                .push(Message::assistant(format!("The cursor {turn} is fine.")));
            black_box(
                memory
                    .index_session(&grown, &redactor, false)
                    .expect("indexes"),
            )
        })
    });

    let w = WriteContext {
        project: "/bench/project",
        pending: false,
        session_id: None,
        source: "user",
        budgets: Budgets::default(),
    };
    for i in 0..12 {
        let target = if i < 4 {
            MemoryTarget::User
        } else {
            MemoryTarget::Project
        };
        memory
            .add_fact(
                &w,
                target,
                &format!(
                    "Fact {i}: the {} keeps its {} in conn_{i}.rs",
                    topic(i, 0),
                    topic(i, 1)
                ),
            )
            .expect("adds");
    }
    c.bench_function("memory_block/12_facts", |b| {
        b.iter(|| {
            let (user, project) = memory.active_facts("/bench/project").expect("facts");
            black_box(odek::memory::block::render(
                &user,
                &project,
                "/bench/project",
            ))
        })
    });
}

/// The database file's size once its write-ahead log is folded in.
fn db_bytes(home: &std::path::Path) -> u64 {
    let conn = rusqlite::Connection::open(home.join("odek.db")).expect("opens");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    std::fs::metadata(home.join("odek.db")).map_or(0, |m| m.len())
}

criterion_group! {
    name = memory;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(memory);
