//! Timestamps as the seed writes them: ISO 8601 UTC to the second, `YYYY-MM-DDTHH:MM:SSZ`.

use chrono::{DateTime, SecondsFormat, Utc};

pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub fn now() -> String {
    format(Utc::now())
}

/// Milliseconds since the Unix epoch (works the same natively and in the Worker).
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Parses an ISO 8601 / RFC 3339 timestamp, or a plain date (midnight UTC), into our format.
pub fn parse(s: &str) -> Option<String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s.trim()) {
        return Some(format(t.with_timezone(&Utc)));
    }
    let date = chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()?;
    Some(format(date.and_hms_opt(0, 0, 0)?.and_utc()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_seconds_with_z() {
        let t = DateTime::from_timestamp(1_700_000_000, 123_000_000).unwrap();
        assert_eq!(format(t), "2023-11-14T22:13:20Z");
        assert_eq!(now().len(), 20);
    }

    #[test]
    fn parse_normalises_offsets_and_dates() {
        assert_eq!(
            parse("2026-01-02T03:04:05+01:00").as_deref(),
            Some("2026-01-02T02:04:05Z")
        );
        assert_eq!(
            parse("2026-01-02T03:04:05.999Z").as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert_eq!(parse("2026-01-02").as_deref(), Some("2026-01-02T00:00:00Z"));
        assert_eq!(parse("yesterday"), None);
    }
}
