//! What building any client checks (its URL, TLS) and the HTTP client it builds.

use std::time::Duration;

/// Why a client (of an agent or of a dependency) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The URL does not parse.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The HTTP client could not be set up (TLS).
    #[error("cannot set up the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    /// An `https` URL, but this build has no TLS: every call would fail as a connection
    /// error. Enable a TLS feature of `a2a-error` (`rustls`; `native-tls`; or
    /// `rustls-no-provider`: none is a default feature), or give the builder a
    /// `reqwest::Client` of your own.
    #[error(
        "{url:?} needs TLS, which this build of a2a-error does not have: add the feature \
         `rustls` to a2a-error in Cargo.toml (or `native-tls`, or `rustls-no-provider`), or \
         pass a reqwest::Client with TLS to the builder's http_client"
    )]
    TlsNotEnabled {
        /// The URL given.
        url: String,
    },
    /// A signing secret written as Standard Webhooks writes one (`whsec_` and the key in
    /// base64) whose part after `whsec_` is not base64 (or is empty).
    #[error(
        "the signing secret starts with `whsec_` but the rest is not base64: give the secret \
         as Standard Webhooks writes it (`whsec_` and the key's bytes in base64)"
    )]
    InvalidSecret,
}

/// Whether this build's own HTTP client speaks TLS (a TLS feature is on).
const TLS_BUILT_IN: bool = cfg!(any(
    feature = "rustls",
    feature = "rustls-no-provider",
    feature = "native-tls"
));

/// `raw` as an `http` or `https` URL.
pub(crate) fn parse_url(raw: &str) -> Result<reqwest::Url, BuildError> {
    let url = reqwest::Url::parse(raw).map_err(|error| BuildError::InvalidUrl {
        url: raw.to_owned(),
        reason: error.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BuildError::InvalidUrl {
            url: raw.to_owned(),
            reason: "the scheme must be http or https".into(),
        });
    }
    Ok(url)
}

/// The HTTP settings of a builder whose callee is reached over HTTP: the connect timeout,
/// the redirects followed, or the caller's own client. Set through the builder
/// (`StackBuilder::connect_timeout`,
/// `StackBuilder::http_client`).
#[derive(Clone, Debug)]
#[doc(hidden)]
pub struct HttpSettings {
    pub(crate) connect_timeout: Duration,
    pub(crate) max_redirects: usize,
    pub(crate) own: Option<reqwest::Client>,
}

impl Default for HttpSettings {
    /// A connect timeout of 10 s, no redirects followed, a client of its own.
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            max_redirects: 0,
            own: None,
        }
    }
}

impl HttpSettings {
    /// Refuses `url` when it needs TLS that the client cannot have: an `https` URL, no TLS
    /// built in, and no client of the caller's own (which may have it).
    pub(crate) fn check_tls(&self, url: &reqwest::Url) -> Result<(), BuildError> {
        if lacks_tls(url, TLS_BUILT_IN, self.own.is_some()) {
            return Err(BuildError::TlsNotEnabled {
                url: url.as_str().to_owned(),
            });
        }
        Ok(())
    }

    /// The caller's HTTP client, or one with these settings.
    pub(crate) fn client(self) -> Result<reqwest::Client, BuildError> {
        Ok(match self.own {
            Some(http) => http,
            None => reqwest::Client::builder()
                .connect_timeout(self.connect_timeout)
                // Idle sockets are descriptors too: keep enough for a steady load, not a
                // burst's worth for the 90 s of the idle timeout.
                .pool_max_idle_per_host(64)
                .redirect(match self.max_redirects {
                    0 => reqwest::redirect::Policy::none(),
                    n => reqwest::redirect::Policy::limited(n),
                })
                .build()?,
        })
    }
}

fn lacks_tls(url: &reqwest::Url, tls_built_in: bool, own_http: bool) -> bool {
    url.scheme() == "https" && !tls_built_in && !own_http
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_https_url_without_tls_is_refused_at_build() {
        let https = reqwest::Url::parse("https://agent.example/").unwrap();
        let http = reqwest::Url::parse("http://agent.example/").unwrap();
        assert!(lacks_tls(&https, false, false));
        // TLS built in, plain HTTP, or the caller's own client (which may have TLS): fine.
        assert!(!lacks_tls(&https, true, false));
        assert!(!lacks_tls(&http, false, false));
        assert!(!lacks_tls(&https, false, true));
        let text = BuildError::TlsNotEnabled {
            url: https.to_string(),
        }
        .to_string();
        assert!(
            text.contains("rustls") && text.contains("native-tls"),
            "{text}"
        );
    }

    #[test]
    fn only_http_and_https_urls_are_taken() {
        assert!(parse_url("http://127.0.0.1:1/").is_ok());
        assert!(matches!(
            parse_url("ftp://host/"),
            Err(BuildError::InvalidUrl { .. })
        ));
        assert!(matches!(
            parse_url("not a url"),
            Err(BuildError::InvalidUrl { .. })
        ));
    }
}
