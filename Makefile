# odek — common tasks. Every target uses Cargo.lock (--locked).
CARGO ?= cargo

.PHONY: build test test-ui ui-deps mcp-deps lint bench size install fmt clean

build:           ## optimised binary in target/release/odek
	$(CARGO) build --release --locked

test: ui-deps mcp-deps ## every unit and integration test (what CI runs): Rust, then the web UI's
	$(CARGO) test --locked
	cd ui && node --test test/

test-ui: ui-deps ## only the web UI's unit tests (node --test with jsdom)
	cd ui && node --test test/

ui-deps:         ## the web UI tests' Node packages (jsdom, pinned by ui/package-lock.json)
	@[ ui/node_modules/.package-lock.json -nt ui/package-lock.json ] || (cd ui && npm ci --no-audit --no-fund)

mcp-deps:        ## the real MCP server the MCP tests run (server-everything, pinned by tests/mcp/package-lock.json)
	@[ tests/mcp/node_modules/.package-lock.json -nt tests/mcp/package-lock.json ] || (cd tests/mcp && npm ci --no-audit --no-fund)

lint:            ## formatting and clippy, warnings are errors
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

# The Go original's binary, with its server, web UI, Telegram bot and MCP: odek stays under it.
SIZE_BUDGET_BYTES = 11429478

size: build      ## the release binary's size against the budget (10.9 MiB), and by crate when cargo-bloat is installed
	@size=$$(stat -c %s target/release/odek); \
	  echo "target/release/odek: $$size bytes ($$(awk "BEGIN {printf \"%.2f\", $$size/1048576}") MiB); budget $(SIZE_BUDGET_BYTES) bytes (10.90 MiB): $$(awk "BEGIN {printf \"%.0f\", 100*$$size/$(SIZE_BUDGET_BYTES)}") % of it"; \
	  if [ $$size -gt $(SIZE_BUDGET_BYTES) ]; then echo "OVER BUDGET"; fi
	@if command -v cargo-bloat >/dev/null; then \
	  $(CARGO) bloat --profile size-report --locked --crates -n 25; \
	else echo "(cargo install cargo-bloat for the bytes by crate)"; fi

bench:           ## criterion benchmarks (benches/) and the end-to-end harness (bench/)
	$(CARGO) bench --locked
	./bench/run.sh

PREFIX ?= $(HOME)/.local
ODEK_INSTALLED = $${CARGO_HOME:-$$HOME/.cargo}/bin/odek

install:         ## install odek into ~/.cargo/bin, its completions and man pages under $(PREFIX)/share
	$(CARGO) install --path . --locked
	mkdir -p $(PREFIX)/share/bash-completion/completions $(PREFIX)/share/zsh/site-functions \
	         $(PREFIX)/share/fish/vendor_completions.d $(PREFIX)/share/man/man1
	$(ODEK_INSTALLED) completions bash > $(PREFIX)/share/bash-completion/completions/odek
	$(ODEK_INSTALLED) completions zsh > $(PREFIX)/share/zsh/site-functions/_odek
	$(ODEK_INSTALLED) completions fish > $(PREFIX)/share/fish/vendor_completions.d/odek.fish
	$(ODEK_INSTALLED) man --dir $(PREFIX)/share/man/man1

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
