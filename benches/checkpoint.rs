//! Checkpoint benchmarks: what a checkpoint adds to a file tool's write — one edit of a
//! 10 KB and of a 100 KB file, with and without the checkpoint — and a rewind of one file.
//! Also prints the disk 100 edits of a 100 KB file leave in the blob store.
//!
//! Run with `cargo bench --bench checkpoint`; figures go to `docs/PERFORMANCE.md`.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use odek::checkpoint::{Checkpoints, plan_rewind, root};
use odek::util::files::Permissions;

/// A file tool's write: a temp file beside the target, synced, renamed over it, the folder
/// synced (the tools' own helper).
fn write_atomic(path: &Path, bytes: &[u8]) {
    odek::util::files::write_atomically(path, bytes, Permissions::KeepOrShared).unwrap();
}

/// Content of `len` bytes that differs per `round` (every edit stores a new pre-image).
fn content(len: usize, round: u64) -> Vec<u8> {
    let line = format!("line of round {round:08}: the parser keeps its state per connection\n");
    line.as_bytes().iter().copied().cycle().take(len).collect()
}

fn edits(c: &mut Criterion) {
    let mut group = c.benchmark_group("one_file_edit");
    for len in [10 * 1024, 100 * 1024] {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("file.txt");
        std::fs::write(&path, content(len, 0)).unwrap();
        let checkpoints = Arc::new(Checkpoints::new(&root(home.path()), "bench", 1, u64::MAX));
        let mut round = 0u64;
        group.bench_function(BenchmarkId::new("write_only", len), |b| {
            b.iter(|| {
                round += 1;
                write_atomic(&path, &content(len, round));
            })
        });
        group.bench_function(BenchmarkId::new("checkpoint_and_write", len), |b| {
            b.iter(|| {
                round += 1;
                let next = content(len, round);
                checkpoints.begin("patch").capture(&path, &next).unwrap();
                write_atomic(&path, &next);
            })
        });
    }
    group.finish();
}

fn rewind(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("file.txt");
    std::fs::write(&path, content(10 * 1024, 0)).unwrap();
    let checkpoints = Arc::new(Checkpoints::new(&root(home.path()), "bench", 1, u64::MAX));
    let next = content(10 * 1024, 1);
    checkpoints.begin("patch").capture(&path, &next).unwrap();
    write_atomic(&path, &next);
    c.bench_function("rewind_one_file_there_and_back", |b| {
        b.iter(|| {
            let history = checkpoints.history().unwrap();
            let last = history.checkpoints.last().unwrap().n;
            let to = if last == 1 { 1 } else { last };
            let plan = plan_rewind(&history, to).unwrap();
            checkpoints.rewind(&plan, false).unwrap();
        })
    });
}

/// Not timed: the blob store's size after 100 edits of a 100 KB file.
fn disk_of_100_edits(_: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("file.txt");
    std::fs::write(&path, content(100 * 1024, 0)).unwrap();
    let checkpoints = Arc::new(Checkpoints::new(&root(home.path()), "bench", 1, u64::MAX));
    for round in 1..=100 {
        let next = content(100 * 1024, round);
        checkpoints.begin("patch").capture(&path, &next).unwrap();
        write_atomic(&path, &next);
    }
    let mut bytes = 0u64;
    let mut files = 0u64;
    for dir in walk(&root(home.path())) {
        bytes += std::fs::metadata(&dir).unwrap().len();
        files += 1;
    }
    println!("checkpoints of 100 edits of a 100 KB file: {files} files, {bytes} bytes");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A shell command's checkpoint in a git work tree of 10,000 files (100 folders of 100),
/// the shadow's index warm: snapshot, one file changed, what changed recorded.
fn shell_in_a_git_tree(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for d in 0..100 {
        let dir = work.path().join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f}.txt")), content(200, d * 100 + f)).unwrap();
        }
    }
    let status = std::process::Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(work.path())
        .status()
        .unwrap();
    assert!(status.success());
    let checkpoints = Arc::new(Checkpoints::new(&root(home.path()), "bench", 1, u64::MAX));
    let changed = work.path().join("d7").join("f7.txt");
    let mut round = 0u64;
    // The first snapshot stores every file once: not what is measured.
    checkpoints.before_shell(work.path()).finish().unwrap();
    c.bench_function("shell_checkpoint_10000_files_warm", |b| {
        b.iter(|| {
            round += 1;
            let call = checkpoints.before_shell(work.path());
            std::fs::write(&changed, content(200, 1_000_000 + round)).unwrap();
            call.finish().unwrap();
        })
    });
}

criterion_group!(
    benches,
    edits,
    rewind,
    disk_of_100_edits,
    shell_in_a_git_tree
);
criterion_main!(benches);
