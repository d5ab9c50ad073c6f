# odek — common tasks. Every target uses Cargo.lock (--locked).
CARGO ?= cargo

.PHONY: build test lint bench install fmt clean

build:           ## optimised binary in target/release/odek
	$(CARGO) build --release --locked

test:            ## every unit and integration test (what CI runs)
	$(CARGO) test --locked

lint:            ## formatting and clippy, warnings are errors
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

bench:           ## criterion benchmarks (benches/) and the end-to-end harness (bench/)
	$(CARGO) bench --locked
	./bench/run.sh

install:         ## install odek into ~/.cargo/bin
	$(CARGO) install --path . --locked

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
