use super::*;

/// The next `n` fire times after `after` (civil time in `zone`), as civil times there with
/// their offsets.
fn next(expr: &str, zone: &str, after: &str, n: usize) -> Vec<String> {
    let s = Schedule::parse(expr, Some(zone)).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let start = jiff::civil::DateTime::from_str(after)
        .unwrap()
        .to_zoned(TimeZone::get(zone).unwrap())
        .unwrap()
        .timestamp();
    s.upcoming(start, n)
        .iter()
        .map(|z| z.strftime("%Y-%m-%d %H:%M %:z").to_string())
        .collect()
}

#[test]
fn a_table_of_expressions() {
    let utc = "UTC";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "*/15 * * * *",
            "2027-01-01T10:07",
            &["2027-01-01 10:15 +00:00", "2027-01-01 10:30 +00:00"],
        ),
        (
            "0 8 * * MON-FRI",
            "2027-01-01T09:00",
            &["2027-01-04 08:00 +00:00", "2027-01-05 08:00 +00:00"],
        ),
        (
            "30 6 1,15 * *",
            "2027-01-02T00:00",
            &["2027-01-15 06:30 +00:00", "2027-02-01 06:30 +00:00"],
        ),
        (
            "0 0 * JAN,JUL *",
            "2027-01-31T12:00",
            &["2027-07-01 00:00 +00:00", "2027-07-02 00:00 +00:00"],
        ),
        (
            "0 12 * * sun",
            "2027-01-01T00:00",
            &["2027-01-03 12:00 +00:00", "2027-01-10 12:00 +00:00"],
        ),
        (
            "5 4 * * 0-6/2",
            "2027-01-01T00:00",
            &["2027-01-02 04:05 +00:00", "2027-01-03 04:05 +00:00"],
        ),
        (
            "0 9 29 2 *",
            "2027-01-01T00:00",
            &["2028-02-29 09:00 +00:00"],
        ),
        (
            "@hourly",
            "2027-01-01T10:59",
            &["2027-01-01 11:00 +00:00", "2027-01-01 12:00 +00:00"],
        ),
        ("@daily", "2027-01-01T10:00", &["2027-01-02 00:00 +00:00"]),
        ("@weekly", "2027-01-01T10:00", &["2027-01-03 00:00 +00:00"]),
        ("@monthly", "2027-01-01T10:00", &["2027-02-01 00:00 +00:00"]),
        ("@yearly", "2027-01-01T10:00", &["2028-01-01 00:00 +00:00"]),
    ];
    for (expr, after, expected) in cases {
        assert_eq!(next(expr, utc, after, expected.len()), *expected, "{expr}");
    }
}

#[test]
fn the_wrong_field_is_named() {
    let cases = [
        ("61 * * * *", "field 1 (minute) \"61\""),
        ("0 24 * * *", "field 2 (hour) \"24\""),
        ("0 0 32 * *", "field 3 (day of month) \"32\""),
        ("0 0 * 13 *", "field 4 (month) \"13\""),
        ("0 0 * * FUNDAY", "field 5 (day of week) \"FUNDAY\""),
        ("0 0 * *", "has 4 field(s); a cron expression has 5"),
        ("0 0 0 * * *", "has 6 field(s)"),
        ("@fortnightly", "use @hourly, @daily"),
    ];
    for (expr, expected) in cases {
        let e = Schedule::parse(expr, Some("UTC")).unwrap_err().to_string();
        assert!(e.contains(expected), "{expr}: {e}");
    }
    let zone = Schedule::parse("@daily", Some("Mars/Olympus"))
        .unwrap_err()
        .to_string();
    assert!(
        zone.contains("unknown time zone \"Mars/Olympus\""),
        "{zone}"
    );
}

/// Berlin springs forward on 2027-03-28 (02:00 → 03:00) and falls back on 2027-10-31
/// (03:00 → 02:00); New York on 2027-03-14 (02:00 → 03:00) and 2027-11-07 (02:00 → 01:00).
#[test]
fn daylight_saving_in_two_zones() {
    // A daily job inside the gap runs once, right after it.
    assert_eq!(
        next("30 2 * * *", "Europe/Berlin", "2027-03-27T12:00", 2),
        ["2027-03-28 03:00 +02:00", "2027-03-29 02:30 +02:00"]
    );
    assert_eq!(
        next("30 2 * * *", "America/New_York", "2027-03-13T12:00", 2),
        ["2027-03-14 03:00 -04:00", "2027-03-15 02:30 -04:00"]
    );
    // A daily job in the repeated hour runs once, at its first occurrence.
    assert_eq!(
        next("30 2 * * *", "Europe/Berlin", "2027-10-30T12:00", 2),
        ["2027-10-31 02:30 +02:00", "2027-11-01 02:30 +01:00"]
    );
    assert_eq!(
        next("30 1 * * *", "America/New_York", "2027-11-06T12:00", 2),
        ["2027-11-07 01:30 -04:00", "2027-11-08 01:30 -05:00"]
    );
    // Times outside the transitions keep their wall-clock hour across it.
    assert_eq!(
        next("0 8 * * *", "Europe/Berlin", "2027-03-27T12:00", 2),
        ["2027-03-28 08:00 +02:00", "2027-03-29 08:00 +02:00"]
    );
}

/// Interval jobs (a step or a wildcard in the hour) keep their interval in real time through
/// the repeated hour, as cron does; only fixed times run once.
#[test]
fn interval_jobs_keep_their_interval_through_a_repeated_hour() {
    assert_eq!(
        next("*/30 * * * *", "Europe/Berlin", "2027-10-31T01:45", 5),
        [
            "2027-10-31 02:00 +02:00",
            "2027-10-31 02:30 +02:00",
            "2027-10-31 02:00 +01:00",
            "2027-10-31 02:30 +01:00",
            "2027-10-31 03:00 +01:00"
        ]
    );
    assert_eq!(
        next("*/30 * * * *", "America/New_York", "2027-03-14T01:15", 2),
        ["2027-03-14 01:30 -05:00", "2027-03-14 03:00 -04:00"],
        "the gap has no half hours"
    );
}
