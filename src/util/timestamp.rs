//! Timestamps as odek writes and reads them: RFC 3339 in UTC (`jiff`, the one time crate).

use jiff::Timestamp;

/// What a time that cannot be formatted (out of jiff's range) is written as.
const EPOCH_MILLIS: &str = "1970-01-01T00:00:00.000Z";

/// The current time as RFC 3339 UTC with millisecond precision, e.g.
/// `2026-11-30T02:01:20.123Z`: what sessions and checkpoints record (sessions saved within one
/// second still sort in order, so `odek continue` resumes the one really saved last).
pub fn now_rfc3339() -> String {
    rfc3339_millis(Timestamp::now())
}

/// `t` as RFC 3339 UTC with exactly three digits of the second's fraction (cut, not rounded).
pub fn rfc3339_millis(t: Timestamp) -> String {
    let mut out = String::with_capacity(EPOCH_MILLIS.len());
    match std::fmt::write(
        &mut out,
        format_args!("{}", t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")),
    ) {
        Ok(()) => out,
        Err(_) => EPOCH_MILLIS.to_string(),
    }
}

/// The current time as RFC 3339 UTC with as many digits of the second's fraction as it has
/// (none when it has none), e.g. `2026-11-30T02:01:20.12345678Z`: what the event stream, the
/// audit log and skill trust records carry.
pub fn now_rfc3339_precise() -> String {
    Timestamp::now().to_string()
}

/// Seconds since the Unix epoch, now.
pub fn now_unix_seconds() -> i64 {
    Timestamp::now().as_second()
}

/// Seconds since the epoch and the nanoseconds within that second of an RFC 3339 timestamp;
/// `None` when it does not parse. The canonical forms odek writes (and the Go original wrote)
/// take a fast path: `odek session list` sorts thousands of them.
pub fn parse_rfc3339(timestamp: &str) -> Option<(i64, u32)> {
    parse_canonical_utc(timestamp)
        .or_else(|| timestamp.parse::<Timestamp>().ok().map(seconds_and_nanos))
}

/// Whole seconds since the epoch (rounded down) and the nanoseconds after them.
fn seconds_and_nanos(t: Timestamp) -> (i64, u32) {
    let (seconds, nanos) = (t.as_second(), t.subsec_nanosecond());
    if nanos < 0 {
        (
            seconds - 1,
            u32::try_from(nanos + 1_000_000_000).unwrap_or(0),
        )
    } else {
        (seconds, u32::try_from(nanos).unwrap_or(0))
    }
}

/// Parses exactly `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.mmmZ`; anything else is
/// `None` (left to the full parser).
fn parse_canonical_utc(timestamp: &str) -> Option<(i64, u32)> {
    let b = timestamp.as_bytes();
    let millis = match b.len() {
        20 => false,
        24 if b[19] == b'.' => true,
        _ => return None,
    };
    let shape_ok = [4, 7].iter().all(|&at| b[at] == b'-')
        && b[10] == b'T'
        && [13, 16].iter().all(|&at| b[at] == b':')
        && b[b.len() - 1] == b'Z';
    if !shape_ok {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i16> {
        let digits = &timestamp[range];
        digits
            .bytes()
            .all(|d| d.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
    };
    let small = |range| number(range).and_then(|n| i8::try_from(n).ok());
    let date = jiff::civil::Date::new(number(0..4)?, small(5..7)?, small(8..10)?).ok()?;
    let clock = jiff::civil::Time::new(small(11..13)?, small(14..16)?, small(17..19)?, 0).ok()?;
    let nanos = if millis {
        u32::try_from(number(20..23)?).ok()? * 1_000_000
    } else {
        0
    };
    let seconds = date
        .to_datetime(clock)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()?;
    Some((seconds.timestamp().as_second(), nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(nanos: i128) -> Timestamp {
        Timestamp::from_nanosecond(nanos).expect("in range")
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(
            rfc3339_millis(at(1_796_004_080_123_456_789)),
            "2026-11-30T02:01:20.123Z"
        );
        assert_eq!(rfc3339_millis(at(0)), EPOCH_MILLIS);
        assert_eq!(
            parse_rfc3339("2026-11-30T02:01:20.123Z"),
            Some((1_796_004_080, 123_000_000))
        );
        assert_eq!(
            parse_rfc3339("2026-11-30T02:01:20Z"),
            Some((1_796_004_080, 0))
        );
        assert_eq!(
            parse_rfc3339("2026-11-30T03:01:20+01:00"),
            Some((1_796_004_080, 0))
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2026-02-30T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2026-02-30T00:00:00.000Z"), None);
        assert_eq!(parse_rfc3339("2026-11-30T24:00:00Z"), None);
        assert_eq!(
            parse_rfc3339("2026-11-30T02:01:20.5Z"),
            Some((1_796_004_080, 500_000_000))
        );
        let now = now_rfc3339();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.ends_with('Z'), "{now}");
    }

    #[test]
    fn precise_timestamps_carry_the_fraction_they_have() {
        assert_eq!(
            at(1_796_004_080_123_456_789).to_string(),
            "2026-11-30T02:01:20.123456789Z"
        );
        assert_eq!(
            at(1_796_004_080_120_000_000).to_string(),
            "2026-11-30T02:01:20.12Z"
        );
        assert_eq!(
            at(1_796_004_080_000_000_000).to_string(),
            "2026-11-30T02:01:20Z"
        );
        assert!(now_rfc3339_precise().ends_with('Z'));
        assert!(now_unix_seconds() > 1_796_004_080 - 366 * 86_400);
    }

    proptest::proptest! {
        #[test]
        fn the_fast_timestamp_path_agrees_with_the_full_parser(
            seconds in 0i64..253_402_300_799,
            millis in 0u32..1000,
        ) {
            let t = at(i128::from(seconds) * 1_000_000_000 + i128::from(millis) * 1_000_000);
            let text = rfc3339_millis(t);
            let full = text.parse::<Timestamp>().map(seconds_and_nanos).ok();
            proptest::prop_assert_eq!(parse_canonical_utc(&text), full);
            proptest::prop_assert_eq!(full, Some((seconds, millis * 1_000_000)));
        }
    }
}
