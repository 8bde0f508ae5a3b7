//! Date-times of RFC 3339 (the profile of ISO 8601 that WARC-Date's
//! W3C-ISO8601 and JSON APIs use) as microseconds since the Unix epoch, UTC:
//! a page's fetch time.
//!
//! `YYYY-MM-DDThh:mm:ss[.f...](Z|+hh:mm|-hh:mm)`, with `t`/`z` or a space
//! for the `T` as RFC 3339 allows. Fractional seconds of any length are cut
//! to microseconds (towards the past, as a later instant must not sort
//! before an earlier one); a leap second `:60` is the next minute's `:00`.
//! Anything else (no offset, a date alone, a day past the month's end) is
//! refused: a fetch time that is guessed would decide which copy of a page
//! is kept.
//!
//! Written here rather than taken from a date crate: it is this one
//! function, and a crate for it would add its build to every build.

/// Microseconds since 1970-01-01T00:00:00Z of an RFC 3339 date-time; `None`
/// if `text` (surrounding whitespace aside) is not one.
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.trim().as_bytes();
    if b.len() < 20 {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    let separators_ok = b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't' | b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !separators_ok
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut micros = 0i64;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        for i in 0..6 {
            let digit = fraction.get(i).filter(|_| i < n).map_or(0, |d| d - b'0');
            micros = micros * 10 + i64::from(digit);
        }
        rest = &fraction[n..];
    }
    let offset_seconds = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (hours, minutes) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = i64::from(hours * 3600 + minutes * 60);
            if *sign == b'+' {
                seconds
            } else {
                -seconds
            }
        }
        _ => return None,
    };
    let days = days_from_civil(i64::from(year), month, day);
    let local = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    Some((local - offset_seconds) * 1_000_000 + micros)
}

/// The value of ASCII decimal digits, `None` if any byte is not one.
fn digits(bytes: &[u8]) -> Option<u32> {
    bytes.iter().try_fold(0u32, |value, &c| {
        c.is_ascii_digit().then(|| value * 10 + u32::from(c - b'0'))
    })
}

fn is_leap_year(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm; the inverse of `job::dates::civil_from_days`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000;
    const DAY: i64 = 86_400 * SECOND;

    #[test]
    fn utc_date_times_count_microseconds_from_the_epoch() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        // `date -u -d 2024-05-01T12:34:56Z +%s`
        assert_eq!(
            parse_rfc3339("2024-05-01T12:34:56Z"),
            Some(1_714_566_896 * SECOND)
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), Some(-SECOND));
        assert_eq!(
            parse_rfc3339("0001-01-01T00:00:00Z"),
            Some(-62_135_596_800 * SECOND)
        );
        assert_eq!(
            parse_rfc3339("9999-12-31T23:59:59Z"),
            Some(253_402_300_799 * SECOND)
        );
        // Lower case and a space for `T`, and surrounding whitespace.
        for text in [
            "2024-05-01t12:34:56z",
            "2024-05-01 12:34:56Z",
            " 2024-05-01T12:34:56Z\r\n",
        ] {
            assert_eq!(parse_rfc3339(text), Some(1_714_566_896 * SECOND), "{text}");
        }
    }

    #[test]
    fn leap_years_have_a_29th_of_february_and_others_do_not() {
        let march_first = |year: &str| parse_rfc3339(&format!("{year}-03-01T00:00:00Z"));
        for (year, leap) in [
            ("2024", true),
            ("2000", true),
            ("1600", true),
            ("2023", false),
            ("1900", false),
            ("2100", false),
        ] {
            let feb29 = parse_rfc3339(&format!("{year}-02-29T00:00:00Z"));
            let feb28 = parse_rfc3339(&format!("{year}-02-28T00:00:00Z")).unwrap();
            match leap {
                true => {
                    assert_eq!(feb29, Some(feb28 + DAY), "{year}");
                    assert_eq!(march_first(year), Some(feb28 + 2 * DAY), "{year}");
                }
                false => {
                    assert_eq!(feb29, None, "{year}");
                    assert_eq!(march_first(year), Some(feb28 + DAY), "{year}");
                }
            }
        }
        // 2000-03-01 is day 11,017 (`date -u -d 2000-03-01 +%s` / 86400).
        assert_eq!(parse_rfc3339("2000-03-01T00:00:00Z"), Some(11_017 * DAY));
    }

    #[test]
    fn fractional_seconds_are_cut_to_microseconds() {
        let base = parse_rfc3339("2024-05-01T12:34:56Z").unwrap();
        for (fraction, micros) in [
            (".5", 500_000),
            (".123", 123_000),
            (".123456", 123_456),
            (".1234567", 123_456),
            (".999999999", 999_999),
            (".000001", 1),
        ] {
            let text = format!("2024-05-01T12:34:56{fraction}Z");
            assert_eq!(parse_rfc3339(&text), Some(base + micros), "{text}");
        }
        // Before the epoch, a fraction still moves later.
        assert_eq!(
            parse_rfc3339("1969-12-31T23:59:59.25Z"),
            Some(-SECOND + 250_000)
        );
    }

    #[test]
    fn offsets_are_taken_off_to_give_utc() {
        let utc = parse_rfc3339("2024-05-01T12:34:56Z").unwrap();
        for text in [
            "2024-05-01T14:34:56+02:00",
            "2024-05-01T07:04:56-05:30",
            "2024-05-01T12:34:56+00:00",
            "2024-05-01T12:34:56-00:00",
            "2024-05-02T00:34:56+12:00",
        ] {
            assert_eq!(parse_rfc3339(text), Some(utc), "{text}");
        }
        assert_eq!(
            parse_rfc3339("2024-05-01T14:34:56.75+02:00"),
            Some(utc + 750_000)
        );
        // Across a year's end.
        assert_eq!(
            parse_rfc3339("2025-01-01T01:00:00+02:00"),
            parse_rfc3339("2024-12-31T23:00:00Z")
        );
        // A leap second is the next minute's first.
        assert_eq!(
            parse_rfc3339("2016-12-31T23:59:60Z"),
            parse_rfc3339("2017-01-01T00:00:00Z")
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for text in [
            "",
            "yesterday",
            "2024-05-01",
            "2024-05-01T12:34Z",
            "2024-05-01T12:34:56",
            "2024-05-01T12:34:56.Z",
            "2024-05-01T12:34:56.5",
            "2024-05-01T12:34:56+0200",
            "2024-05-01T12:34:56+02",
            "2024-05-01T12:34:56+24:00",
            "2024-05-01T12:34:56+02:60",
            "2024-05-01T12:34:56ZZ",
            "2024-05-01T12:34:56Z trailing",
            "2024-13-01T12:34:56Z",
            "2024-00-01T12:34:56Z",
            "2024-04-31T12:34:56Z",
            "2024-05-00T12:34:56Z",
            "2024-05-01T24:00:00Z",
            "2024-05-01T12:60:00Z",
            "2024-05-01T12:34:61Z",
            "2024/05/01T12:34:56Z",
            "2024-05-01X12:34:56Z",
            "24-05-01T12:34:56Z",
            "+2024-05-01T12:34:56Z",
            "2024-05-01T1a:34:56Z",
            "１９７０-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(text), None, "{text:?}");
        }
    }
}
