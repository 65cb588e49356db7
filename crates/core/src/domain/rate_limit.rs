//! Rate limits. A chatbot's messages (and each site visitor's share of them, and visitor
//! tokens minted per client address) are counted in a sliding-window log of admitted
//! messages; an API key's requests in a fixed window. One Durable Object per counted thing
//! holds its log or window, and a Durable Object handles one request at a time, so every count
//! is exact under concurrency.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::as_whole_number;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    pub count: u32,
    pub window_secs: u32,
}

/// How many messages one site visitor may send in a minute while a person answers (live chat):
/// the chatbot's own `rate_limit` guards its model's cost and does not apply there, but a
/// visitor still cannot flood the operator's session.
pub const LIVE_CHAT_VISITOR_LIMIT: Limit = Limit {
    count: 30,
    window_secs: 60,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Admitted { remaining: u32 },
    Limited { retry_after_secs: u64 },
}

/// A `[count, seconds]` setting from a request body (a chatbot's `rate_limit`, an API key's),
/// both whole numbers within their ranges; `unit` names what is counted in the error.
pub fn parse_pair(
    field: &str,
    unit: &str,
    value: &serde_json::Value,
    count_range: (i64, i64),
    window_range: (i64, i64),
) -> ApiResult<(i64, i64)> {
    let invalid = || {
        ApiError::invalid(
            field,
            format!(
                "`{field}` must be [{unit}, seconds] with {unit} from {} to {} and seconds from {} to {}.",
                count_range.0, count_range.1, window_range.0, window_range.1
            ),
        )
    };
    let items = value.as_array().ok_or_else(invalid)?;
    let [count, window] = items.as_slice() else {
        return Err(invalid());
    };
    let count = as_whole_number(count).ok_or_else(invalid)?;
    let window = as_whole_number(window).ok_or_else(invalid)?;
    let in_range = |v: i64, (lo, hi): (i64, i64)| (lo..=hi).contains(&v);
    if !in_range(count, count_range) || !in_range(window, window_range) {
        return Err(invalid());
    }
    Ok((count, window))
}

/// A fixed window of requests: how many were counted since `started_ms`. Cheaper than the
/// message log for large counts (one pair, whatever the count), and it gives a client the
/// `X-RateLimit-*` numbers directly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub started_ms: i64,
    pub count: u32,
}

/// What a fixed-window check answers: the numbers a client sees in `X-RateLimit-*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowDecision {
    pub admitted: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the window starts over (at least 1).
    pub reset_secs: u64,
}

/// Counts one request in `window` if fewer than `limit.count` were counted in the window that
/// holds `now_ms`; an empty window, one older than `limit.window_secs` (or one stamped in the future, from a
/// clock that ran ahead) starts over at `now_ms`. Total over every input.
pub fn admit_in_window(window: &mut Window, now_ms: i64, limit: Limit) -> WindowDecision {
    let window_ms = i64::from(limit.window_secs.max(1)) * 1000;
    if window.count == 0
        || window.started_ms > now_ms
        || now_ms.saturating_sub(window.started_ms) >= window_ms
    {
        *window = Window {
            started_ms: now_ms,
            count: 0,
        };
    }
    let admitted = window.count < limit.count;
    if admitted {
        window.count += 1;
    }
    let ends_ms = window.started_ms.saturating_add(window_ms);
    let reset_ms = ends_ms.saturating_sub(now_ms).max(1) as u64;
    WindowDecision {
        admitted,
        limit: limit.count,
        remaining: limit.count.saturating_sub(window.count),
        reset_secs: reset_ms.div_ceil(1000),
    }
}

/// Reads the limit the rate-limit object was sent. Anything that is not one (not JSON, not an
/// object, a count or window missing, negative, fractional, a string, or beyond `u32`) is
/// refused with a sentence, which the object answers as a 400 rather than throwing.
pub fn parse_limit(body: &[u8]) -> Result<Limit, String> {
    let refuse = |why: String| {
        format!(
            "The body is not a rate limit ({{\"count\": <0 to {max}>, \"window_secs\": <0 to {max}>}}): {why}.",
            max = u32::MAX
        )
    };
    // Only an object: serde would also take the two numbers as an array.
    match serde_json::from_slice(body).map_err(|err| refuse(err.to_string()))? {
        value @ serde_json::Value::Object(_) => {
            serde_json::from_value(value).map_err(|err| refuse(err.to_string()))
        }
        _ => Err(refuse("not a JSON object".to_string())),
    }
}

/// Drops entries older than the window, then admits `now_ms` if fewer than `limit.count`
/// remain. `log` is kept sorted, oldest first. A limit changed since the last call applies at
/// once, because only the current window and count are consulted.
///
/// Total over every input: any count and window (0 and `u32::MAX` included), any clock value
/// and any log, sorted or not. An entry stamped later than `now_ms` (a clock that ran ahead, or
/// a log nobody should have written) counts as admitted now, so it ages out within one window
/// instead of blocking the chatbot until that time comes.
pub fn admit(log: &mut Vec<i64>, now_ms: i64, limit: Limit) -> Decision {
    let window_ms = i64::from(limit.window_secs) * 1000;
    for t in log.iter_mut() {
        *t = (*t).min(now_ms);
    }
    log.sort_unstable();
    let cutoff = now_ms.saturating_sub(window_ms);
    log.retain(|&t| t > cutoff);
    let count = limit.count as usize;
    if log.len() < count {
        log.push(now_ms);
        return Decision::Admitted {
            remaining: (count - log.len()) as u32,
        };
    }
    // The request could pass once enough of the oldest entries have aged out. A count of 0
    // (never sent by the Worker, but the object takes any JSON) admits nothing and waits out
    // a whole window; `get` keeps a corrupt log from indexing out of range.
    let oldest_blocking = log
        .len()
        .checked_sub(count.max(1))
        .and_then(|i| log.get(i).copied())
        .unwrap_or(now_ms);
    let frees_at = oldest_blocking.saturating_add(window_ms);
    // At least 1 ms, so the division below rounds up to at least one second.
    let wait_ms = frees_at.saturating_sub(now_ms).max(1) as u64;
    Decision::Limited {
        retry_after_secs: wait_ms.div_ceil(1000),
    }
}

/// Takes back one admission from `log`: a message another limit refused after this one
/// admitted it (the two are asked at once) was never sent, and must not use up the window.
/// The newest entry goes, the one that would have aged out last; an empty log stays empty.
pub fn release(log: &mut Vec<i64>) {
    log.sort_unstable();
    log.pop();
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Limit = Limit {
        count: 3,
        window_secs: 10,
    };

    fn limit(count: u32, window_secs: u32) -> Limit {
        Limit { count, window_secs }
    }

    fn admitted(remaining: u32) -> Decision {
        Decision::Admitted { remaining }
    }

    fn limited(retry_after_secs: u64) -> Decision {
        Decision::Limited { retry_after_secs }
    }

    #[test]
    fn admits_up_to_the_count_within_the_window() {
        let mut log = Vec::new();
        assert_eq!(admit(&mut log, 0, LIMIT), admitted(2));
        assert_eq!(admit(&mut log, 1_000, LIMIT), admitted(1));
        assert_eq!(admit(&mut log, 2_000, LIMIT), admitted(0));
        assert_eq!(admit(&mut log, 2_500, LIMIT), limited(8));
        assert_eq!(log.len(), 3, "a refused message is not counted");
    }

    #[test]
    fn entries_age_out_of_the_window() {
        let mut log = vec![0, 1_000, 2_000];
        assert_eq!(admit(&mut log, 10_001, LIMIT), admitted(0));
        assert_eq!(log, vec![1_000, 2_000, 10_001]);
    }

    #[test]
    fn a_lowered_limit_applies_at_once() {
        let mut log = vec![0, 1_000, 2_000];
        let lower = limit(1, 10);
        // Two of the three must age out before one more fits: the newest frees at 12 s.
        assert_eq!(admit(&mut log, 3_000, lower), limited(9));
        let higher = limit(5, 10);
        assert_eq!(admit(&mut log, 3_000, higher), admitted(1));
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let mut log = vec![0];
        let one = limit(1, 1);
        assert_eq!(admit(&mut log, 999, one), limited(1));
    }

    /// Every decision is consistent with the log it leaves behind.
    fn check(log: &[i64], now_ms: i64, limit: Limit, decision: Decision) {
        assert!(
            log.windows(2).all(|w| w[0] <= w[1]),
            "log not sorted: {log:?}"
        );
        assert!(
            log.iter().all(|&t| t <= now_ms),
            "an entry is in the future: {log:?}"
        );
        match decision {
            Decision::Admitted { remaining } => {
                assert!(log.len() <= limit.count as usize);
                assert_eq!(remaining as usize, limit.count as usize - log.len());
                assert_eq!(log.last(), Some(&now_ms));
            }
            Decision::Limited { retry_after_secs } => {
                assert!(retry_after_secs >= 1);
                assert!(retry_after_secs <= u64::from(limit.window_secs).max(1));
            }
        }
    }

    #[test]
    fn a_count_of_zero_admits_nothing_and_waits_a_window() {
        let zero = limit(0, 10);
        let mut log = Vec::new();
        assert_eq!(admit(&mut log, 5_000, zero), limited(10));
        assert!(log.is_empty(), "a refused message is not counted");
        // With entries in the log the newest one decides, and nothing is indexed out of range.
        let mut log = vec![1_000, 4_000];
        let decision = admit(&mut log, 5_000, zero);
        assert_eq!(decision, limited(9));
        check(&log, 5_000, zero, decision);
    }

    #[test]
    fn huge_counts_admit_and_count_down_from_the_count() {
        let huge = limit(u32::MAX, u32::MAX);
        let mut log = Vec::new();
        assert_eq!(admit(&mut log, 0, huge), admitted(u32::MAX - 1));
        assert_eq!(admit(&mut log, 1, huge), admitted(u32::MAX - 2));
        // The longest window keeps entries for about 136 years without overflowing.
        let decision = admit(&mut log, 100 * 365 * 86_400_000, huge);
        assert_eq!(decision, admitted(u32::MAX - 3));
        assert_eq!(log.len(), 3);
    }

    #[test]
    fn a_window_of_zero_forgets_at_once() {
        let instant = limit(1, 0);
        let mut log = Vec::new();
        for now in [0, 0, 1, 1, 2] {
            assert_eq!(admit(&mut log, now, instant), admitted(0));
            assert_eq!(log, vec![now]);
        }
        let never = limit(0, 0);
        assert_eq!(admit(&mut log, 3, never), limited(1));
    }

    #[test]
    fn entries_from_the_future_count_as_now() {
        // A clock that ran an hour ahead left these; they must not block for an hour.
        let hour = 3_600_000;
        let mut log = vec![10_000 + hour, 10_000 + 2 * hour];
        assert_eq!(admit(&mut log, 10_000, LIMIT), admitted(0));
        assert_eq!(log, vec![10_000, 10_000, 10_000]);
        assert_eq!(admit(&mut log, 12_000, LIMIT), limited(8));
        assert_eq!(admit(&mut log, 20_001, LIMIT), admitted(2));
        // Even the end of time ages out within one window.
        let mut log = vec![i64::MAX, i64::MAX, i64::MAX];
        assert_eq!(admit(&mut log, 0, LIMIT), limited(10));
        assert_eq!(admit(&mut log, 10_000, LIMIT), admitted(2));
    }

    #[test]
    fn an_unsorted_log_is_sorted_first() {
        let mut log = vec![2_000, 0, 1_000];
        let lower = limit(1, 10);
        // As in `a_lowered_limit_applies_at_once`: the newest entry frees at 12 s.
        assert_eq!(admit(&mut log, 3_000, lower), limited(9));
        assert_eq!(log, vec![0, 1_000, 2_000]);
    }

    #[test]
    fn no_input_makes_it_panic_or_overflow() {
        let counts = [0, 1, 2, 3, 100, u32::MAX];
        let windows = [0, 1, 360, u32::MAX];
        let clocks = [i64::MIN, -1, 0, 1, 1_700_000_000_000, i64::MAX];
        let logs: [&[i64]; 6] = [
            &[],
            &[0],
            &[i64::MIN, 0, i64::MAX],
            &[i64::MAX; 4],
            &[i64::MIN; 4],
            &[5, 3, 9, 1, 7, 1_700_000_000_000],
        ];
        for count in counts {
            for window_secs in windows {
                let limit = Limit { count, window_secs };
                for now in clocks {
                    for start in logs {
                        let mut log = start.to_vec();
                        let decision = admit(&mut log, now, limit);
                        check(&log, now, limit, decision);
                    }
                }
            }
        }
    }

    #[test]
    fn a_released_admission_frees_its_place() {
        let l = limit(2, 60);
        let mut log = Vec::new();
        assert_eq!(admit(&mut log, 1_000, l), admitted(1));
        assert_eq!(admit(&mut log, 2_000, l), admitted(0));
        assert_eq!(admit(&mut log, 3_000, l), limited(58));
        release(&mut log);
        assert_eq!(log, [1_000]);
        assert_eq!(admit(&mut log, 4_000, l), admitted(0));
        let mut empty = Vec::new();
        release(&mut empty);
        assert!(empty.is_empty());
        let mut unsorted = vec![5, 9, 1];
        release(&mut unsorted);
        assert_eq!(unsorted, [1, 5]);
    }

    #[test]
    fn a_fixed_window_counts_up_to_its_limit_then_starts_over() {
        let mut window = Window::default();
        let two = limit(2, 10);
        let first = admit_in_window(&mut window, 1_000, two);
        assert_eq!(
            first,
            WindowDecision {
                admitted: true,
                limit: 2,
                remaining: 1,
                reset_secs: 10
            }
        );
        assert!(admit_in_window(&mut window, 2_000, two).admitted);
        let refused = admit_in_window(&mut window, 3_500, two);
        assert_eq!(
            refused,
            WindowDecision {
                admitted: false,
                limit: 2,
                remaining: 0,
                reset_secs: 8
            }
        );
        assert_eq!(window.count, 2, "a refused request is not counted");
        let next = admit_in_window(&mut window, 11_000, two);
        assert_eq!(
            next,
            WindowDecision {
                admitted: true,
                limit: 2,
                remaining: 1,
                reset_secs: 10
            }
        );
        // A window stamped in the future starts over now.
        let mut ahead = Window {
            started_ms: 1_000_000,
            count: 2,
        };
        assert!(admit_in_window(&mut ahead, 5_000, two).admitted);
        assert_eq!(ahead.started_ms, 5_000);
    }

    #[test]
    fn a_fixed_window_is_total() {
        for count in [0, 1, u32::MAX] {
            for window_secs in [0, 1, u32::MAX] {
                for now in [i64::MIN, 0, i64::MAX] {
                    for started_ms in [i64::MIN, 0, i64::MAX] {
                        let mut w = Window {
                            started_ms,
                            count: count.min(5),
                        };
                        let d = admit_in_window(&mut w, now, limit(count, window_secs));
                        assert!(d.reset_secs >= 1);
                        assert!(d.remaining <= count);
                        assert!(!d.admitted || count > 0);
                    }
                }
            }
        }
    }

    #[test]
    fn pairs_parse_within_their_ranges() {
        use serde_json::json;
        let parse = |v| parse_pair("rate_limit", "requests", &v, (1, 10), (1, 60));
        assert_eq!(parse(json!([10, 60])), Ok((10, 60)));
        assert_eq!(parse(json!([1.0, 1])), Ok((1, 1)));
        for bad in [
            json!([0, 1]),
            json!([11, 1]),
            json!([1, 61]),
            json!([1]),
            json!("1,1"),
            json!([1.5, 2]),
        ] {
            let err = parse(bad).unwrap_err();
            assert_eq!(err.field(), Some("rate_limit"));
            assert!(err.public_message().contains("[requests, seconds]"));
        }
    }

    #[test]
    fn only_a_limit_parses_as_one() {
        assert_eq!(
            parse_limit(br#"{"count": 3, "window_secs": 10}"#),
            Ok(LIMIT)
        );
        assert_eq!(
            parse_limit(br#"{"window_secs": 10, "count": 3, "extra": [1]}"#),
            Ok(LIMIT)
        );
        assert_eq!(
            parse_limit(br#"{"count": 0, "window_secs": 4294967295}"#),
            Ok(limit(0, u32::MAX))
        );
        let refused: [&[u8]; 14] = [
            b"",
            b"not json",
            b"null",
            b"[3, 10]",
            b"\"3\"",
            b"{}",
            br#"{"count": 3}"#,
            br#"{"count": -1, "window_secs": 10}"#,
            br#"{"count": 1.5, "window_secs": 10}"#,
            br#"{"count": "3", "window_secs": 10}"#,
            br#"{"count": 4294967296, "window_secs": 10}"#,
            br#"{"count": 3, "window_secs": null}"#,
            br#"{"count": 3, "window_secs": 10"#,
            b"\xff\xfe{}",
        ];
        for body in refused {
            let err = parse_limit(body).expect_err(&String::from_utf8_lossy(body));
            assert!(err.starts_with("The body is not a rate limit"), "{err}");
        }
    }
}
