//! `ClientBuilder`: the stack of a [`Client`] over one binding of an agent, and the
//! constructors that start one.

use std::sync::Arc;

use reqwest::header::HeaderValue;

use super::typed::Client;
use crate::client::error::ClientError;
use crate::client::http::{DEFAULT_VERSION, ReplyLimits};
use crate::client::transport::Transport;
use crate::http::{BuildError, HttpSettings, parse_url};
use crate::resilience::{CalleeSettings, HedgeConfig, HedgeDelay, OverHttp, StackBuilder};
use crate::wire::error::{A2aError, FromErrorObject};
use crate::wire::remote::RemoteError;

/// The binding a builder makes its transport for.
#[derive(Copy, Clone, Debug)]
enum Dial {
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
/// protocol version sent (`1.0`), reply limits and a redirect policy (none followed). The
/// layers' setters are [`StackBuilder`]'s, the same for every kind of callee; this page's
/// are the agent's own. For layers of your own, build the stack with `tower::ServiceBuilder`
/// and [`Client::from_service`].
pub type ClientBuilder<E = RemoteError> = StackBuilder<AgentSettings<E>>;

/// What a [`ClientBuilder`] adds to the stack: the agent's URL and binding, and how its
/// transport reads replies.
pub struct AgentSettings<E> {
    url: String,
    dial: Dial,
    http: HttpSettings,
    version: HeaderValue,
    limits: ReplyLimits,
    name: Option<Arc<str>>,
    error: std::marker::PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for AgentSettings<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSettings")
            .field("url", &self.url)
            .field("dial", &self.dial)
            .field("http", &self.http)
            .field("limits", &self.limits)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<E> CalleeSettings for AgentSettings<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    type Error = ClientError<E>;

    /// An agent's reads (GetTask, ListTasks, …; see [`HedgeConfig`]).
    fn hedge(&self, delay: HedgeDelay) -> HedgeConfig {
        HedgeConfig::new(delay)
    }

    fn http(&mut self) -> Option<&mut HttpSettings> {
        Some(&mut self.http)
    }
}

impl<E> OverHttp for AgentSettings<E> where E: A2aError + FromErrorObject + Send + 'static {}

impl<E> Client<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    /// A builder for an agent's JSON-RPC interface at `url`.
    pub fn jsonrpc(url: impl Into<String>) -> ClientBuilder<E> {
        builder(url.into(), Dial::JsonRpc)
    }

    /// A builder for an agent's HTTP+JSON interface at base URL `url`.
    pub fn rest(url: impl Into<String>) -> ClientBuilder<E> {
        builder(url.into(), Dial::Rest)
    }

    /// A builder for an agent's gRPC service (`lf.a2a.v1.A2AService`) at `url`
    /// (`http://host:port`, or `host:port` as gRPC targets and agent cards often spell it):
    /// the same stack and the same errors as over HTTP, the status's
    /// ErrorInfo, RetryInfo and BadRequest read as the other bindings' details.
    /// [`http_client`](StackBuilder::http_client) and
    /// [`max_redirects`](StackBuilder::max_redirects) do not apply.
    #[cfg(feature = "grpc")]
    pub fn grpc(url: impl Into<String>) -> ClientBuilder<E> {
        let url = url.into();
        let url = if url.contains("://") {
            url
        } else {
            format!("http://{url}")
        };
        builder(url, Dial::Grpc)
    }
}

fn builder<E>(url: String, dial: Dial) -> ClientBuilder<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    let agent = AgentSettings {
        url,
        dial,
        http: HttpSettings::default(),
        version: HeaderValue::from_static(DEFAULT_VERSION),
        limits: ReplyLimits::default(),
        name: None,
        error: std::marker::PhantomData,
    };
    // An agent's methods say themselves whether they may be repeated (the method table).
    StackBuilder::new(agent, false)
}

impl<E> ClientBuilder<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    /// What is accepted from the agent: reply and SSE event sizes, the idle limit of streams
    /// (default [`ReplyLimits::default`]).
    pub fn limits(mut self, limits: ReplyLimits) -> Self {
        self.callee.limits = limits;
        self
    }

    /// How many redirects a call follows (default 0). A2A calls are POSTs to a known agent;
    /// a redirect is answered as an HTTP reply (`ClientError::Status`, not retried) unless
    /// allowed here, and a chain longer than allowed fails as `ClientError::Malformed`, not as
    /// a retryable transport error. Ignored with [`http_client`](StackBuilder::http_client),
    /// whose own redirect policy applies.
    pub fn max_redirects(mut self, redirects: usize) -> Self {
        self.callee.http.max_redirects = redirects;
        self
    }

    /// The `A2A-Version` header sent (default `1.0`).
    pub fn version(mut self, version: &'static str) -> Self {
        self.callee.version = HeaderValue::from_static(version);
        self
    }

    /// The agent's name, in metrics, logs, breaker registries and the `downstreamAgent` of
    /// errors passed on (default: the URL's host and port).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.callee.name = Some(name.into());
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<Client<E>, BuildError> {
        let url = parse_url(&self.callee.url)?;
        self.callee.http.check_tls(&url)?;
        let name: Arc<str> = match &self.callee.name {
            Some(name) => name.clone(),
            None => match (url.host_str(), url.port()) {
                (Some(host), Some(port)) => format!("{host}:{port}").into(),
                (Some(host), None) => host.into(),
                _ => self.callee.url.as_str().into(),
            },
        };
        let (stack, breaker, agent) = self.finish(&name);
        let system = agent.dial.system();
        let transport = match agent.dial {
            Dial::JsonRpc => Transport::jsonrpc(agent.http.client()?, url),
            Dial::Rest => Transport::rest(agent.http.client()?, url),
            #[cfg(feature = "grpc")]
            Dial::Grpc => {
                if url.scheme() == "https" {
                    return Err(BuildError::InvalidUrl {
                        url: agent.url,
                        reason: "gRPC over TLS is not built in: use an http:// URL (TLS \
                                 terminated by a proxy), or a tonic channel of your own"
                            .into(),
                    });
                }
                Transport::grpc(url.as_str(), agent.http.connect_timeout).map_err(|error| {
                    BuildError::InvalidUrl {
                        url: agent.url.clone(),
                        reason: error.to_string(),
                    }
                })?
            }
        };
        let transport = transport.version(agent.version).limits(agent.limits);
        Ok(Client::from_service(stack.service(transport))
            .with_name(name)
            .with_breaker(breaker)
            .with_system(system))
    }
}

#[cfg(test)]
mod tests {
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
        assert!(
            matches!(error, crate::BuildError::TlsNotEnabled { .. }),
            "{error}"
        );
    }
}
