//! `ClientBuilder`: the default stack of a [`Client`], assembled from the resilience layers.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderValue;

use super::typed::Client;
use crate::call::{ClientError, DEFAULT_VERSION, ReplyLimits, Transport};
use crate::resilience::breaker::BreakerRegistry;
use crate::resilience::{BreakerSource, Bulkhead, HedgeConfig, HedgeDelay, RetryPolicy, Stack};
use crate::wire::error::{A2aError, FromErrorObject};
use crate::wire::remote::RemoteError;

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The URL does not parse.
    #[error("invalid agent URL {url:?}: {reason}")]
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
    /// error. Enable a TLS feature of `a2a-error` (`rustls`, the default; `native-tls`; or
    /// `rustls-no-provider`), or give the builder a `reqwest::Client` of your own.
    #[error(
        "{url:?} needs TLS, which this build of a2a-error does not have: enable its feature \
         `rustls` (a default feature), `native-tls` or `rustls-no-provider`, or pass a \
         reqwest::Client with TLS to ClientBuilder::http_client"
    )]
    TlsNotEnabled {
        /// The URL given.
        url: String,
    },
}

/// Whether this build's own HTTP client speaks TLS (a TLS feature is on).
const TLS_BUILT_IN: bool = cfg!(any(
    feature = "rustls",
    feature = "rustls-no-provider",
    feature = "native-tls"
));

/// Whether a client for `url` would need TLS that its HTTP client cannot have: an `https`
/// URL, no TLS built in, and no HTTP client of the caller's own (which may have it).
/// Refuses an `https` URL when this build has no TLS and no client of the caller's.
pub(crate) fn check_tls(url: &reqwest::Url, raw: &str, own_http: bool) -> Result<(), BuildError> {
    if lacks_tls(url, TLS_BUILT_IN, own_http) {
        return Err(BuildError::TlsNotEnabled {
            url: raw.to_owned(),
        });
    }
    Ok(())
}

fn lacks_tls(url: &reqwest::Url, tls_built_in: bool, own_http: bool) -> bool {
    url.scheme() == "https" && !tls_built_in && !own_http
}

/// The binding a builder makes its transport for.
#[derive(Copy, Clone, Debug)]
pub(super) enum Dial {
    JsonRpc,
    Rest,
    #[cfg(feature = "grpc")]
    Grpc,
}

impl Dial {
    /// What its calls are labelled with.
    fn system(self) -> crate::observe::System {
        match self {
            Dial::JsonRpc => crate::observe::System::JsonRpc,
            Dial::Rest => crate::observe::System::Http,
            #[cfg(feature = "grpc")]
            Dial::Grpc => crate::observe::System::Grpc,
        }
    }
}

/// Builds a [`Client`]: the stack
///
/// ```text
/// TotalTimeout (90 s) → Retry (RetryPolicy::default()) → CircuitBreaker (BreakerConfig::default())
///     → Bulkhead (256 in flight, 1,024 waiting) → AttemptTimeout (30 s) → Transport
/// ```
///
/// The order, and why: the total timeout is outermost so that it bounds everything, waits
/// included, and its deadline travels down to every layer and to the agent. Retry is above
/// the breaker, so that each attempt is one sample of the agent's health, and an open
/// circuit fails an attempt fast instead of being waited out (its error carries when it
/// half-opens). The breaker is above the attempt timeout, so that an attempt cut for being
/// slow counts as a failure. The bulkhead is below the retry layer, so that a backoff wait
/// holds no slot, and above the attempt timeout, so that a wait for a slot is not counted as
/// the agent's time. The transport sends one attempt, over a connection pool that keeps at
/// most 64 idle connections per host.
///
/// over the agent's JSON-RPC, HTTP+JSON or gRPC interface, with a connect timeout (10 s), the
/// protocol version sent (`1.0`), reply limits and a redirect policy (none followed). Every
/// part can be changed here; for layers of your own, build the stack with
/// `tower::ServiceBuilder` and [`Client::from_service`].
pub struct ClientBuilder<E = RemoteError> {
    url: String,
    dial: Dial,
    connect_timeout: Duration,
    http: Option<reqwest::Client>,
    version: HeaderValue,
    policy: RetryPolicy<ClientError<E>>,
    attempt_timeout: Option<Duration>,
    total_timeout: Option<Duration>,
    limits: ReplyLimits,
    max_redirects: usize,
    name: Option<Arc<str>>,
    breaker: BreakerSource,
    hedge: Option<HedgeDelay>,
    bulkhead: Option<Bulkhead>,
}

impl<E> std::fmt::Debug for ClientBuilder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &self.url)
            .field("connect_timeout", &self.connect_timeout)
            .field("policy", &self.policy)
            .field("attempt_timeout", &self.attempt_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("limits", &self.limits)
            .field("max_redirects", &self.max_redirects)
            .finish_non_exhaustive()
    }
}

impl<E> ClientBuilder<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    pub(super) fn new(url: String, dial: Dial) -> Self {
        ClientBuilder {
            url,
            dial,
            connect_timeout: Duration::from_secs(10),
            http: None,
            version: HeaderValue::from_static(DEFAULT_VERSION),
            policy: RetryPolicy::default(),
            attempt_timeout: Some(Duration::from_secs(30)),
            total_timeout: Some(Duration::from_secs(90)),
            limits: ReplyLimits::default(),
            max_redirects: 0,
            name: None,
            breaker: BreakerSource::Own,
            hedge: None,
            bulkhead: Some(Bulkhead::default()),
        }
    }

    /// The limit for setting up a connection (default 10 s); it fires as
    /// [`Timeout::Connect`](crate::call::Timeout::Connect). Ignored with
    /// [`http_client`](Self::http_client), whose own setting applies.
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// The limit of one attempt (default 30 s; `None`: no limit). It fires as
    /// [`Timeout::Attempt`](crate::call::Timeout::Attempt), which is retried.
    pub fn attempt_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.attempt_timeout = limit.into();
        self
    }

    /// The limit of the whole call, retries and waits included (default 90 s; `None`: no
    /// limit). A wait that would end past it is not started: the call ends with its last
    /// error at once. It fires as [`Timeout::Total`](crate::call::Timeout::Total), and what
    /// is left of it travels to the agent as `A2A-Deadline-Ms`.
    pub fn total_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.total_timeout = limit.into();
        self
    }

    /// The retry policy (default [`RetryPolicy::default`]); [`RetryPolicy::none`] turns
    /// retries off and keeps the timeouts.
    pub fn retry(mut self, policy: RetryPolicy<ClientError<E>>) -> Self {
        self.policy = policy;
        self
    }

    /// What is accepted from the agent: reply and SSE event sizes, the idle limit of streams
    /// (default [`ReplyLimits::default`]).
    pub fn limits(mut self, limits: ReplyLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How many redirects a call follows (default 0). A2A calls are POSTs to a known agent;
    /// a redirect is answered as an HTTP reply (`ClientError::Status`, not retried) unless
    /// allowed here, and a chain longer than allowed fails as `ClientError::Malformed`, not as
    /// a retryable transport error. Ignored with [`http_client`](Self::http_client), whose
    /// own redirect policy applies.
    pub fn max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// Uses `client` (its pool, TLS roots, proxies) instead of building one.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The `A2A-Version` header sent (default `1.0`).
    pub fn version(mut self, version: &'static str) -> Self {
        self.version = HeaderValue::from_static(version);
        self
    }

    /// The agent's name, in metrics, logs, breaker registries and the `downstreamAgent` of
    /// errors passed on (default: the URL's host and port).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Takes the circuit breaker from `registry`, by the client's name: clients of one agent
    /// built with one registry share a circuit. By default a client has a breaker of its own
    /// with [`BreakerConfig::default`](crate::resilience::breaker::BreakerConfig), shared by
    /// its clones.
    pub fn breakers(mut self, registry: &BreakerRegistry) -> Self {
        self.breaker = BreakerSource::Registry(registry.clone());
        self
    }

    /// Hedges slow reads (GetTask, ListTasks, …; see [`HedgeConfig`]): a second attempt after
    /// `delay`, the first success winning, hedges drawing on the retry policy's budget.
    /// Placed between the retry layer and the breaker, so each attempt is its own sample.
    /// Off by default.
    pub fn hedge(mut self, delay: HedgeDelay) -> Self {
        self.hedge = Some(delay);
        self
    }

    /// The bulkhead bounding this client's calls in flight and waiting (default: one of its
    /// own, [`Bulkhead::default`]); give the clients of one agent the same bulkhead to bound
    /// them together.
    pub fn bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// No bulkhead: calls in flight are bounded by nothing here.
    pub fn without_bulkhead(mut self) -> Self {
        self.bulkhead = None;
        self
    }

    /// No circuit breaker.
    pub fn without_breaker(mut self) -> Self {
        self.breaker = BreakerSource::Off;
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<Client<E>, BuildError> {
        let url = reqwest::Url::parse(&self.url).map_err(|error| BuildError::InvalidUrl {
            url: self.url.clone(),
            reason: error.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(BuildError::InvalidUrl {
                url: self.url,
                reason: "the scheme must be http or https".into(),
            });
        }
        if lacks_tls(&url, TLS_BUILT_IN, self.http.is_some()) {
            return Err(BuildError::TlsNotEnabled { url: self.url });
        }
        let name: Arc<str> = match self.name {
            Some(name) => name,
            None => match (url.host_str(), url.port()) {
                (Some(host), Some(port)) => format!("{host}:{port}").into(),
                (Some(host), None) => host.into(),
                _ => self.url.as_str().into(),
            },
        };
        let system = self.dial.system();
        let transport = match self.dial {
            Dial::JsonRpc => Transport::jsonrpc(
                http_client(self.http, self.connect_timeout, self.max_redirects)?,
                url,
            ),
            Dial::Rest => Transport::rest(
                http_client(self.http, self.connect_timeout, self.max_redirects)?,
                url,
            ),
            #[cfg(feature = "grpc")]
            Dial::Grpc => {
                if url.scheme() == "https" {
                    return Err(BuildError::InvalidUrl {
                        url: self.url,
                        reason: "gRPC over TLS is not built in: use an http:// URL (TLS \
                                 terminated by a proxy), or a tonic channel of your own"
                            .into(),
                    });
                }
                Transport::grpc(url.as_str(), self.connect_timeout).map_err(|error| {
                    BuildError::InvalidUrl {
                        url: self.url.clone(),
                        reason: error.to_string(),
                    }
                })?
            }
        };
        let breaker = self.breaker.breaker(&name);
        let transport = transport.version(self.version).limits(self.limits);
        let stack = Stack {
            total_timeout: self.total_timeout,
            retry: self.policy,
            hedge: self.hedge.map(HedgeConfig::new),
            breaker: breaker.clone(),
            bulkhead: self.bulkhead,
            attempt_timeout: self.attempt_timeout,
        }
        .service(transport);
        Ok(Client::from_service(stack)
            .with_name(name)
            .with_breaker(breaker)
            .with_system(system))
    }
}

/// The caller's HTTP client, or one with this builder's connect timeout and redirect policy.
fn http_client(
    own: Option<reqwest::Client>,
    connect_timeout: Duration,
    max_redirects: usize,
) -> Result<reqwest::Client, BuildError> {
    Ok(match own {
        Some(http) => http,
        None => reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            // Idle sockets are descriptors too: keep enough for a steady load, not a
            // burst's worth for the 90 s of the idle timeout.
            .pool_max_idle_per_host(64)
            .redirect(match max_redirects {
                0 => reqwest::redirect::Policy::none(),
                n => reqwest::redirect::Policy::limited(n),
            })
            .build()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_https_agent_without_tls_is_refused_at_build() {
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

    /// Run by `cargo test -p a2a-error-runtime --features client` (no TLS feature): the
    /// build itself refuses.
    #[cfg(not(any(
        feature = "rustls",
        feature = "rustls-no-provider",
        feature = "native-tls"
    )))]
    #[test]
    fn this_build_has_no_tls_and_says_so() {
        let error = crate::Client::<crate::RemoteError>::jsonrpc("https://agent.example/")
            .build()
            .unwrap_err();
        assert!(matches!(error, BuildError::TlsNotEnabled { .. }), "{error}");
    }
}
