#!/usr/bin/env bash
# End-to-end figures for odek: binary size, `odek --version` start-up, a 20-iteration run
# against a local scripted OpenAI-protocol server (bench/scripted_server.py),
# `odek session list` with 10,000 sessions on disk next to `odek --version`, what
# saving a session costs on 400-iteration runs (autosave against --ephemeral), and how much
# of each request is a byte-identical prefix of the previous one (what a provider's prompt
# cache can reuse) on 36-iteration runs that keep a plan current, with the plan message last
# (planning.placement tail), where the transcript keeps it (head) and with --no-planning.
#
# Needs bash, coreutils, python3 (standard library only), make and cargo. Builds the static
# release binary first (make build); set ODEK_BENCH_NO_BUILD=1 to measure an existing one (ODEK_BIN=path picks
# it). Knobs, with their defaults: ODEK_BENCH_VERSION_RUNS=200 ODEK_BENCH_RUN_REPS=20
# ODEK_BENCH_SESSIONS=10000 ODEK_BENCH_LIST_RUNS=100 ODEK_BENCH_SAVING_ITERATIONS=400
# ODEK_BENCH_SAVING_REPS=15 ODEK_BENCH_CACHE_REPS=3; ODEK_BENCH_ONLY=saving measures only the
# saving cost, ODEK_BENCH_ONLY=cache only the prompt-cache prefix share (3 runs of each
# placement, a few seconds). ODEK_BENCH_ONLY=serve runs bench/serve_load.py instead: a load
# test of `odek serve` (ODEK_BENCH_SERVE_SESSIONS=1000 generated sessions,
# ODEK_BENCH_SERVE_CONNECTIONS=50 keep-alive connections for ODEK_BENCH_SERVE_SECONDS=10 s,
# half on the plan view, half on the session list; not part of `all`). ODEK_BENCH_ONLY=telegram
# runs bench/telegram_load.py: `odek telegram` end to end against a fake Bot API and a model
# server that answers at once (ODEK_BENCH_TG_CHATS=20 chats, each sending
# ODEK_BENCH_TG_MESSAGES=10 messages one after the other; 10 s idle first, 100 /plan_status
# after; not part of `all`). ODEK_BENCH_ONLY=mcp runs bench/mcp_calls.py: runs of
# ODEK_BENCH_MCP_CALLS=50 tool calls with a built-in tool, then with server-everything's
# `echo` over stdio and over streamable HTTP (ODEK_BENCH_MCP_REPS=5 runs each; needs
# `make mcp-deps`; not part of `all`). ODEK_BENCH_ONLY=hooks runs bench/hooks.py: 20
# `read_file` calls with and without a `PreToolUse` hook on every call
# (ODEK_BENCH_HOOK_REPS=15; not part of `all`). ODEK_BENCH_ONLY=loop runs bench/loop_cost.py:
# the loop's own cost, 100 and 400 `read_file` iterations with every default feature and with
# `--no-memory --no-skills --no-subagents` (ODEK_BENCH_LOOP_REPS=5; CPU per iteration, peak
# RSS; not part of `all`). ODEK_BENCH_ONLY=batch runs bench/batch_read.py:
# one `batch_read` of 10 files against 10 `read_file` iterations (ODEK_BENCH_BATCH_REPS=20
# runs each, interleaved; model calls, request bytes, wall, CPU; not part of `all`).
# ODEK_BENCH_ONLY=subagents runs bench/subagents.py: one `odek subagent` start, and a parent
# delegating 8 tasks × 10 iterations (ODEK_BENCH_SUBAGENT_REPS=5 runs; wall, CPU, each
# child's peak RSS; not part of `all`). ODEK_BENCH_ONLY=skills runs bench/skills.py: one-call
# runs with 0, 10 and 200 skills installed (ODEK_BENCH_SKILL_RUNS=20 each, interleaved; CPU,
# wall, first-request bytes) and `odek skill list` with 200; not part of `all`.
# ODEK_BENCH_ONLY=schedules runs bench/schedule_idle.py: `odek schedule daemon` with 20 jobs
# not due, its CPU and RSS over ODEK_BENCH_IDLE_SECONDS=60; not part of `all`.
# ODEK_BENCH_ONLY=cost measures the figures of the loop's cost (issue 66) in one run: the
# binary's size, 100 `read_file` iterations on the chat wire (every request a new connection),
# 100 on the Anthropic wire, and the saving cost at 400 iterations; with ODEK_GO_BIN=path
# (the Go original's binary) each beside the Go original's where it has the figure (the loop
# and saving on the chat wire, the size); not part of `all`. ODEK_GO_BIN also adds the Go
# original to ODEK_BENCH_ONLY=loop's chat runs and to the saving table.
# Progress goes to stderr; the Markdown tables for
# docs/PERFORMANCE.md go to stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo="${CARGO:-cargo}"

if [[ "${ODEK_BENCH_NO_BUILD:-0}" != 1 ]]; then
    echo "building the static release binary (make build)…" >&2
    make -s build >&2
fi

if [[ -n "${ODEK_BIN:-}" ]]; then
    bin="$ODEK_BIN"
else
    bin="$root/$(make -s print-static-bin)"
fi
[[ -x "$bin" ]] || { echo "bench/run.sh: no odek binary at $bin" >&2; exit 1; }

if [[ "${ODEK_BENCH_ONLY:-all}" == serve ]]; then
    exec python3 "$root/bench/serve_load.py" \
        --bin "$bin" \
        --sessions "${ODEK_BENCH_SERVE_SESSIONS:-1000}" \
        --connections "${ODEK_BENCH_SERVE_CONNECTIONS:-50}" \
        --duration "${ODEK_BENCH_SERVE_SECONDS:-10}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == telegram ]]; then
    exec python3 "$root/bench/telegram_load.py" \
        --bin "$bin" \
        --chats "${ODEK_BENCH_TG_CHATS:-20}" \
        --messages "${ODEK_BENCH_TG_MESSAGES:-10}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == subagents ]]; then
    exec python3 "$root/bench/subagents.py" --bin "$bin" --reps "${ODEK_BENCH_SUBAGENT_REPS:-5}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == batch ]]; then
    exec python3 "$root/bench/batch_read.py" --bin "$bin" --reps "${ODEK_BENCH_BATCH_REPS:-20}"
fi

go=()
[[ -n "${ODEK_GO_BIN:-}" ]] && go=(--go "$ODEK_GO_BIN")

if [[ "${ODEK_BENCH_ONLY:-all}" == loop ]]; then
    for n in 100 400; do
        python3 "$root/bench/loop_cost.py" --bin "$bin" --iterations "$n" --reps "${ODEK_BENCH_LOOP_REPS:-5}" "${go[@]}"
    done
    exit 0
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == cost ]]; then
    size=$(stat -c %s "$bin")
    if [[ -n "${ODEK_GO_BIN:-}" ]]; then
        go_size=$(stat -c %s "$ODEK_GO_BIN")
        echo "binary: $size bytes; the Go original: $go_size bytes ($(python3 -c "print(f'{$size / $go_size:.2f}')")×)"
    else
        echo "binary: $size bytes (no ODEK_GO_BIN: the Go original is not measured)"
    fi
    reps="${ODEK_BENCH_LOOP_REPS:-5}"
    python3 "$root/bench/loop_cost.py" --bin "$bin" --iterations 100 --reps "$reps" "${go[@]}"
    python3 "$root/bench/loop_cost.py" --bin "$bin" --iterations 100 --reps "$reps" --wire anthropic
    exec python3 "$root/bench/measure.py" --bin "$bin" --only saving "${go[@]}" \
        --saving-iterations "${ODEK_BENCH_SAVING_ITERATIONS:-400}" \
        --saving-reps "${ODEK_BENCH_SAVING_REPS:-15}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == hooks ]]; then
    exec python3 "$root/bench/hooks.py" --bin "$bin" --reps "${ODEK_BENCH_HOOK_REPS:-15}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == schedules ]]; then
    exec python3 "$root/bench/schedule_idle.py" --bin "$bin" --seconds "${ODEK_BENCH_IDLE_SECONDS:-60}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == skills ]]; then
    exec python3 "$root/bench/skills.py" --bin "$bin" --runs "${ODEK_BENCH_SKILL_RUNS:-20}"
fi

if [[ "${ODEK_BENCH_ONLY:-all}" == mcp ]]; then
    exec python3 "$root/bench/mcp_calls.py" \
        --bin "$bin" \
        --calls "${ODEK_BENCH_MCP_CALLS:-50}" \
        --reps "${ODEK_BENCH_MCP_REPS:-5}"
fi

exec python3 "$root/bench/measure.py" \
    --bin "$bin" \
    --version-runs "${ODEK_BENCH_VERSION_RUNS:-200}" \
    --run-reps "${ODEK_BENCH_RUN_REPS:-20}" \
    --sessions "${ODEK_BENCH_SESSIONS:-10000}" \
    --list-runs "${ODEK_BENCH_LIST_RUNS:-100}" \
    --saving-iterations "${ODEK_BENCH_SAVING_ITERATIONS:-400}" \
    --saving-reps "${ODEK_BENCH_SAVING_REPS:-15}" \
    --cache-reps "${ODEK_BENCH_CACHE_REPS:-3}" \
    --only "${ODEK_BENCH_ONLY:-all}" "${go[@]}"
