# odek — common tasks. Every target uses Cargo.lock (--locked).
CARGO ?= cargo

.PHONY: build print-static-bin static-target test test-ui ui-deps ui-vendor mcp-deps mcp-py-deps acp-deps lint bench profile fuzz size install dist cross-tools cross-lint cross-test fmt clean

# On Linux the release binary is static, linked with musl: no dynamic loader and no glibc
# start-up, which halves the CPU of starting (docs/PERFORMANCE.md, "Weight"). ring's few C
# files are compiled with musl-gcc (Debian/Ubuntu: musl-tools) when installed, else with cc.
# Elsewhere it is the host's own build.
ifeq ($(shell uname -s),Linux)
STATIC_TARGET ?= $(shell uname -m)-unknown-linux-musl
STATIC_BIN = target/$(STATIC_TARGET)/release/odek
TARGET_FLAGS = --target $(STATIC_TARGET)
MUSL_CC ?= $(shell command -v musl-gcc 2>/dev/null || echo cc)
# Not position-independent: a static-pie binary applies ~20,000 relocations at every start,
# writing ~90 pages of .data.rel.ro (page faults: ~0.25 ms of the ~1 ms `odek --version`) and
# carrying 480 KB of relocation records. The cost is ASLR of the binary's own image (the stack,
# heap and mappings stay randomised), as for a Go binary built by default.
STATIC_TRIPLE = $(subst -,_,$(STATIC_TARGET))
# No unwind tables where the build decides (the C code, and odek's and its crates' Rust code,
# though LTO keeps the standard library's), and no `.eh_frame_hdr` index: with
# panic = "abort" nothing unwinds, and a stripped binary's backtraces name nothing
# (docs/PERFORMANCE.md, "The loop's cost"). The profiling build keeps them: perf's call
# graphs walk the stack with them.
STATIC_CC = CC_$(STATIC_TRIPLE)=$(MUSL_CC)
STATIC_CFLAGS = CFLAGS_$(STATIC_TRIPLE)
STATIC_RUSTFLAGS = CARGO_TARGET_$(shell echo $(STATIC_TRIPLE) | tr a-z A-Z)_RUSTFLAGS
# `make build ICF=1` links with the toolchain's own lld (rust-lld, through the gcc-ld wrapper
# rustup ships) and identical code folding: the generic instances that compile to the same
# machine code kept once (`--icf=all`; Rust promises no distinct addresses for distinct
# functions, and lld folds no data). 146,824 bytes smaller, but lld's layout spreads what a
# run touches over more pages: +570 KiB of the binary resident at a 100-iteration run's peak
# (docs/PERFORMANCE.md, "The loop's cost, round 2"), so the default stays GNU ld.
comma := ,
RUST_LLD_DIR = $(shell rustc --print sysroot)/lib/rustlib/$(shell rustc -vV | sed -n 's/^host: //p')/bin/gcc-ld
LLD_ICF = $(if $(filter 1,$(ICF)),$(if $(wildcard $(RUST_LLD_DIR)/ld.lld),-C link-arg=-B$(RUST_LLD_DIR) -C link-arg=-fuse-ld=lld -C link-arg=-Wl$(comma)--icf=all))
STATIC_ENV = $(STATIC_CC) $(STATIC_CFLAGS)="-U_FORTIFY_SOURCE -fno-asynchronous-unwind-tables" \
  $(STATIC_RUSTFLAGS)="-C relocation-model=static -C force-unwind-tables=no -C link-arg=-Wl,--no-eh-frame-hdr $(LLD_ICF)"
PROFILING_ENV = $(STATIC_CC) $(STATIC_CFLAGS)=-U_FORTIFY_SOURCE $(STATIC_RUSTFLAGS)="-C relocation-model=static $(LLD_ICF)"
else
STATIC_BIN = target/release/odek
endif

build: static-target ## the optimised binary: on Linux static, target/<arch>-unknown-linux-musl/release/odek
	$(STATIC_ENV) $(CARGO) build --release --locked $(TARGET_FLAGS)

print-static-bin: ## the release binary's path (for scripts)
	@echo $(STATIC_BIN)

static-target:   ## the Rust standard library for the static target (rustup), when missing
ifdef STATIC_TARGET
	@rustup target list --installed | grep -qx '$(STATIC_TARGET)' || rustup target add $(STATIC_TARGET)
endif

test: ui-deps mcp-deps mcp-py-deps acp-deps ## every unit and integration test (what CI runs): Rust, then the web UI's
	$(CARGO) test --locked
	cd ui && node --test test/

test-ui: ui-deps ## only the web UI's unit tests (node --test with jsdom)
	cd ui && node --test test/

ui-deps:         ## the web UI tests' Node packages (jsdom, pinned by ui/package-lock.json)
	@[ ui/node_modules/.package-lock.json -nt ui/package-lock.json ] || (cd ui && npm ci --no-audit --no-fund)

ui-vendor: ui-deps ## copy marked and DOMPurify (pinned by ui/package-lock.json) into ui/vendor, embedded in the binary
	mkdir -p ui/vendor
	sed '/^\/\/# sourceMappingURL=/d' ui/node_modules/marked/lib/marked.esm.js > ui/vendor/marked.js
	sed '/^\/\/# sourceMappingURL=/d' ui/node_modules/dompurify/dist/purify.es.mjs > ui/vendor/purify.js
	cp ui/node_modules/marked/LICENSE ui/vendor/marked.LICENSE.txt
	cat ui/node_modules/dompurify/LICENSE > ui/vendor/purify.LICENSE.txt

mcp-py-deps:     ## the official MCP Python SDK, the client of the `odek mcp serve` tests (pinned by tests/mcp/requirements.txt)
	@[ tests/mcp/.venv/.installed -nt tests/mcp/requirements.txt ] || (python3 -m venv tests/mcp/.venv && tests/mcp/.venv/bin/pip install -q --disable-pip-version-check -r tests/mcp/requirements.txt && touch tests/mcp/.venv/.installed)

mcp-deps:        ## the real MCP server the MCP tests run (server-everything, pinned by tests/mcp/package-lock.json)
	@[ tests/mcp/node_modules/.package-lock.json -nt tests/mcp/package-lock.json ] || (cd tests/mcp && npm ci --no-audit --no-fund)

acp-deps:        ## the ACP tests' client, the official ACP TypeScript SDK (pinned by tests/acp/package-lock.json)
	@[ tests/acp/node_modules/.package-lock.json -nt tests/acp/package-lock.json ] || (cd tests/acp && npm ci --no-audit --no-fund)

lint:            ## formatting and clippy, warnings are errors
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

# The other targets, checked from this Linux machine (docs/PLATFORMS.md): clippy for each,
# and aarch64 Linux's tests run under qemu-user. zig compiles ring's C code and links aarch64.
CROSS_LINT_TARGETS ?= aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin
CROSS_PATH = PATH="$(CURDIR)/target/cross-tools/bin:$$PATH"
CROSS_QEMU = CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=qemu-aarch64-static
# The integration tests that run under qemu (its odek binary runs there too, as
# ODEK_TEST_RUNNER says): a run against the scripted server with tools, sessions, config.
CROSS_SMOKE ?= smoke::
# Six exhaustive pure-logic tests take most of the lib tests' time under qemu (234–549 s for
# all, 61 s without them); they run natively in make test.
CROSS_SKIP = $(addprefix --skip ,tools::danger::tests::pathological_inputs_do_not_panic \
  redact::tests::every_format_streamed_in_pieces_comes_out_as_the_whole_text_redacted \
  tools::danger::tests::brace_expanded_substitutions_are_read_within_a_budget \
  tools::danger::tests::bash_agreement::generated_words_split_as_bash_splits_them \
  session::store::tests::the_real_size_cap_trims_a_session_over_32_mib \
  fuzz::tests::every_target_survives_its_seeds_hostile_inputs_and_mutations)

cross-tools:     ## the other targets' Rust libraries, zig, cargo-zigbuild and qemu-user-static, when missing
	@scripts/cross-tools.sh >/dev/null

cross-lint: cross-tools ## clippy for each of CROSS_LINT_TARGETS, warnings are errors
	@for target in $(CROSS_LINT_TARGETS); do \
	  echo "cargo-zigbuild clippy --all-targets --target $$target"; \
	  $(CROSS_PATH) cargo-zigbuild clippy --all-targets --locked --target $$target -- -D warnings || exit 1; \
	done

cross-test: cross-tools ## aarch64 Linux under qemu-user: the lib tests, then the integration smoke subset (CROSS_SMOKE)
	$(CROSS_PATH) $(CROSS_QEMU) cargo-zigbuild test --locked --lib --target aarch64-unknown-linux-musl -- $(CROSS_SKIP)
	$(CROSS_PATH) $(CROSS_QEMU) ODEK_TEST_RUNNER=qemu-aarch64-static \
	  cargo-zigbuild test --locked --test it --target aarch64-unknown-linux-musl -- $(CROSS_SMOKE)

# This round's budget (the security round, other targets and releases, instructions, commands
# and agents, the conversation in hand, the browser): 12,400,000 bytes for all of them together
# (11,816,448 after the last round). The Go original's binary, with its server, web UI,
# Telegram bot and MCP, is 11,429,478.
SIZE_BUDGET_BYTES = 12400000

size: build      ## the release binary's size against the budget (12,400,000 bytes; fails over it), and by crate when cargo-bloat is installed
	@size=$$(stat -c %s $(STATIC_BIN)); \
	  echo "$(STATIC_BIN): $$size bytes ($$(awk "BEGIN {printf \"%.2f\", $$size/1048576}") MiB); budget $(SIZE_BUDGET_BYTES) bytes (11.83 MiB): $$(awk "BEGIN {printf \"%.0f\", 100*$$size/$(SIZE_BUDGET_BYTES)}") % of it"; \
	  if [ $$size -gt $(SIZE_BUDGET_BYTES) ]; then echo "OVER BUDGET"; exit 1; fi
	@if command -v cargo-bloat >/dev/null; then \
	  $(STATIC_ENV) $(CARGO) bloat --profile size-report --locked $(TARGET_FLAGS) --crates -n 25; \
	else echo "(cargo install cargo-bloat for the bytes by crate)"; fi

profile: static-target ## perf profiles of 100 and 400 read_file iterations with their flame graphs, docs/img/loop-N.svg (needs perf and inferno: cargo install inferno)
	$(PROFILING_ENV) $(CARGO) build --profile profiling --locked $(TARGET_FLAGS)
	for n in 100 400; do \
	  python3 bench/loop_cost.py --bin $(subst /release/,/profiling/,$(STATIC_BIN)) --iterations $$n --perf target/profile-$$n && \
	  perf script -i target/profile-$$n/perf.data 2>/dev/null | inferno-collapse-perf | \
	    inferno-flamegraph --minwidth 0.2 --title "odek run: $$n read_file iterations (release, line tables)" > docs/img/loop-$$n.svg || exit 1; \
	done

bench:           ## criterion benchmarks (benches/) and the end-to-end harness (bench/)
	$(CARGO) bench --locked
	./bench/run.sh

FUZZ_SECONDS ?= 60
FUZZ_TARGET_DIR ?= target/fuzz
FUZZ_TARGETS ?= html_to_markdown skill_front_matter model_answer mcp_message telegram_updates serve_bodies

fuzz:            ## libFuzzer on each parser of outside input, FUZZ_SECONDS (60) each, any input over 1 s a failure (cargo install cargo-fuzz; docs/FUZZING.md)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/corpus/$$t fuzz/logs; \
	  RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir $(FUZZ_TARGET_DIR) -O $$t fuzz/corpus/$$t fuzz/seeds/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=1 -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 \
	    > fuzz/logs/$$t.log 2>&1; status=$$?; \
	  grep -E '^(slowest|stat::number_of_executed_units|stat::peak_rss_mb|==.*ERROR|SUMMARY)' fuzz/logs/$$t.log \
	    | tail -n 6 | sed "s/^/$$t: /"; \
	  [ $$status -eq 0 ] || { echo "$$t: failed (fuzz/logs/$$t.log, fuzz/artifacts/$$t/)"; exit 1; }; \
	done

PREFIX ?= $(HOME)/.local
ODEK_INSTALLED = $${CARGO_HOME:-$$HOME/.cargo}/bin/odek

install: static-target ## install odek (static on Linux) into ~/.cargo/bin, its completions and man pages under $(PREFIX)/share
	$(STATIC_ENV) $(CARGO) install --path . --locked $(TARGET_FLAGS)
	mkdir -p $(PREFIX)/share/bash-completion/completions $(PREFIX)/share/zsh/site-functions \
	         $(PREFIX)/share/fish/vendor_completions.d $(PREFIX)/share/man/man1
	$(ODEK_INSTALLED) completions bash > $(PREFIX)/share/bash-completion/completions/odek
	$(ODEK_INSTALLED) completions zsh > $(PREFIX)/share/zsh/site-functions/_odek
	$(ODEK_INSTALLED) completions fish > $(PREFIX)/share/fish/vendor_completions.d/odek.fish
	$(ODEK_INSTALLED) man --dir $(PREFIX)/share/man/man1

# DIST_TARGETS picks targets; ODEK_MINISIGN_KEY (a minisign secret key file) signs SHA256SUMS;
# DIST_PREBUILT=PATH packages that binary instead of building. See scripts/dist.sh.
DIST_DIR ?= dist

dist: static-target ## the release folder (docs/RELEASES.md): an archive per target this machine can link, SHA256SUMS, its signature, latest.json
	DIST_DIR=$(DIST_DIR) scripts/dist.sh

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
