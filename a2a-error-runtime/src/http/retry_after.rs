//! The `Retry-After` field of a reply, as every kind of callee reads it.

use std::time::{Duration, SystemTime};

/// Reads a `Retry-After` value as a delay from `now`: delta-seconds or an HTTP-date
/// (RFC 9110 §10.2.3). A date in the past is a zero delay; anything else is no delay.
pub(crate) fn parse_retry_after(value: &[u8], now: SystemTime) -> Option<Duration> {
    let value = std::str::from_utf8(value).ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let at = |v: &str| parse_retry_after(v.as_bytes(), now);
        assert_eq!(at("7"), Some(Duration::from_secs(7)));
        assert_eq!(at(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(
            at("Sun, 06 Nov 1994 08:50:07 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(at("Sun, 06 Nov 1994 08:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(at("soon"), None);
        assert_eq!(at("-1"), None);
    }
}
