# odek — common tasks. Every target uses Cargo.lock (--locked).
CARGO ?= cargo

.PHONY: build test test-ui ui-deps mcp-deps lint bench install fmt clean

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
