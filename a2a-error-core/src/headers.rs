//! The HTTP headers A2A peers exchange, their names and how their values read: facts of the
//! wire that the server and the client both stand on.

use std::time::Duration;

/// The A2A protocol version header (`A2A-Version: 1.0`).
pub const VERSION_HEADER: &str = "A2A-Version";

/// Content type of A2A JSON bodies (REST replies use it; `application/json` is accepted).
pub const A2A_JSON: &str = "application/a2a+json";

/// The milliseconds left of the caller's whole-call budget. A client sends it with every
/// attempt; a server stops its handler in time (`server::JsonRpc` takes the smaller of it and
/// its own timeout), and an agent calling further agents can pass on what is left.
pub const DEADLINE_HEADER: &str = "A2A-Deadline-Ms";

/// The ErrorInfo metadata key of the limit that refused a call for a rate (a caller's token
/// budget), as an IETF `RateLimit-Policy` item (`"tokens";q=10000;w=60`): the REST binding
/// sends it as the `RateLimit-Policy` field too.
pub const RATE_LIMIT_POLICY_KEY: &str = "rateLimitPolicy";

/// Reads an `A2A-Deadline-Ms` value: whole milliseconds, nothing else.
pub fn parse_deadline_ms(value: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>().ok().map(Duration::from_millis)
}

/// A delay as whole seconds, rounded up so that a peer told to wait never comes back early,
/// and saturating: `Duration::MAX` is `u64::MAX` seconds, not an overflow.
pub fn whole_seconds_up(delay: Duration) -> u64 {
    delay
        .as_secs()
        .saturating_add(u64::from(delay.subsec_nanos() > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_values() {
        assert_eq!(
            parse_deadline_ms(b"1500"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_deadline_ms(b" 0 "), Some(Duration::ZERO));
        for bad in [
            &b""[..],
            b"-5",
            b"1.5",
            b"+3",
            b"ten",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_deadline_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn whole_seconds_round_up_and_saturate() {
        assert_eq!(whole_seconds_up(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds_up(Duration::from_secs(3)), 3);
        assert_eq!(whole_seconds_up(Duration::MAX), u64::MAX);
    }
}
