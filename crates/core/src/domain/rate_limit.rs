//! Per-chatbot message rate limits: a sliding-window log of admitted messages. One Durable
//! Object per chatbot holds the log, and a Durable Object handles one request at a time, so
//! the count is exact under concurrency.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    pub count: u32,
    pub window_secs: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Admitted { remaining: u32 },
    Limited { retry_after_secs: u64 },
}

/// Drops entries older than the window, then admits `now_ms` if fewer than `limit.count`
/// remain. `log` is kept sorted, oldest first. A limit changed since the last call applies at
/// once, because only the current window and count are consulted.
pub fn admit(log: &mut Vec<i64>, now_ms: i64, limit: Limit) -> Decision {
    let window_ms = i64::from(limit.window_secs) * 1000;
    let cutoff = now_ms - window_ms;
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
    let frees_at = oldest_blocking + window_ms;
    let wait_ms = (frees_at - now_ms).max(1);
    Decision::Limited {
        retry_after_secs: ((wait_ms + 999) / 1000) as u64,
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Limit = Limit {
        count: 3,
        window_secs: 10,
    };

    #[test]
    fn admits_up_to_the_count_within_the_window() {
        let mut log = Vec::new();
        assert_eq!(
            admit(&mut log, 0, LIMIT),
            Decision::Admitted { remaining: 2 }
        );
        assert_eq!(
            admit(&mut log, 1_000, LIMIT),
            Decision::Admitted { remaining: 1 }
        );
        assert_eq!(
            admit(&mut log, 2_000, LIMIT),
            Decision::Admitted { remaining: 0 }
        );
        assert_eq!(
            admit(&mut log, 2_500, LIMIT),
            Decision::Limited {
                retry_after_secs: 8
            }
        );
        assert_eq!(log.len(), 3, "a refused message is not counted");
    }

    #[test]
    fn entries_age_out_of_the_window() {
        let mut log = vec![0, 1_000, 2_000];
        assert_eq!(
            admit(&mut log, 10_001, LIMIT),
            Decision::Admitted { remaining: 0 }
        );
        assert_eq!(log, vec![1_000, 2_000, 10_001]);
    }

    #[test]
    fn a_lowered_limit_applies_at_once() {
        let mut log = vec![0, 1_000, 2_000];
        let lower = Limit {
            count: 1,
            window_secs: 10,
        };
        // Two of the three must age out before one more fits: the newest frees at 12 s.
        assert_eq!(
            admit(&mut log, 3_000, lower),
            Decision::Limited {
                retry_after_secs: 9
            }
        );
        let higher = Limit {
            count: 5,
            window_secs: 10,
        };
        assert_eq!(
            admit(&mut log, 3_000, higher),
            Decision::Admitted { remaining: 1 }
        );
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let mut log = vec![0];
        let one = Limit {
            count: 1,
            window_secs: 1,
        };
        assert_eq!(
            admit(&mut log, 999, one),
            Decision::Limited {
                retry_after_secs: 1
            }
        );
    }
}
