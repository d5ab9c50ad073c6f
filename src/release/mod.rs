//! odek's own releases (docs/UPGRADE.md): where they are (`ODEK_RELEASE_URL`, laid out as
//! GitHub's release URLs), which key signs them (compiled in, or `ODEK_RELEASE_PUBKEY`), and
//! the chain `odek upgrade` walks — `latest.json`, `SHA256SUMS` and its minisign signature,
//! this machine's archive and its checksum, `odek` out of the archive — before
//! [`install::replace`] puts it in place of the running binary.

pub mod archive;
pub mod install;
pub mod minisign;
pub mod version;

use std::path::PathBuf;
use std::time::Duration;

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

/// The largest archive downloaded (the release archive is ~5 MiB).
const MAX_ARCHIVE_BYTES: u64 = 200 * 1024 * 1024;

/// The largest `latest.json`, `SHA256SUMS` or signature read.
const MAX_SMALL_FILE_BYTES: u64 = 1024 * 1024;

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

/// A release's `latest.json`.
#[derive(Debug, Clone)]
pub struct Latest {
    /// The release's version.
    pub version: Version,
    /// When it was published (RFC 3339), when given.
    pub published: Option<String>,
    /// Its notes, when given.
    pub notes: Option<String>,
}

#[derive(serde::Deserialize)]
struct LatestJson {
    version: String,
    #[serde(default)]
    published: Option<String>,
    #[serde(default)]
    notes: Option<String>,
}

/// How far a download is: bytes so far, and the total when the server said it.
pub type Progress<'a> = &'a mut dyn FnMut(u64, Option<u64>);

/// The releases at one base URL, fetched with odek's HTTP client.
pub struct Releases {
    base: String,
    http: reqwest::Client,
}

impl Releases {
    /// The releases at `ODEK_RELEASE_URL`, or the project's.
    pub fn from_env() -> Result<Releases, ReleaseError> {
        let base = std::env::var(RELEASE_URL_VAR)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_RELEASE_URL.to_string());
        Releases::at(&base)
    }

    /// The releases at `base`.
    pub fn at(base: &str) -> Result<Releases, ReleaseError> {
        let base = base.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            return Err(ReleaseError::BadUrl(base));
        }
        let http = crate::llm::http::client_builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ReleaseError::Network {
                url: base.clone(),
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Releases { base, http })
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `<base>/download/v<version>/<file>`.
    pub fn file_url(&self, version: &Version, file: &str) -> String {
        format!("{}/download/v{version}/{file}", self.base)
    }

    /// The latest release's `latest.json` (`<base>/latest/download/latest.json`).
    pub async fn latest(&self) -> Result<Latest, ReleaseError> {
        let url = format!("{}/latest/download/latest.json", self.base);
        let bytes = self
            .fetch(&url, MAX_SMALL_FILE_BYTES, &mut |_, _| {})
            .await?;
        let bad = |reason: String| ReleaseError::Latest {
            url: url.clone(),
            reason,
        };
        let json: LatestJson = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        let version = Version::parse(&json.version).map_err(|e| bad(e.to_string()))?;
        Ok(Latest {
            version,
            published: json.published,
            notes: json.notes,
        })
    }

    /// `SHA256SUMS` of `version`, its signature checked with `key`.
    pub async fn verified_sums(
        &self,
        version: &Version,
        key: &PublicKey,
    ) -> Result<String, ReleaseError> {
        let sums_url = self.file_url(version, "SHA256SUMS");
        let sums = self
            .fetch(&sums_url, MAX_SMALL_FILE_BYTES, &mut |_, _| {})
            .await?;
        let signature_url = self.file_url(version, "SHA256SUMS.minisig");
        let signature = match self
            .fetch(&signature_url, MAX_SMALL_FILE_BYTES, &mut |_, _| {})
            .await
        {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(ReleaseError::Status { status: 404, .. }) => String::new(),
            Err(e) => return Err(e),
        };
        let refused = |error| ReleaseError::Signature {
            version: version.clone(),
            error,
        };
        if signature.is_empty() {
            return Err(refused(MinisignError::MalformedSignature(
                "SHA256SUMS.minisig is missing or empty",
            )));
        }
        key.verify(&sums, &signature).map_err(refused)?;
        String::from_utf8(sums).map_err(|_| ReleaseError::Latest {
            url: sums_url,
            reason: "SHA256SUMS is not text".into(),
        })
    }

    /// The `odek` of `version` for `target`: the signed sums, the archive (reported to
    /// `progress`), its checksum, the binary out of it. Nothing is written anywhere.
    pub async fn fetch_binary(
        &self,
        version: &Version,
        target: &str,
        key: &PublicKey,
        progress: Progress<'_>,
    ) -> Result<Vec<u8>, ReleaseError> {
        let sums = self.verified_sums(version, key).await?;
        let name = archive_name(version, target);
        let expected =
            archive::expected_sha256(&sums, &name).ok_or_else(|| ReleaseError::NotInSums {
                version: version.clone(),
                name: name.clone(),
            })?;
        let url = self.file_url(version, &name);
        let bytes = self.fetch(&url, MAX_ARCHIVE_BYTES, progress).await?;
        let actual = archive::sha256(&bytes);
        if actual != expected {
            return Err(ReleaseError::Checksum {
                name,
                expected: crate::util::hex::encode(&expected),
                actual: crate::util::hex::encode(&actual),
            });
        }
        archive::extract_binary(&bytes, &name)
    }

    /// The whole body of `url`, at most `cap` bytes, checked against its `Content-Length`.
    async fn fetch(
        &self,
        url: &str,
        cap: u64,
        progress: Progress<'_>,
    ) -> Result<Vec<u8>, ReleaseError> {
        let network = |e: reqwest::Error| ReleaseError::Network {
            url: url.to_string(),
            message: with_causes(&e.without_url()),
        };
        let mut response = self.http.get(url).send().await.map_err(network)?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            return Err(ReleaseError::Status {
                url: url.to_string(),
                status,
            });
        }
        let expected = response.content_length();
        let too_large = || ReleaseError::TooLarge {
            url: url.to_string(),
            cap,
        };
        if expected.is_some_and(|n| n > cap) {
            return Err(too_large());
        }
        let mut body = Vec::with_capacity(usize::try_from(expected.unwrap_or(0)).unwrap_or(0));
        progress(0, expected);
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                // A body that ends early is an interrupted download when its length was said.
                Err(e) => match expected {
                    Some(expected) if (body.len() as u64) < expected => {
                        return Err(ReleaseError::Truncated {
                            url: url.to_string(),
                            received: body.len() as u64,
                            expected,
                        });
                    }
                    _ => return Err(network(e)),
                },
            };
            if body.len() as u64 + chunk.len() as u64 > cap {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
            progress(body.len() as u64, expected);
        }
        match expected {
            Some(expected) if body.len() as u64 != expected => Err(ReleaseError::Truncated {
                url: url.to_string(),
                received: body.len() as u64,
                expected,
            }),
            _ => Ok(body),
        }
    }
}

/// An error and its causes, `: `-separated ("error sending request: … Connection refused").
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = e.source();
    }
    text
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

    #[test]
    fn release_urls_must_be_http() {
        assert!(matches!(
            Releases::at("file:///tmp/releases"),
            Err(ReleaseError::BadUrl(_))
        ));
        let releases = Releases::at("http://127.0.0.1:9/r/").expect("releases");
        let v = Version::parse("2.0.0").expect("version");
        assert_eq!(
            releases.file_url(&v, "SHA256SUMS"),
            "http://127.0.0.1:9/r/download/v2.0.0/SHA256SUMS"
        );
    }
}
