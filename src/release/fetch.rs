//! The releases at one base URL, fetched with odek's HTTP client: `latest.json`,
//! `SHA256SUMS` checked against its minisign signature, and this machine's archive checked
//! against its line there, `odek` taken out of it.

use std::time::Duration;

use super::{
    DEFAULT_RELEASE_URL, MinisignError, PublicKey, RELEASE_URL_VAR, ReleaseError, Version, archive,
    archive_name,
};

/// The largest archive downloaded (the release archive is ~5 MiB).
const MAX_ARCHIVE_BYTES: u64 = 200 * 1024 * 1024;

/// The largest `latest.json`, `SHA256SUMS` or signature read.
const MAX_SMALL_FILE_BYTES: u64 = 1024 * 1024;

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
