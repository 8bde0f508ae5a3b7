//! The night's date: `{date}` in a job spec, today (UTC) unless `--date`
//! gives one.

use anyhow::{bail, Result};

/// Today's date (UTC) as `YYYY-MM-DD`, the default for `{date}`.
pub(crate) fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Checks a `--date` value: `YYYY-MM-DD`, a day of the calendar (a typo
/// such as 2026-13-40 would name a night no schedule makes).
pub(crate) fn check_date(date: &str) -> Result<()> {
    let parts: Vec<&str> = date.split('-').collect();
    let shaped = parts.len() == 3
        && [4, 2, 2]
            .iter()
            .zip(&parts)
            .all(|(n, p)| p.len() == *n && p.bytes().all(|b| b.is_ascii_digit()));
    if !shaped {
        bail!("--date {date:?} must look like 2026-11-22");
    }
    let [y, m, d] = [0, 1, 2].map(|i| parts[i].parse::<u32>().unwrap_or(0));
    if !(1..=12).contains(&m) || !(1..=days_in_month(y, m)).contains(&d) {
        bail!("--date {date:?} is no day of the calendar");
    }
    Ok(())
}

fn days_in_month(year: u32, month: u32) -> u32 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn dates_are_checked() {
        for good in ["2026-11-22", "2024-02-29", "2000-02-29", "2026-12-31"] {
            check_date(good).unwrap();
        }
        let bad = ["2026-1-22", "yesterday", "2026/11/22", "", "2026-13-40"];
        let not_days = ["2026-02-29", "1900-02-29", "2026-04-31", "2026-00-10"];
        for bad in bad.into_iter().chain(not_days) {
            assert!(check_date(bad).is_err(), "{bad}");
        }
    }
}
