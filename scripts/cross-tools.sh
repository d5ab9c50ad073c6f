#!/bin/sh
# The tools odek's other targets need on a Linux machine, each installed only when missing:
#   - the Rust standard library of each target (rustup);
#   - zig (PyPI's `ziglang`) and `cargo-zigbuild`, pinned, in a virtual environment under
#     target/cross-tools: zig compiles ring's C code for every target and links aarch64 Linux;
#   - qemu-user-static (Debian), which runs aarch64 Linux test binaries on an x86_64 machine.
# Prints the folder to put first on PATH.
set -eu
cd "$(dirname "$0")/.."

ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1
TARGETS="aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin"
TOOLS="$PWD/target/cross-tools"

installed=$(rustup target list --installed)
for target in $TARGETS; do
  echo "$installed" | grep -qx "$target" || rustup target add "$target" >&2
done

if ! "$TOOLS/bin/cargo-zigbuild" --version 2>/dev/null | grep -q " $CARGO_ZIGBUILD_VERSION\$" ||
   ! "$TOOLS/bin/python3" -m ziglang version 2>/dev/null | grep -qx "$ZIGLANG_VERSION"; then
  python3 -m venv "$TOOLS" >&2
  "$TOOLS/bin/pip" install -q "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" >&2
fi

if ! command -v qemu-aarch64-static >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq qemu-user-static >&2
fi

echo "$TOOLS/bin"
