//! Session ids: `YYYYMMDD-<32 hex>`, and the validation that keeps any id a safe file stem.

use super::SessionError;

/// Longest id accepted by [`validate_id`].
pub const MAX_ID_LEN: usize = 128;

/// How much of a refused id an error message shows.
const SHOWN_ID_CHARS: usize = 64;

/// A fresh id: the UTC date as `YYYYMMDD`, `-`, then 16 random bytes as 32 lowercase hex.
pub fn new_session_id() -> String {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    format!(
        "{:04}{:02}{:02}-{}",
        today.year(),
        today.month(),
        today.day(),
        crate::random::hex_id::<16>()
    )
}

/// Accepts only non-empty ids of at most 128 characters from `[A-Za-z0-9_-]` that do not
/// start with `-`. Separators, dots and NUL are all outside the alphabet, so no accepted id
/// can name a path outside the sessions directory (or a hidden temp file inside it).
pub fn validate_id(id: &str) -> Result<(), SessionError> {
    let refuse = |reason| {
        Err(SessionError::InvalidId {
            shown_id: crate::text::truncate(id, SHOWN_ID_CHARS).into_owned(),
            reason,
        })
    };
    if id.is_empty() {
        return refuse("the id is empty");
    }
    if id.len() > MAX_ID_LEN {
        return refuse("longer than 128 characters");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return refuse("only letters, digits, '-' and '_' are allowed");
    }
    if id.starts_with('-') {
        return refuse("an id must not start with '-'");
    }
    Ok(())
}

/// True for ids of the form this store makes: `YYYYMMDD-` and 32 lowercase hex digits.
/// Only files named so are sessions; anything else in the directory (the Go original's
/// `vectors_meta.json`, notes of the user) is not one and is skipped silently.
pub fn is_standard_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == 8 + 1 + 32
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_have_the_date_dash_32_hex_format() {
        let id = new_session_id();
        assert_eq!(id.len(), 8 + 1 + 32, "{id}");
        let (date, rest) = id.split_at(8);
        assert!(date.bytes().all(|b| b.is_ascii_digit()), "{id}");
        assert!(date.starts_with("20"), "{id}");
        assert_eq!(&rest[..1], "-");
        assert!(
            rest[1..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{id}"
        );
        assert_ne!(new_session_id(), id, "ids must be random");
        assert!(validate_id(&id).is_ok());
        assert!(is_standard_id(&id));
        for other in [
            "vectors_meta",
            "index",
            "20261130-0123456789ABCDEF0123456789abcdef",
            "20261130-0123456789abcdef0123456789abcde",
            "2026113-0123456789abcdef0123456789abcdef0",
            "20261130_0123456789abcdef0123456789abcdef",
        ] {
            assert!(!is_standard_id(other), "{other}");
        }
    }

    #[test]
    fn traversal_and_malformed_ids_are_rejected() {
        let long = "a".repeat(MAX_ID_LEN + 1);
        for bad in [
            "../etc/passwd",
            "a/b",
            "a\\b",
            "..",
            ".",
            "",
            "a\0b",
            ".hidden",
            "-rf",
            "x.json",
            "ab c",
            "é",
            long.as_str(),
        ] {
            assert!(validate_id(bad).is_err(), "{bad:?} must be rejected");
        }
        for good in [
            "20261130-0123456789abcdef0123456789abcdef",
            "a",
            "my_session-2",
            &"b".repeat(MAX_ID_LEN),
        ] {
            assert!(validate_id(good).is_ok(), "{good:?} must be accepted");
        }
    }

    #[test]
    fn refusals_name_the_id_and_the_rule() {
        let err = validate_id("../x").expect_err("refused").to_string();
        assert_eq!(
            err,
            "invalid session id \"../x\": only letters, digits, '-' and '_' are allowed"
        );
        let nul = validate_id("a\0b").expect_err("refused").to_string();
        assert!(nul.contains("a\\0b"), "{nul}");
        let long = validate_id(&"z".repeat(10_000))
            .expect_err("refused")
            .to_string();
        assert!(
            long.len() < 200,
            "long ids are shortened in messages: {long}"
        );
    }
}
