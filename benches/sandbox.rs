//! What the sandbox costs a shell command: `sh -c true` spawned and waited for, plain and
//! under the Landlock ruleset (built in the parent, applied in the child before `exec`).
//!
//! Run with `cargo bench --bench sandbox`; figures go to `docs/PERFORMANCE.md`. On a kernel
//! without Landlock only the plain case runs.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use odek::sandbox::{Network, Sandbox, SandboxStatus, Wanted};

fn spawn_true(runtime: &tokio::runtime::Runtime, sandbox: Option<&Sandbox>) {
    runtime.block_on(async {
        let mut command =
            odek::sandbox::command(std::path::Path::new("/bin/sh"), sandbox).expect("ruleset");
        command.args(["-c", "true"]);
        let status = command.spawn().expect("spawn").wait().await.expect("wait");
        assert!(status.success());
    });
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cwd = std::env::current_dir().expect("cwd");
    let mut warnings = Vec::new();
    let wanted = Wanted {
        on: true,
        required: false,
        cwd: &cwd,
        allow_write: &[],
        network: Network::None,
        protected: &[],
    };
    let status = SandboxStatus::new(wanted, &mut warnings);
    let mut group = c.benchmark_group("shell_spawn");
    group.bench_function("plain", |b| b.iter(|| spawn_true(&runtime, None)));
    if let Some(sandbox) = status.sandbox() {
        group.bench_function("sandboxed", |b| {
            b.iter(|| spawn_true(&runtime, Some(&sandbox)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
