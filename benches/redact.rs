//! Redaction throughput: 64 KiB of clean source-like text (with the three registered known
//! values a real run has: API key, Telegram token, one secret environment value; and with
//! the pattern layer alone), the same text with ten secrets sprinkled in, and one short
//! message (most strings a session save redacts are short).

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use odek::redact::{Redactor, StreamRedactor};

const TARGET_BYTES: usize = 64 * 1024;

/// Rust-like source with URLs, numbers, colons and capitalised words, the things the
/// pattern prefilter has to look at without matching.
fn clean_text() -> String {
    let mut text = String::with_capacity(TARGET_BYTES + 512);
    let mut line = 0usize;
    while text.len() < TARGET_BYTES {
        text.push_str(&format!(
            "/// Handles request {line} (see https://example.com/docs/{line}).\n\
             pub fn handle_{line}(ctx: &mut Context, input: &str) -> Result<Output, Error> {{\n    \
             let value = ctx.lookup(\"key_{line}\").unwrap_or_default();\n    \
             if value.len() > {line} {{ return Err(Error::TooLong {{ max: {line} }}); }}\n    \
             let password_hint = Some(\"Enter the password\");\n    \
             tracing::debug!(target: \"odek::tools\", \"value={{value}} at 12:34:56\");\n    \
             Ok(Output::new(value, MAX_TOKENS, \"Ünïcödé – 日本語\"))\n}}\n\n",
        ));
        line += 1;
    }
    text
}

const SECRETS: [&str; 10] = [
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "api_key=abcdefghijklmnopqrstuvwxyz0123",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
    "postgres://app:s3cretpassword@db.internal:5432/app",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "xoxb-1234567890-1234567890-abcdefghijklmnopqrstuvwx",
    "123456789:AAHfakeTokenValueExample0123456789abc",
    "registered-known-secret-value",
];

fn text_with_secrets(clean: &str) -> String {
    let step = clean.len() / SECRETS.len();
    let mut text = String::with_capacity(clean.len() + 1024);
    let mut start = 0;
    for (index, secret) in SECRETS.iter().enumerate() {
        let mut end = ((index + 1) * step).min(clean.len());
        while !clean.is_char_boundary(end) {
            end += 1;
        }
        text.push_str(&clean[start..end]);
        text.push_str(&format!("\n// leaked: {secret}\n"));
        start = end;
    }
    text.push_str(&clean[start..]);
    text
}

/// An assistant message of the usual length, nothing to redact.
const SHORT_MESSAGE: &str = "I'll run the tests again with the new token budget, then update \
    docs/CONFIG.md: the failure was in src/engine/batch.rs:212 (a timeout after 30 s), and the \
    password prompt test passes now.";

fn redactor() -> Redactor {
    let mut redactor = Redactor::new();
    redactor.add_secret("registered-known-secret-value");
    redactor.add_secret("123456789:AAHfakeTokenValueExample0123456789abc");
    redactor.add_secrets_from_env([("DB_PASSWORD".to_string(), "hunter2hunter2".to_string())]);
    redactor
}

fn bench_redact(c: &mut Criterion) {
    let redactor = redactor();
    let clean = clean_text();
    let dirty = text_with_secrets(&clean);
    assert!(matches!(
        redactor.redact(&clean),
        std::borrow::Cow::Borrowed(_)
    ));
    assert!(!redactor.redact(&dirty).contains("ghp_abcdefghij"));
    assert!(matches!(
        redactor.redact(SHORT_MESSAGE),
        std::borrow::Cow::Borrowed(_)
    ));

    let mut group = c.benchmark_group("redact");
    group.throughput(Throughput::Bytes(clean.len() as u64));
    group.bench_function("clean_64k", |b| {
        b.iter(|| redactor.redact(black_box(&clean)).len())
    });
    let patterns_only = Redactor::new();
    group.bench_function("clean_64k_patterns_only", |b| {
        b.iter(|| patterns_only.redact(black_box(&clean)).len())
    });
    group.throughput(Throughput::Bytes(dirty.len() as u64));
    group.bench_function("ten_secrets_64k", |b| {
        b.iter(|| redactor.redact(black_box(&dirty)).len())
    });
    group.throughput(Throughput::Bytes(SHORT_MESSAGE.len() as u64));
    group.bench_function("short_message", |b| {
        b.iter(|| redactor.redact(black_box(SHORT_MESSAGE)).len())
    });
    group.finish();
}

/// An answer streamed in 16-byte pieces through the stream redactor: prose in which nothing
/// a secret starts with is in view (it goes out a word behind), and the same prose with a
/// credential keyword in every sentence (the 192-byte hold).
fn bench_stream(c: &mut Criterion) {
    let redactor = std::sync::Arc::new(redactor());
    let prose =
        "The tests pass now, so I will read the next file and compare the output with what \
        the documentation says about it. "
            .repeat(32);
    let keyed = prose.replace("documentation", "token documentation");
    let mut group = c.benchmark_group("redact_stream");
    for (name, text) in [
        ("prose_4k_in_16_byte_pieces", &prose),
        ("keyword_4k_in_16_byte_pieces", &keyed),
    ] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut stream = StreamRedactor::new(redactor.clone());
                let mut out = 0;
                for piece in text.as_bytes().chunks(16) {
                    out += stream.push(std::str::from_utf8(piece).unwrap_or("")).len();
                }
                out + stream.finish().len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_redact, bench_stream);
criterion_main!(benches);
