//! odek's own releases (docs/UPGRADE.md): where they are (`ODEK_RELEASE_URL`, laid out as
//! GitHub's release URLs), which key signs them (compiled in, or `ODEK_RELEASE_PUBKEY`), and
//! the chain `odek upgrade` walks — `latest.json`, `SHA256SUMS` and its minisign signature,
//! this machine's archive and its checksum, `odek` out of the archive — before
//! [`install::replace`] puts it in place of the running binary.

pub mod archive;
mod fetch;
pub mod install;
pub mod minisign;
pub mod version;

use std::path::PathBuf;

pub use fetch::{Latest, Progress, Releases};
pub use minisign::{MinisignError, PublicKey};
pub use version::{Version, VersionError};

/// Where releases are unless `ODEK_RELEASE_URL` says otherwise.
pub const DEFAULT_RELEASE_URL: &str = "https://github.com/odek-rs/odek/releases";

/// The variable that replaces [`DEFAULT_RELEASE_URL`].
pub const RELEASE_URL_VAR: &str = "ODEK_RELEASE_URL";

/// The variable that replaces [`BUILT_IN_PUBLIC_KEY`] (a minisign public key, base64).
pub const PUBLIC_KEY_VAR: &str = "ODEK_RELEASE_PUBKEY";

/// What every release variable's name starts with (a shell command that sets one is
/// persistence: `tools/danger`).
pub const RELEASE_VAR_PREFIX: &str = "ODEK_RELEASE_";

/// The project's release key (minisign, Ed25519, key id `EE966432657A022C`): the secret half
/// signs `SHA256SUMS` of every release and is never in the repository.
pub const BUILT_IN_PUBLIC_KEY: &str = "RWQsAnplMmSW7qF+b4q+V4UOyCIuzmrDNHQtoG1bd+aDZXGCl1JfBS7u";

/// The release target this build upgrades to: Linux takes the static musl build (a glibc
/// build from source upgrades to it too), macOS its own architecture's. `None` elsewhere.
pub const HOST_TARGET: Option<&str> = host_target();

const fn host_target() -> Option<&'static str> {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        Some("x86_64-unknown-linux-musl")
    } else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
        Some("aarch64-unknown-linux-musl")
    } else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        Some("aarch64-apple-darwin")
    } else if cfg!(all(target_os = "macos", target_arch = "x86_64")) {
        Some("x86_64-apple-darwin")
    } else {
        None
    }
}

/// The version of this binary.
pub fn current_version() -> Version {
    Version::parse(env!("CARGO_PKG_VERSION")).unwrap_or(Version {
        major: 0,
        minor: 0,
        patch: 0,
        pre: Vec::new(),
    })
}

/// The archive's name in a release: `odek-<version>-<target>.tar.gz`.
pub fn archive_name(version: &Version, target: &str) -> String {
    format!("odek-{version}-{target}.tar.gz")
}

/// Why an upgrade (or a rollback) stopped. Nothing was replaced unless it says so.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// No release is built for this OS and architecture.
    #[error(
        "no odek release for this platform ({os}/{arch}): build it from source (docs/INSTALL.md)"
    )]
    NoReleaseForPlatform {
        /// The OS.
        os: &'static str,
        /// The architecture.
        arch: &'static str,
    },
    /// `ODEK_RELEASE_URL` is not an http(s) URL.
    #[error("ODEK_RELEASE_URL is not an http:// or https:// URL: {0:?}")]
    BadUrl(String),
    /// `ODEK_RELEASE_PUBKEY` (or, impossibly, the built-in key) does not parse.
    #[error("{var} is refused: {error}")]
    BadKey {
        /// Where the key came from.
        var: &'static str,
        /// Why it was refused.
        error: MinisignError,
    },
    /// The request failed before an answer (connection, TLS, timeout) or mid-body.
    #[error("cannot fetch {url}: {message}")]
    Network {
        /// What was fetched.
        url: String,
        /// Why it failed.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}{}", if *.status == 404 { " (no such release or file)" } else { "" })]
    Status {
        /// What was fetched.
        url: String,
        /// The status.
        status: u16,
    },
    /// The body ended before its declared length: an interrupted download.
    #[error(
        "the download of {url} was cut short ({received} of {expected} bytes): nothing was changed; run odek upgrade again"
    )]
    Truncated {
        /// What was fetched.
        url: String,
        /// Bytes received.
        received: u64,
        /// Bytes announced.
        expected: u64,
    },
    /// The body is larger than odek reads for that file.
    #[error("{url} is larger than {cap} bytes: refused")]
    TooLarge {
        /// What was fetched.
        url: String,
        /// The cap.
        cap: u64,
    },
    /// `latest.json` is not the contract's object.
    #[error("{url} is not a release's latest.json: {reason}")]
    Latest {
        /// Where it came from.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A version (from `--to` or `latest.json`) does not parse.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// `SHA256SUMS.minisig` is missing, malformed or does not verify.
    #[error(
        "the signature of SHA256SUMS of odek {version} is refused: {error}; nothing was changed"
    )]
    Signature {
        /// The release.
        version: Version,
        /// Why.
        error: MinisignError,
    },
    /// `SHA256SUMS` lists no archive for this machine.
    #[error(
        "odek {version} has no archive for this machine ({name} is not in its SHA256SUMS); nothing was changed"
    )]
    NotInSums {
        /// The release.
        version: Version,
        /// The archive looked for.
        name: String,
    },
    /// The archive's SHA-256 is not the signed one.
    #[error(
        "{name} does not match its SHA-256 in the signed SHA256SUMS (expected {expected}, got {actual}): the download is corrupt or was tampered with; nothing was changed"
    )]
    Checksum {
        /// The archive.
        name: String,
        /// The signed hash.
        expected: String,
        /// The downloaded file's hash.
        actual: String,
    },
    /// The archive cannot be read.
    #[error("{name} cannot be read as a tar.gz release archive: {reason}; nothing was changed")]
    Archive {
        /// The archive.
        name: String,
        /// Why.
        reason: String,
    },
    /// The archive holds no `odek` at its top level.
    #[error("{name} holds no odek at its top level; nothing was changed")]
    NoBinary {
        /// The archive.
        name: String,
    },
    /// The release is older than this binary and `--to` did not ask for it.
    #[error(
        "odek {available} is older than this odek ({current}): not downgraded; to install it anyway, run odek upgrade --to {available}"
    )]
    Downgrade {
        /// The running version.
        current: Version,
        /// The release's.
        available: Version,
    },
    /// The binary is one `odek upgrade` must not or cannot replace.
    #[error("cannot replace {} ({why}): {how}", path.display())]
    CannotReplace {
        /// The binary.
        path: PathBuf,
        /// Why not.
        why: String,
        /// How to upgrade it instead.
        how: String,
    },
    /// `--rollback` without an `odek.old`.
    #[error(
        "no previous binary to roll back to ({} does not exist: odek upgrade keeps it when it replaces odek)", path.display()
    )]
    NoPrevious {
        /// Where it would be.
        path: PathBuf,
    },
    /// A local file operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl crate::error::Classified for ReleaseError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            ReleaseError::NoReleaseForPlatform { .. } | ReleaseError::NoPrevious { .. } => {
                ErrorKind::NotFound
            }
            ReleaseError::BadUrl(_) | ReleaseError::BadKey { .. } => ErrorKind::Config,
            ReleaseError::Version(_) | ReleaseError::Downgrade { .. } => ErrorKind::Usage,
            ReleaseError::CannotReplace { .. } => ErrorKind::Conflict,
            ReleaseError::Io { .. } => ErrorKind::Io,
            ReleaseError::Network { .. }
            | ReleaseError::Status { .. }
            | ReleaseError::Truncated { .. }
            | ReleaseError::TooLarge { .. }
            | ReleaseError::Latest { .. }
            | ReleaseError::Signature { .. }
            | ReleaseError::NotInSums { .. }
            | ReleaseError::Checksum { .. }
            | ReleaseError::Archive { .. }
            | ReleaseError::NoBinary { .. } => ErrorKind::Remote,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            ReleaseError::Signature { .. } | ReleaseError::Checksum { .. } => Some(
                "odek upgrade --key prints the key odek checks with; ODEK_RELEASE_URL and ODEK_RELEASE_PUBKEY say where releases come from and which key signs them",
            ),
            ReleaseError::Network { .. } => {
                Some("check the connection, or set ODEK_RELEASE_URL to a reachable mirror")
            }
            _ => None,
        }
    }
}

/// Where the key in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// [`BUILT_IN_PUBLIC_KEY`].
    BuiltIn,
    /// `ODEK_RELEASE_PUBKEY`.
    Environment,
}

/// The key releases are checked with: `ODEK_RELEASE_PUBKEY` when set and not empty, else
/// the built-in one.
pub fn release_key() -> Result<(PublicKey, KeySource), ReleaseError> {
    match std::env::var(PUBLIC_KEY_VAR) {
        Ok(text) if !text.trim().is_empty() => PublicKey::parse(&text)
            .map(|key| (key, KeySource::Environment))
            .map_err(|error| ReleaseError::BadKey {
                var: PUBLIC_KEY_VAR,
                error,
            }),
        _ => PublicKey::parse(BUILT_IN_PUBLIC_KEY)
            .map(|key| (key, KeySource::BuiltIn))
            .map_err(|error| ReleaseError::BadKey {
                var: "the built-in release key",
                error,
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_follow_the_release_contract() {
        let v = Version::parse("1.4.0").expect("version");
        assert_eq!(
            archive_name(&v, "aarch64-apple-darwin"),
            "odek-1.4.0-aarch64-apple-darwin.tar.gz"
        );
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(HOST_TARGET, Some("x86_64-unknown-linux-musl"));
        assert_eq!(current_version().to_string(), env!("CARGO_PKG_VERSION"));
    }
}
