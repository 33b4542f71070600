//! Where a push notification may go: never inside our own network. A receiver's URL is
//! checked when its config is set (its scheme, its host, and where that host resolves to
//! then), and every address is checked again when connecting (a resolver that drops the
//! addresses inside), so that DNS rebinding cannot aim a notification inside later; no
//! redirect is followed and no proxy is used.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// How long resolving a receiver's host may take when its config is set.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest receiver URL taken.
pub const MAX_URL_BYTES: usize = 2048;

/// The longest token or credential taken.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// Why a receiver is refused, in words a caller may read (no resolved address, no detail of
/// ours).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Not an absolute `http` or `https` URL, or longer than [`MAX_URL_BYTES`].
    #[error("the push notification URL must be an absolute http or https URL")]
    Url,
    /// A host inside the network: loopback, private, link-local, unique-local, metadata.
    #[error(
        "the push notification URL must not point at a loopback, private, link-local or metadata address"
    )]
    Inside,
    /// A token or credential with CR or LF in it (or too long): it would not be one header.
    #[error("a push notification token or credential must not contain CR or LF")]
    Header,
}

/// Whether `ip` is inside the network: loopback, private (RFC 1918, RFC 6598's shared
/// space), link-local (the cloud metadata address among them), unique-local, unspecified,
/// broadcast, multicast, or an IPv4 one of those mapped into IPv6.
pub fn is_inside(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                // 100.64.0.0/10, carrier-grade NAT: inside someone's network.
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_inside(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Names that are inside whatever they resolve to.
const INSIDE_NAMES: [&str; 5] = [
    "localhost",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.com",
    "instance-data",
];

/// Checks `url` as a receiver: an absolute http(s) URL whose host is not inside (unless
/// `allow_inside`). The host is resolved (within 2 s) and refused when any of its addresses
/// is inside; a host that does not resolve now is taken (the connect-time check still
/// applies).
pub async fn check_url(url: &str, allow_inside: bool) -> Result<reqwest::Url, Refused> {
    let parsed = parse(url)?;
    if allow_inside {
        return Ok(parsed);
    }
    if let Some(ip) = literal(&parsed) {
        return inside_ip(ip).map(|()| parsed);
    }
    let host = parsed.host_str().ok_or(Refused::Url)?;
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if INSIDE_NAMES.contains(&host.as_str()) || host.ends_with(".localhost") {
        return Err(Refused::Inside);
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    let resolved = tokio::time::timeout(
        RESOLVE_TIMEOUT,
        tokio::net::lookup_host((host.as_str(), port)),
    )
    .await;
    if let Ok(Ok(addresses)) = resolved {
        for address in addresses {
            inside_ip(address.ip())?;
        }
    }
    Ok(parsed)
}

/// `url` parsed, when it is an absolute http(s) URL with a host and no credentials.
pub(crate) fn parse(url: &str) -> Result<reqwest::Url, Refused> {
    if url.len() > MAX_URL_BYTES {
        return Err(Refused::Url);
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| Refused::Url)?;
    let fits = matches!(parsed.scheme(), "http" | "https")
        && parsed.host().is_some()
        && parsed.username().is_empty()
        && parsed.password().is_none();
    if fits { Ok(parsed) } else { Err(Refused::Url) }
}

/// The URL's host when it is an IP literal (the URL parser writes each in its one form,
/// IPv6 in brackets, `0x7f000001` as `127.0.0.1`).
pub(crate) fn literal(url: &reqwest::Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.parse().ok()
}

fn inside_ip(ip: IpAddr) -> Result<(), Refused> {
    if is_inside(ip) {
        Err(Refused::Inside)
    } else {
        Ok(())
    }
}

/// Checks a token or credential for a header: no CR, LF or NUL, at most [`MAX_TOKEN_BYTES`].
pub fn check_header(value: &str) -> Result<(), Refused> {
    let bad =
        value.len() > MAX_TOKEN_BYTES || value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0));
    if bad { Err(Refused::Header) } else { Ok(()) }
}

/// The resolver of the sender's client: the system's, with every address inside dropped,
/// so that a host that resolved outside when its config was set and inside now (DNS
/// rebinding) is not reached. reqwest connects to exactly the addresses returned here.
#[derive(Clone, Copy, Debug)]
pub(super) struct Screening;

impl Screening {
    pub(super) fn arc() -> Arc<Self> {
        Arc::new(Screening)
    }
}

impl Resolve for Screening {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved =
                tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host.as_str(), 0)))
                    .await
                    .map_err(|_| {
                        Box::<dyn std::error::Error + Send + Sync>::from("resolving timed out")
                    })??;
            let outside: Vec<SocketAddr> = resolved.filter(|addr| !is_inside(addr.ip())).collect();
            if outside.is_empty() {
                return Err(Box::<dyn std::error::Error + Send + Sync>::from(
                    "the receiver's host resolves inside the network",
                ));
            }
            Ok(Box::new(outside.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_inside_are_told_apart() {
        for inside in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_inside(inside.parse().unwrap()), "{inside}");
        }
        for outside in ["8.8.8.8", "93.184.216.34", "2606:4700::1111", "100.128.0.1"] {
            assert!(!is_inside(outside.parse().unwrap()), "{outside}");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_without_the_network_for_literals_and_names() {
        for url in [
            "http://127.0.0.1:9/hook",
            "http://localhost/hook",
            "http://LOCALHOST./hook",
            "http://a.localhost/hook",
            "http://169.254.169.254/latest",
            "http://[::1]/",
            "http://[fd12::1]/",
            "http://[::ffff:192.168.0.1]/",
            "http://0x7f000001/",
            "http://2130706433/",
        ] {
            assert_eq!(
                check_url(url, false).await.err(),
                Some(Refused::Inside),
                "{url}"
            );
        }
        for url in [
            "ftp://example.com/",
            "/relative",
            "http://user:pw@example.com/",
            "file:///etc",
        ] {
            assert_eq!(
                check_url(url, false).await.err(),
                Some(Refused::Url),
                "{url}"
            );
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(check_url(&long, false).await.err(), Some(Refused::Url));
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check_url("https://93.184.216.34/hook", false).await.is_ok());
    }

    #[test]
    fn headers_with_line_breaks_are_refused() {
        assert_eq!(check_header("a\r\nX-Evil: 1"), Err(Refused::Header));
        assert_eq!(check_header("a\n"), Err(Refused::Header));
        assert_eq!(
            check_header(&"a".repeat(MAX_TOKEN_BYTES + 1)),
            Err(Refused::Header)
        );
        assert_eq!(check_header("secret-token"), Ok(()));
    }
}
