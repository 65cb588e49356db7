//! Timestamps as the seed writes them: ISO 8601 UTC to the second, `YYYY-MM-DDTHH:MM:SSZ`.
//!
//! Written and read here rather than by chrono's formatting and parsing, which cost the
//! compressed Worker about 10 KB for these few shapes; the clock is read without it too.

const SECS_PER_DAY: i64 = 86_400;

/// `secs` seconds after the Unix epoch, formatted.
pub fn format_secs(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let in_day = secs.rem_euclid(SECS_PER_DAY);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    )
}

/// `ms` milliseconds after the Unix epoch, formatted (to the second below).
pub fn format_ms(ms: i64) -> String {
    format_secs(ms.div_euclid(1000))
}

pub fn now() -> String {
    format_ms(now_ms())
}

/// Milliseconds since the Unix epoch: JavaScript's clock in the Worker (where the standard
/// library has none), the system's natively.
#[cfg(target_arch = "wasm32")]
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The time `secs` seconds before now, formatted.
pub fn seconds_ago(secs: i64) -> String {
    format_ms(now_ms() - secs * 1000)
}

/// Parses an ISO 8601 / RFC 3339 timestamp, or a plain date (midnight UTC), into our format.
pub fn parse(s: &str) -> Option<String> {
    let s = s.trim();
    let secs = match s.len() {
        10 => date_days(s)? * SECS_PER_DAY,
        _ => seconds_of(s)?,
    };
    Some(format_secs(secs.clamp(FIRST_SECOND, LAST_SECOND)))
}

/// The first and last seconds with a four-digit year (0000-01-01T00:00:00Z and
/// 9999-12-31T23:59:59Z). A timestamp written with an offset may fall just outside them;
/// held to them, every normal form sorts as time does, so a range ending at
/// "9999-12-31T23:59:59-01:00" still holds everything.
const FIRST_SECOND: i64 = -62_167_219_200;
const LAST_SECOND: i64 = 253_402_300_799;

/// `parse` for the end of a range, both ends inclusive: a plain date stands for the whole of
/// that day, so it ends at the day's last second rather than at its first.
pub fn parse_end(s: &str) -> Option<String> {
    let s = s.trim();
    match s.len() {
        10 => Some(format_secs((date_days(s)? + 1) * SECS_PER_DAY - 1)),
        _ => parse(s),
    }
}

/// Seconds after the Unix epoch of an RFC 3339 timestamp: `YYYY-MM-DD`, `T` (or `t`, or a
/// space), `HH:MM:SS`, optional fraction, then `Z` or an offset `±HH:MM`.
pub fn seconds_of(s: &str) -> Option<i64> {
    let s = s.trim();
    let days = date_days(s.get(..10)?)?;
    if !matches!(s.as_bytes().get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let clock = s.get(11..19)?;
    let (h, rest) = (number(clock.get(..2)?)?, clock.as_bytes());
    if rest[2] != b':' || rest[5] != b':' {
        return None;
    }
    let (min, sec) = (number(clock.get(3..5)?)?, number(clock.get(6..8)?)?);
    if h > 23 || min > 59 || sec > 59 {
        return None;
    }
    let mut zone = &s[19..];
    if let Some(fraction) = zone.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        zone = &fraction[digits..];
    }
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = (number(zone.get(1..3)?)?, number(zone.get(4..6)?)?);
            if zone.len() != 6 || zone.as_bytes()[3] != b':' || oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    Some(days * SECS_PER_DAY + h * 3600 + min * 60 + sec - offset)
}

/// Days since the Unix epoch of a `YYYY-MM-DD` date that exists.
fn date_days(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (
        number(s.get(..4)?)?,
        number(s.get(5..7)?)?,
        number(s.get(8..)?)?,
    );
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// A run of ASCII digits as a number (no sign, no spaces).
fn number(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// The proleptic Gregorian calendar in 400-year eras of 146,097 days, counted from March so
// that the leap day ends the year (Howard Hinnant's `days_from_civil` and `civil_from_days`).

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let d = day_of_year - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = year_of_era + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_seconds_with_z() {
        assert_eq!(format_secs(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_ms(1_700_000_000_999), "2023-11-14T22:13:20Z");
        assert_eq!(format_secs(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_secs(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_secs(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(now().len(), 20);
    }

    #[test]
    fn every_day_round_trips_over_four_centuries() {
        let start = days_from_civil(1900, 1, 1);
        let mut expected = (1900, 1, 1);
        for day in start..start + 146_097 {
            assert_eq!(civil_from_days(day), expected, "day {day}");
            assert_eq!(days_from_civil(expected.0, expected.1, expected.2), day);
            let (y, m, d) = expected;
            expected = if d < days_in_month(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
    }

    #[test]
    fn a_plain_date_ends_a_range_at_its_last_second() {
        assert_eq!(
            parse_end("2026-01-31").as_deref(),
            Some("2026-01-31T23:59:59Z")
        );
        assert_eq!(parse("2026-01-31").as_deref(), Some("2026-01-31T00:00:00Z"));
        assert_eq!(
            parse_end("2026-01-31T12:00:00Z").as_deref(),
            Some("2026-01-31T12:00:00Z")
        );
        assert_eq!(parse_end("2026-02-30"), None);
    }

    #[test]
    fn parse_normalises_offsets_and_dates() {
        assert_eq!(
            parse("2026-01-02T03:04:05+01:00").as_deref(),
            Some("2026-01-02T02:04:05Z")
        );
        assert_eq!(
            parse("2026-01-02T00:30:00-01:30").as_deref(),
            Some("2026-01-02T02:00:00Z")
        );
        assert_eq!(
            parse("2026-01-02T03:04:05.999Z").as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert_eq!(
            parse(" 2026-01-02t03:04:05z ").as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert_eq!(parse("2026-01-02").as_deref(), Some("2026-01-02T00:00:00Z"));
        assert_eq!(parse("2024-02-29").as_deref(), Some("2024-02-29T00:00:00Z"));
        // Offsets that carry a moment past the four-digit years stop at their edge.
        assert_eq!(
            parse_end("9999-12-31T23:59:59-01:00").as_deref(),
            Some("9999-12-31T23:59:59Z")
        );
        assert_eq!(
            parse("0000-01-01T00:00:00+01:00").as_deref(),
            Some("0000-01-01T00:00:00Z")
        );
        assert_eq!(parse("9999-12-31").as_deref(), Some("9999-12-31T00:00:00Z"));
        for bad in [
            "yesterday",
            "",
            "2026-02-29",
            "2026-13-01",
            "2026-01-32",
            "2026-1-2",
            "2026-01-02T24:00:00Z",
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:05.Z",
            "2026-01-02T03:04:05+0100",
            "2026-01-02T03:04:05+01:00x",
            "+026-01-02",
            "2026-01-02 extra",
            "2026-01-0é",
            "2026-01-02T03:0é:05Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn seconds_of_reads_our_own_format() {
        assert_eq!(seconds_of("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(seconds_of("2023-11-14"), None);
        let ago = seconds_of(&seconds_ago(3600)).unwrap();
        assert!((now_ms() / 1000 - ago - 3600).abs() <= 1);
    }
}
