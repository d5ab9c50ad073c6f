#!/bin/sh
# The release folder (docs/RELEASES.md): `make dist`, and the GitHub release workflow, which
# calls it once per runner. POSIX sh: it runs on Linux and on macOS runners alike.
#
#   scripts/dist.sh [all|build|finish]
#     all     build and package every target of DIST_TARGETS, then finish (the default)
#     build   build and package only: odek-<version>-<target>.tar.gz in DIST_DIR
#     finish  SHA256SUMS over the archives in DIST_DIR, its signature, latest.json
#
# Environment:
#   DIST_DIR            the folder (default: dist)
#   DIST_TARGETS        the targets, space-separated (default: the four of the contract)
#   DIST_STRICT=1       a target that cannot be built here is an error, not a skip (CI)
#   DIST_PREBUILT=PATH  package this binary as the only target of DIST_TARGETS (default: the
#                       host's) instead of building: tests and quick checks of the packaging
#   DIST_DOCS_BIN=PATH  a binary that runs here, for the completions and man pages (default:
#                       the first built binary that runs here, else a host build)
#   ODEK_MINISIGN_KEY   the minisign secret key file; unset: SHA256SUMS is left unsigned
#   ODEK_RELEASE_PUBKEY the public key the signature is checked against after signing
#                       (default: the project's, the one odek and install.sh carry)
#   DIST_NOTES, DIST_NOTES_FILE   latest.json's notes (default: the CHANGELOG.md section of the
#                       version when there is one, else "odek <version>")
#   DIST_PUBLISHED      latest.json's date, RFC 3339 (default: now, UTC)
#   SOURCE_DATE_EPOCH   the archives' file times (default: the last commit's time)
set -eu

# The project's release key (minisign, Ed25519); the secret half is never in the repository.
PROJECT_PUBKEY="RWQsAnplMmSW7qF+b4q+V4UOyCIuzmrDNHQtoG1bd+aDZXGCl1JfBS7u"
ALL_TARGETS="x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DIST_DIR=${DIST_DIR:-dist}
mkdir -p "$DIST_DIR"
DIST_DIR=$(cd "$DIST_DIR" && pwd)

say() { printf 'odek dist: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# The version of the [package] section of Cargo.toml.
VERSION=$(awk '/^\[/ { in_pkg = ($0 == "[package]") } in_pkg && /^version *=/ { gsub(/.*= *"|".*/, ""); print; exit }' Cargo.toml)
printf '%s\n' "$VERSION" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$' ||
  die "no X.Y.Z version in Cargo.toml's [package] (found '$VERSION')"

# The host as an OS and an architecture named the way target triples name them.
host_os() { uname -s; }
host_arch() { case $(uname -m) in arm64 | aarch64) echo aarch64 ;; amd64 | x86_64) echo x86_64 ;; *) uname -m ;; esac; }
# The target this machine builds natively: the static musl one on Linux, the Apple one on a Mac.
host_target() {
  case $(host_os) in
    Linux) echo "$(host_arch)-unknown-linux-musl" ;;
    Darwin) echo "$(host_arch)-apple-darwin" ;;
    *) echo "$(host_arch)-unknown-$(host_os | tr '[:upper:]' '[:lower:]')" ;;
  esac
}

SKIPPED=""
skip() { # target, reason
  [ "${DIST_STRICT:-0}" = 1 ] && die "$1: $2"
  say "skipping $1: $2"
  SKIPPED="$SKIPPED
  $1: $2"
}

rustup_target() {
  command -v rustup >/dev/null || return 0
  rustup target list --installed | grep -qx "$1" || rustup target add "$1"
}

# cargo-zigbuild and zig (PyPI's ziglang): those of scripts/cross-tools.sh (pinned, in a
# virtual environment under target/cross-tools) when there, else those on PATH, else installed
# there with pip at the versions cross-tools.sh pins.
have_zigbuild() {
  tools="$ROOT/target/cross-tools/bin"
  if [ -x "$tools/cargo-zigbuild" ]; then PATH="$tools:$PATH"; export PATH; return 0; fi
  if command -v cargo-zigbuild >/dev/null && { command -v zig >/dev/null || python3 -c 'import ziglang' 2>/dev/null; }; then
    return 0
  fi
  command -v python3 >/dev/null || return 1
  zig_pin=$(sed -n 's/^ZIGLANG_VERSION=//p' scripts/cross-tools.sh 2>/dev/null)
  zigbuild_pin=$(sed -n 's/^CARGO_ZIGBUILD_VERSION=//p' scripts/cross-tools.sh 2>/dev/null)
  say "installing ziglang${zig_pin:+ $zig_pin} and cargo-zigbuild${zigbuild_pin:+ $zigbuild_pin} with pip into target/cross-tools"
  python3 -m venv "$ROOT/target/cross-tools" >&2 || return 1
  "$tools/pip" install -q --disable-pip-version-check "ziglang${zig_pin:+==$zig_pin}" \
    "cargo-zigbuild${zigbuild_pin:+==$zigbuild_pin}" >&2 || return 1
  PATH="$tools:$PATH"
  export PATH
}

# Builds one target: BUILT is the binary's path, or empty when the target was skipped.
build_target() {
  target=$1
  BUILT=""
  case $target in
    "$(host_target)")
      if [ "$(host_os)" = Linux ]; then
        # The static binary exactly as `make build` makes it (musl-gcc, no PIE, no unwind tables).
        ${MAKE:-make} --no-print-directory build STATIC_TARGET="$target" >&2
      else
        rustup_target "$target" >&2
        cargo build --release --locked --target "$target" >&2
      fi ;;
    *-unknown-linux-musl)
      if ! have_zigbuild; then
        skip "$target" "no cargo-zigbuild and zig (python3 -m venv or pip install ziglang cargo-zigbuild failed)"
        return 0
      fi
      rustup_target "$target" >&2
      cargo-zigbuild build --release --locked --target "$target" >&2 ;;
    *-apple-darwin)
      if [ "$(host_os)" != Darwin ]; then
        skip "$target" "links against the macOS SDK (Security, CoreFoundation), which only a Mac has: the release workflow builds it on macos-14"
        return 0
      fi
      rustup_target "$target" >&2
      cargo build --release --locked --target "$target" >&2 ;;
    *) die "unknown target $target (known: $ALL_TARGETS)" ;;
  esac
  BUILT="target/$target/release/odek"
}

STAGE_ROOT=""
cleanup() { [ -z "$STAGE_ROOT" ] || rm -rf "$STAGE_ROOT"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
stage_root() {
  [ -n "$STAGE_ROOT" ] || STAGE_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/odek-dist.XXXXXX")
}

# The completions and man pages, made once by a binary that runs here (a cross binary cannot):
# they are the same for every target.
DOCS=""
make_docs() { # binary
  stage_root
  DOCS="$STAGE_ROOT/docs"
  mkdir -p "$DOCS/completions" "$DOCS/man/man1"
  "$1" completions bash >"$DOCS/completions/odek.bash"
  "$1" completions zsh >"$DOCS/completions/_odek"
  "$1" completions fish >"$DOCS/completions/odek.fish"
  "$1" man --dir "$DOCS/man/man1" >/dev/null
}
runs_here() { "$1" --version >/dev/null 2>&1; }

# A file time for `touch -t` (CCYYMMDDhhmm.SS, UTC) from seconds since the epoch: GNU and BSD date.
touch_stamp() {
  date -u -d "@$1" +%Y%m%d%H%M.%S 2>/dev/null || date -u -r "$1" +%Y%m%d%H%M.%S
}
epoch() {
  if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then echo "$SOURCE_DATE_EPOCH"; return; fi
  git log -1 --format=%ct 2>/dev/null || date +%s
}

# odek-<version>-<target>.tar.gz: odek at the top level, beside LICENSE, README.md, the
# completions, the man pages and the demo recording. Same inputs, same bytes: entries sorted,
# one file time, owner and group 0, modes set, gzip without a name or time.
package() { # target, binary
  target=$1
  name="odek-$VERSION-$target"
  stage_root
  dir="$STAGE_ROOT/$name"
  rm -rf "$dir"
  mkdir -p "$dir/examples"
  cp "$2" "$dir/odek"
  cp LICENSE README.md "$dir/"
  cp examples/demo.jsonl "$dir/examples/"
  cp -R "$DOCS/completions" "$DOCS/man" "$dir/"
  find "$dir" -type d -exec chmod 755 {} +
  find "$dir" -type f -exec chmod 644 {} +
  chmod 755 "$dir/odek"
  stamp=$(touch_stamp "$(epoch)")
  find "$dir" -exec env TZ=UTC touch -h -t "$stamp" {} +
  (cd "$dir" && find . ! -name . | sed 's|^\./||' | LC_ALL=C sort) >"$STAGE_ROOT/$name.list"
  if tar --version 2>/dev/null | grep -q 'GNU tar'; then
    (cd "$dir" && tar --format=ustar --no-recursion --owner=0 --group=0 --numeric-owner \
      -cf - -T "$STAGE_ROOT/$name.list")
  else # bsdtar (macOS, the BSDs)
    (cd "$dir" && tar --format ustar -n --uid 0 --gid 0 --uname '' --gname '' \
      -cf - -T "$STAGE_ROOT/$name.list")
  fi | gzip -n -9 >"$DIST_DIR/$name.tar.gz.part"
  mv "$DIST_DIR/$name.tar.gz.part" "$DIST_DIR/$name.tar.gz"
  say "packaged $DIST_DIR/$name.tar.gz"
}

build_all() {
  if [ -n "${DIST_PREBUILT:-}" ]; then
    [ -x "$DIST_PREBUILT" ] || die "DIST_PREBUILT=$DIST_PREBUILT is not an executable file"
    targets=${DIST_TARGETS:-$(host_target)}
    [ "$(echo "$targets" | wc -w)" -eq 1 ] || die "DIST_PREBUILT packages one target: DIST_TARGETS names $targets"
    case " $ALL_TARGETS " in *" $targets "*) ;; *) die "unknown target $targets (known: $ALL_TARGETS)" ;; esac
    docs_bin=${DIST_DOCS_BIN:-$DIST_PREBUILT}
    runs_here "$docs_bin" || die "$docs_bin does not run here: set DIST_DOCS_BIN to one that does"
    make_docs "$docs_bin"
    package "$targets" "$DIST_PREBUILT"
    return
  fi
  targets=${DIST_TARGETS:-$ALL_TARGETS}
  # The host's target first: its binary makes the completions and man pages.
  ordered=""
  for t in $targets; do [ "$t" = "$(host_target)" ] && ordered="$t"; done
  for t in $targets; do [ "$t" = "$(host_target)" ] || ordered="$ordered $t"; done
  built=""
  for t in $ordered; do
    build_target "$t"
    bin=$BUILT
    [ -n "$bin" ] || continue
    built="$built $t=$bin"
    if [ -z "$DOCS" ] && runs_here "$bin"; then make_docs "$bin"; fi
  done
  [ -n "$built" ] || die "no target could be built here:$SKIPPED"
  if [ -z "$DOCS" ]; then
    if [ -n "${DIST_DOCS_BIN:-}" ]; then docs_bin=$DIST_DOCS_BIN; else
      say "no built binary runs here: building the host's for the completions and man pages"
      build_target "$(host_target)"
      docs_bin=$BUILT
    fi
    runs_here "$docs_bin" || die "$docs_bin does not run here"
    make_docs "$docs_bin"
  fi
  for pair in $built; do
    target=${pair%%=*}
    bin=${pair#*=}
    if runs_here "$bin"; then
      "$bin" --version | grep -q " $VERSION " || die "$bin is not odek $VERSION: $("$bin" --version)"
    fi
    package "$target" "$bin"
  done
}

sha256() { # files… → sha256sum's format
  if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi
}

# JSON string contents: backslashes, quotes, tabs escaped, other control characters dropped,
# lines joined with \n, blank lines at either end dropped.
json_escape() {
  tr -d '\000-\010\013\014\015\016-\037' |
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' |
    awk '{ lines[NR] = $0 } END {
      first = 1; while (first <= NR && lines[first] == "") first++
      last = NR; while (last >= first && lines[last] == "") last--
      for (i = first; i <= last; i++) printf "%s%s", (i > first ? "\\n" : ""), lines[i] }'
}

# The notes: DIST_NOTES, DIST_NOTES_FILE, CHANGELOG.md's "## <version>" (or "## [<version>]")
# section, else one line.
notes() {
  if [ -n "${DIST_NOTES:-}" ]; then printf '%s\n' "$DIST_NOTES"; return; fi
  if [ -n "${DIST_NOTES_FILE:-}" ]; then cat "$DIST_NOTES_FILE"; return; fi
  if [ -f CHANGELOG.md ]; then
    section=$(awk -v v="$VERSION" '
      /^## / { if (found) exit; h = $2; gsub(/[][]/, "", h); sub(/^v/, "", h); if (h == v) { found = 1; next } }
      found { print }' CHANGELOG.md)
    if [ -n "$section" ]; then printf '%s\n' "$section"; return; fi
  fi
  printf 'odek %s\n' "$VERSION"
}

finish() {
  cd "$DIST_DIR"
  set -- odek-"$VERSION"-*.tar.gz
  [ -f "$1" ] || die "no odek-$VERSION-*.tar.gz in $DIST_DIR to sum"
  rm -f SHA256SUMS SHA256SUMS.minisig latest.json
  # shellcheck disable=SC2046 # names without spaces, sorted the same everywhere
  sha256 $(printf '%s\n' "$@" | LC_ALL=C sort) >SHA256SUMS
  if [ -n "${ODEK_MINISIGN_KEY:-}" ]; then
    [ -f "$ODEK_MINISIGN_KEY" ] || die "ODEK_MINISIGN_KEY=$ODEK_MINISIGN_KEY is not a file"
    command -v minisign >/dev/null || die "ODEK_MINISIGN_KEY is set but minisign is not installed"
    minisign -S -l -s "$ODEK_MINISIGN_KEY" -m SHA256SUMS -t "odek $VERSION" </dev/null >&2
    pubkey=${ODEK_RELEASE_PUBKEY:-$PROJECT_PUBKEY}
    minisign -V -q -P "$pubkey" -m SHA256SUMS -x SHA256SUMS.minisig >/dev/null ||
      { rm -f SHA256SUMS.minisig; die "the signature does not verify with the public key $pubkey: ODEK_MINISIGN_KEY is not the release key"; }
    say "signed SHA256SUMS (minisign, public key $pubkey)"
  else
    say "WARNING: ========================================================================"
    say "WARNING: SHA256SUMS is NOT signed (ODEK_MINISIGN_KEY is not set): \`odek upgrade\` will"
    say "WARNING: refuse this folder, and install.sh refuses it where minisign is installed."
    say "WARNING: ========================================================================"
  fi
  published=${DIST_PUBLISHED:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
  text=$(cd "$ROOT" && notes | json_escape)
  printf '{"version": "%s", "published": "%s", "notes": "%s"}\n' "$VERSION" "$published" "$text" >latest.json
  say "wrote $DIST_DIR: $# archive(s), SHA256SUMS$([ -f SHA256SUMS.minisig ] && echo ', SHA256SUMS.minisig'), latest.json"
}

# Only the files this script writes: DIST_DIR may be a folder with other things in it.
clear_dist() {
  rm -f "$DIST_DIR"/odek-*.tar.gz "$DIST_DIR"/odek-*.tar.gz.part "$DIST_DIR/SHA256SUMS" \
    "$DIST_DIR/SHA256SUMS.minisig" "$DIST_DIR/latest.json"
}

case ${1:-all} in
  all) clear_dist; build_all; finish ;;
  build) build_all ;;
  finish) finish ;;
  *) die "usage: scripts/dist.sh [all|build|finish]" ;;
esac
if [ -n "$SKIPPED" ]; then
  say "skipped (not built on this machine):$SKIPPED"
fi
