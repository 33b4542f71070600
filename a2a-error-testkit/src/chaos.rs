//! `ChaosLayer`: faults and latency injected at a rate, seeded, into any tower stack.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tower::{Layer, Service};

type MakeError<E> = Arc<dyn Fn() -> E + Send + Sync>;

/// Injects chosen failures and latency into the calls of the service it wraps, each at a
/// rate, from a seeded random source (the same seed, the same faults in the same order). Off
/// unless [`enabled`](Self::enabled): a stack can keep the layer and turn it on in a test or
/// a game day. Put it where the failure should come from: over a transport (the callee
/// failing), or inside a client's stack built with `tower::ServiceBuilder`,
/// `resilience::Stack::service` or `Dependency::service`.
///
/// Polly's chaos strategies and tower-resilience's chaos layer are the models: a fault
/// replaces the call (nothing is sent), latency delays it.
pub struct ChaosLayer<E> {
    fault: Option<(f64, MakeError<E>)>,
    latency: Option<(f64, Duration)>,
    enabled: bool,
    random: Arc<Mutex<fastrand::Rng>>,
}

impl<E> Clone for ChaosLayer<E> {
    fn clone(&self) -> Self {
        ChaosLayer {
            fault: self.fault.clone(),
            latency: self.latency,
            enabled: self.enabled,
            random: self.random.clone(),
        }
    }
}

impl<E> std::fmt::Debug for ChaosLayer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChaosLayer")
            .field("fault_rate", &self.fault.as_ref().map(|(rate, _)| rate))
            .field("latency", &self.latency)
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl<E> ChaosLayer<E> {
    /// A layer drawing from a random source seeded with `seed`; it injects nothing until
    /// given a fault or latency and enabled.
    pub fn new(seed: u64) -> Self {
        ChaosLayer {
            fault: None,
            latency: None,
            enabled: false,
            random: Arc::new(Mutex::new(fastrand::Rng::with_seed(seed))),
        }
    }

    /// Fails a call at `rate` (0 to 1) with the error `make` returns, without calling the
    /// service.
    pub fn fault(mut self, rate: f64, make: impl Fn() -> E + Send + Sync + 'static) -> Self {
        self.fault = Some((rate.clamp(0.0, 1.0), Arc::new(make)));
        self
    }

    /// Delays a call by `delay` at `rate` (0 to 1) before calling the service.
    pub fn latency(mut self, rate: f64, delay: Duration) -> Self {
        self.latency = Some((rate.clamp(0.0, 1.0), delay));
        self
    }

    /// Turns the injection on or off.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// On when the environment variable `name` is `1` or `true`.
    pub fn enabled_by_env(self, name: &str) -> Self {
        let on = std::env::var(name).is_ok_and(|value| value == "1" || value == "true");
        self.enabled(on)
    }

    fn draw(&self) -> f64 {
        self.random.lock().unwrap_or_else(|e| e.into_inner()).f64()
    }
}

impl<S, E> Layer<S> for ChaosLayer<E> {
    type Service = Chaos<S, E>;

    fn layer(&self, inner: S) -> Chaos<S, E> {
        Chaos {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`ChaosLayer`] builds.
pub struct Chaos<S, E> {
    inner: S,
    layer: ChaosLayer<E>,
}

impl<S: Clone, E> Clone for Chaos<S, E> {
    fn clone(&self) -> Self {
        Chaos {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S: std::fmt::Debug, E> std::fmt::Debug for Chaos<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chaos")
            .field("inner", &self.inner)
            .field("layer", &self.layer)
            .finish()
    }
}

impl<S, R, E> Service<R> for Chaos<S, E>
where
    S: Service<R, Error = E>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    E: Send + 'static,
{
    type Response = S::Response;
    type Error = E;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, E>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let layer = &self.layer;
        if layer.enabled
            && let Some((rate, make)) = &layer.fault
            && layer.draw() < *rate
        {
            let error = make();
            return Box::pin(async move { Err(error) });
        }
        let delay = match layer.latency {
            Some((rate, delay)) if layer.enabled && layer.draw() < rate => Some(delay),
            _ => None,
        };
        let call = self.inner.call(request);
        Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            call.await
        })
    }
}
