#!/bin/sh
# odek's installer: curl -fsSL https://raw.githubusercontent.com/odek-rs/odek/main/install.sh | sh
#
# Fetches the release archive for this machine, checks it against SHA256SUMS, checks the
# signature of SHA256SUMS with minisign when minisign is installed, and installs `odek` into
# ${ODEK_INSTALL_DIR:-$HOME/.local/bin}. Never sudo. docs/INSTALL.md says more.
#
#   ODEK_VERSION=X.Y.Z     that version instead of the latest
#   ODEK_INSTALL_DIR=DIR   where odek goes (default: ~/.local/bin)
#   ODEK_RELEASE_URL=URL   the releases (default: https://github.com/odek-rs/odek/releases)
#   ODEK_RELEASE_PUBKEY=K  the minisign public key (default: the project's, below)
#   ODEK_FORCE=1           install again even when that version is already there
#
# Everything is in functions called on the last line: a download cut short runs nothing.
set -eu

# The project's release key (minisign, Ed25519): the same one odek carries (`odek upgrade --key`).
PROJECT_PUBKEY="RWQsAnplMmSW7qF+b4q+V4UOyCIuzmrDNHQtoG1bd+aDZXGCl1JfBS7u"
DEFAULT_RELEASE_URL="https://github.com/odek-rs/odek/releases"

say() { printf 'odek install: %s\n' "$*"; }
die() {
  printf 'odek install: error: %s\n' "$*" >&2
  exit 1
}

# The release target of this machine: Linux gets the static musl build.
detect_target() {
  os=$(uname -s)
  arch=$(uname -m)
  case $arch in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) die "no odek release for the $arch architecture: build it from source (docs/INSTALL.md)" ;;
  esac
  case $os in
    Linux) echo "$arch-unknown-linux-musl" ;;
    Darwin)
      # A shell under Rosetta reports x86_64 on Apple Silicon: take the native build.
      if [ "$arch" = x86_64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then
        arch=aarch64
      fi
      echo "$arch-apple-darwin" ;;
    *) die "no odek release for $os: build it from source (docs/INSTALL.md)" ;;
  esac
}

# download URL FILE: curl or wget; fails on an HTTP error or a transfer cut short.
download() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q --tries=1 -O "$2" "$1"
  else
    die "neither curl nor wget is installed: install one of them"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    die "neither sha256sum nor shasum is installed: cannot check the download"
  fi
}

# X.Y.Z or X.Y.Z-pre, nothing else (it becomes part of URLs and file names).
valid_version() {
  case $1 in *[!0-9A-Za-z.-]*) return 1 ;; esac # one line of these characters only
  printf '%s\n' "$1" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$'
}

# The version latest.json names (our own one-line format: sed is enough).
latest_version() {
  download "$RELEASE_URL/latest/download/latest.json" "$TMP/latest.json" ||
    die "could not fetch $RELEASE_URL/latest/download/latest.json"
  sed -n 's/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$TMP/latest.json" | head -n 1
}

# Checks SHA256SUMS's signature when minisign is installed; says so when it is not.
check_signature() {
  if ! command -v minisign >/dev/null 2>&1; then
    say "minisign is not installed: checked the SHA-256 checksum only, not the signature (install minisign to check it too)"
    return 0
  fi
  download "$URL/SHA256SUMS.minisig" "$TMP/SHA256SUMS.minisig" ||
    die "could not fetch $URL/SHA256SUMS.minisig: the release is not signed; nothing installed"
  if ! minisign -V -q -P "$PUBKEY" -m "$TMP/SHA256SUMS" -x "$TMP/SHA256SUMS.minisig" </dev/null >/dev/null 2>&1; then
    die "the signature of SHA256SUMS does not verify with the key $PUBKEY: the release was not signed by odek's key or was altered; nothing installed"
  fi
  say "signature of SHA256SUMS verified (minisign, key $PUBKEY)"
}

# Checks the archive's SHA-256 against its line in SHA256SUMS.
check_checksum() {
  expected=$(awk -v f="$ARCHIVE" '$2 == f || $2 == "*" f { print $1 }' "$TMP/SHA256SUMS")
  [ -n "$expected" ] || die "SHA256SUMS has no line for $ARCHIVE; nothing installed"
  actual=$(sha256_of "$TMP/$ARCHIVE")
  if [ "$actual" != "$expected" ]; then
    die "checksum mismatch for $ARCHIVE: expected $expected, got $actual (a damaged or altered download); nothing installed"
  fi
  say "checksum of $ARCHIVE verified (SHA-256)"
}

# Puts odek into INSTALL_DIR: a copy beside the old one, then a rename over it.
install_binary() {
  mkdir -p "$TMP/x"
  tar -xzf "$TMP/$ARCHIVE" -C "$TMP/x" odek 2>/dev/null || die "$ARCHIVE holds no odek; nothing installed"
  if [ ! -f "$TMP/x/odek" ] || [ -L "$TMP/x/odek" ]; then die "$ARCHIVE holds no odek file; nothing installed"; fi
  [ ! -d "$INSTALL_DIR/odek" ] || die "$INSTALL_DIR/odek is a folder; nothing installed"
  mkdir -p "$INSTALL_DIR" 2>/dev/null ||
    die "cannot create $INSTALL_DIR: set ODEK_INSTALL_DIR to a folder you can write (no sudo needed)"
  STAGED="$INSTALL_DIR/.odek.install.$$"
  cp "$TMP/x/odek" "$STAGED" 2>/dev/null ||
    die "cannot write to $INSTALL_DIR: set ODEK_INSTALL_DIR to a folder you can write (no sudo needed)"
  chmod 755 "$STAGED"
  mv -f "$STAGED" "$INSTALL_DIR/odek"
  STAGED=""
}

# The version the odek in INSTALL_DIR reports ("odek X.Y.Z (target, commit …)"), or nothing.
installed_version() {
  [ -f "$INSTALL_DIR/odek" ] && [ -x "$INSTALL_DIR/odek" ] || return 0
  "$INSTALL_DIR/odek" --version </dev/null 2>/dev/null | sed -n '1s/^odek \([^ ]*\).*/\1/p'
}

path_hint() {
  case ":$PATH:" in
    *":$INSTALL_DIR:"* | *":$INSTALL_DIR/:"*) ;;
    *)
      say "$INSTALL_DIR is not on your PATH; add it (in ~/.profile, ~/.bashrc or ~/.zshrc):"
      # shellcheck disable=SC2016 # the line to paste, $PATH unexpanded
      printf '\n    export PATH="%s:$PATH"\n\n' "$INSTALL_DIR" ;;
  esac
}

cleanup() {
  [ -z "${STAGED:-}" ] || rm -f "$STAGED"
  [ -z "${TMP:-}" ] || rm -rf "$TMP"
}

main() {
  RELEASE_URL=${ODEK_RELEASE_URL:-$DEFAULT_RELEASE_URL}
  RELEASE_URL=${RELEASE_URL%/}
  INSTALL_DIR=${ODEK_INSTALL_DIR:-${HOME:?HOME is not set: set ODEK_INSTALL_DIR}/.local/bin}
  INSTALL_DIR=${INSTALL_DIR%/}
  PUBKEY=${ODEK_RELEASE_PUBKEY:-$PROJECT_PUBKEY}
  STAGED=""
  TMP=""
  trap cleanup EXIT
  trap 'cleanup; exit 130' INT TERM

  target=$(detect_target)
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/odek-install.XXXXXX")
  if [ -n "${ODEK_VERSION:-}" ]; then
    version=${ODEK_VERSION#v}
    valid_version "$version" || die "ODEK_VERSION=$ODEK_VERSION is not a version (X.Y.Z)"
  else
    version=$(latest_version)
    valid_version "$version" || die "$RELEASE_URL/latest/download/latest.json names no X.Y.Z version (found '$version')"
  fi

  if [ "${ODEK_FORCE:-0}" != 1 ] && [ "$(installed_version)" = "$version" ]; then
    say "odek $version is already installed in $INSTALL_DIR (ODEK_FORCE=1 installs it again)"
    path_hint
    return 0
  fi

  URL="$RELEASE_URL/download/v$version"
  ARCHIVE="odek-$version-$target.tar.gz"
  say "installing odek $version ($target) from $URL"
  download "$URL/SHA256SUMS" "$TMP/SHA256SUMS" || die "could not fetch $URL/SHA256SUMS; nothing installed"
  check_signature
  download "$URL/$ARCHIVE" "$TMP/$ARCHIVE" || die "could not fetch $URL/$ARCHIVE (cut short, or no build for $target); nothing installed"
  check_checksum
  install_binary
  say "installed odek $version in $INSTALL_DIR/odek"
  path_hint
}

main "$@"
