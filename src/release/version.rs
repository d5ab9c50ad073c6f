//! Release versions: `X.Y.Z` with an optional `-pre` part, ordered as semver orders them
//! (a pre-release comes before its release; `+build` metadata is ignored). Small enough to
//! write here rather than compile the `semver` crate into the binary.

use std::cmp::Ordering;
use std::fmt;

/// A version that is not `X.Y.Z[-pre][+build]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a version (expected X.Y.Z, e.g. 1.4.0, or 1.4.0-rc.1)")]
pub struct VersionError(pub String);

impl crate::error::Classified for VersionError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }

    fn hint(&self) -> Option<&'static str> {
        Some("name a release as X.Y.Z, e.g. odek upgrade --to 1.4.0")
    }
}

/// A release version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// X.
    pub major: u64,
    /// Y.
    pub minor: u64,
    /// Z.
    pub patch: u64,
    /// The dot-separated identifiers after `-` (empty for a release).
    pub pre: Vec<String>,
}

impl Version {
    /// Parses `X.Y.Z[-pre][+build]`, with or without a leading `v`.
    pub fn parse(text: &str) -> Result<Version, VersionError> {
        let error = || VersionError(text.to_string());
        let trimmed = text.trim();
        let bare = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let bare = bare.split_once('+').map_or(bare, |(core, _build)| core);
        let (core, pre) = match bare.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (bare, None),
        };
        let mut numbers = core.split('.').map(number);
        let (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) = (
            numbers.next(),
            numbers.next(),
            numbers.next(),
            numbers.next(),
        ) else {
            return Err(error());
        };
        let pre = match pre {
            None => Vec::new(),
            Some(pre) => {
                let parts: Vec<String> = pre.split('.').map(str::to_string).collect();
                let valid = |p: &String| {
                    !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                };
                if !parts.iter().all(valid) {
                    return Err(error());
                }
                parts
            }
        };
        Ok(Version {
            major,
            minor,
            patch,
            pre,
        })
    }
}

/// A numeric part: digits only, no leading zero (but `0` itself).
fn number(part: &str) -> Option<u64> {
    let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !digits || (part.len() > 1 && part.starts_with('0')) {
        return None;
    }
    part.parse().ok()
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| compare_pre(&self.pre, &other.pre))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Semver's pre-release order: none is above any; numeric identifiers compare as numbers and
/// below alphanumeric ones; a shorter list that is a prefix of the other is lower.
fn compare_pre(a: &[String], b: &[String]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    for (x, y) in a.iter().zip(b) {
        let order = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre.join("."))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).expect(text)
    }

    #[test]
    fn parses_releases_pre_releases_and_a_leading_v() {
        assert_eq!(v("1.2.3").to_string(), "1.2.3");
        assert_eq!(v("v1.2.3").to_string(), "1.2.3");
        assert_eq!(v("1.2.3-rc.1").pre, ["rc", "1"]);
        assert_eq!(v("1.2.3+build.5").to_string(), "1.2.3");
        assert_eq!(v(" 0.1.0\n").to_string(), "0.1.0");
        for bad in [
            "",
            "1",
            "1.2",
            "1.2.3.4",
            "01.2.3",
            "1.2.x",
            "1.2.3-",
            "1.2.3-a..b",
            "-1.2.3",
            "1.2.3-é",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn orders_as_semver_does() {
        // The precedence example of semver.org §11, in order.
        let chain = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "1.10.0",
            "2.0.0",
        ];
        for pair in chain.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(v("1.2.3").cmp(&v("v1.2.3+x")), Ordering::Equal);
        assert!(v("0.9.10") > v("0.9.9"));
    }
}
