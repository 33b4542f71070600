//! Hedged reads: a second attempt when the first is slow, the first success wins.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{self, Either};
use tokio::time::Instant;
use tower::retry::budget::Budget;
use tower::{Layer, Service, ServiceExt};

use crate::resilience::bulkhead::BoxFuture;
use crate::resilience::classify::Classify;
use crate::resilience::request::Request;
use crate::resilience::retry::RetryBudget;
use crate::wire::method;

/// When the hedge is sent.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum HedgeDelay {
    /// After this long without an answer.
    Fixed(Duration),
    /// After the given percentile (0 < p < 1, e.g. 0.95) of the latencies of recent answered
    /// calls through this layer, within `[min, max]`; `max` until enough calls were seen.
    Percentile {
        /// The percentile.
        p: f64,
        /// The shortest delay.
        min: Duration,
        /// The longest delay, and the delay before 20 calls were seen.
        max: Duration,
    },
}

/// How many recent latencies a percentile delay is computed over.
const SAMPLES: usize = 100;
/// How many it needs before it trusts them.
const MIN_SAMPLES: usize = 20;

/// Hedging settings: when, for which methods, within which budget. Clones share the budget
/// and the latency record.
#[derive(Clone)]
pub struct HedgeConfig {
    delay: HedgeDelay,
    methods: Arc<[String]>,
    budget: Arc<dyn Budget + Send + Sync>,
    // Whether calls deposit into the budget here: only into a budget of its own, as the
    // retry layer deposits into the one it shares.
    deposits: bool,
    latencies: Arc<Mutex<VecDeque<Duration>>>,
}

impl fmt::Debug for HedgeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeConfig")
            .field("delay", &self.delay)
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}

impl HedgeConfig {
    /// Hedges the read methods after `delay`, with a budget of its own (10 % of calls plus
    /// 1 a second); give it the retry policy's budget with [`budget`](Self::budget) so that
    /// hedges and retries draw on one.
    pub fn new(delay: HedgeDelay) -> Self {
        HedgeConfig {
            delay,
            // The A2A methods that only read.
            methods: method::names(|m| m.read).map(str::to_owned).collect(),
            budget: Arc::new(RetryBudget::new(Duration::from_secs(10), 1, 0.1)),
            deposits: true,
            latencies: Arc::default(),
        }
    }

    /// The methods hedged (replacing the default list of reads). Never list a method that
    /// is not safe to run twice at once.
    pub fn methods<I, M>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = M>,
        M: Into<String>,
    {
        self.methods = methods.into_iter().map(Into::into).collect();
        self
    }

    /// The budget hedges withdraw from, deposited into by its owner: the retry policy's
    /// ([`RetryPolicy::shared_budget`](crate::resilience::retry::RetryPolicy::shared_budget)), whose
    /// layer deposits once per call, so that retries and hedges together stay within it.
    pub fn budget(mut self, budget: Arc<dyn Budget + Send + Sync>) -> Self {
        self.budget = budget;
        self.deposits = false;
        self
    }

    fn hedges(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }

    fn current_delay(&self) -> Duration {
        match self.delay {
            HedgeDelay::Fixed(delay) => delay,
            HedgeDelay::Percentile { p, min, max } => {
                let latencies = self.latencies.lock().unwrap_or_else(|e| e.into_inner());
                if latencies.len() < MIN_SAMPLES {
                    return max;
                }
                let mut sorted: Vec<Duration> = latencies.iter().copied().collect();
                sorted.sort_unstable();
                let rank = (p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
                sorted[rank.min(sorted.len() - 1)].clamp(min, max)
            }
        }
    }

    fn record(&self, latency: Duration) {
        if matches!(self.delay, HedgeDelay::Percentile { .. }) {
            let mut latencies = self.latencies.lock().unwrap_or_else(|e| e.into_inner());
            if latencies.len() == SAMPLES {
                latencies.pop_front();
            }
            latencies.push_back(latency);
        }
    }
}

/// Sends a second attempt of a slow read: to the same agent, or to an alternate (another
/// replica of it). The first success wins and the other attempt is dropped (its HTTP request
/// cancelled); if one fails, the other is awaited. Only methods in the config's list are
/// hedged, and only while the budget allows.
#[derive(Clone, Debug)]
pub struct Hedge<S> {
    inner: S,
    alternate: Option<S>,
    config: HedgeConfig,
}

impl<S> Hedge<S> {
    /// Hedges calls on `inner` with a second call on `inner`.
    pub fn new(inner: S, config: HedgeConfig) -> Self {
        Hedge {
            inner,
            alternate: None,
            config,
        }
    }

    /// Sends hedges to `alternate` instead.
    pub fn with_alternate(mut self, alternate: S) -> Self {
        self.alternate = Some(alternate);
        self
    }
}

/// The `tower::Layer` that builds [`Hedge`] (hedges to the same service).
#[derive(Clone, Debug)]
pub struct HedgeLayer {
    config: HedgeConfig,
}

impl HedgeLayer {
    /// A layer hedging by `config`.
    pub fn new(config: HedgeConfig) -> Self {
        HedgeLayer { config }
    }
}

impl<S> Layer<S> for HedgeLayer {
    type Service = Hedge<S>;

    fn layer(&self, inner: S) -> Hedge<S> {
        Hedge::new(inner, self.config.clone())
    }
}

impl<S, R> Service<R> for Hedge<S>
where
    S: Service<R> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Classify + Send + 'static,
    R: Request + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: R) -> Self::Future {
        let config = self.config.clone();
        if config.deposits {
            config.budget.deposit();
        }
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if !config.hedges(call.operation()) {
            return Box::pin(inner.call(call));
        }
        let second = self.alternate.clone().unwrap_or_else(|| inner.clone());
        let first = inner.call(call.clone());
        Box::pin(hedged(first, second, call, config))
    }
}

async fn hedged<S, R, F>(
    first: F,
    second: S,
    call: R,
    config: HedgeConfig,
) -> Result<S::Response, S::Error>
where
    S: Service<R>,
    S::Error: Classify,
    R: Request,
    F: Future<Output = Result<S::Response, S::Error>>,
{
    let started = Instant::now();
    let mut first = std::pin::pin!(first);
    let delay = config.current_delay();
    match future::select(first.as_mut(), std::pin::pin!(tokio::time::sleep(delay))).await {
        Either::Left((result, _)) => {
            if result.is_ok() {
                config.record(started.elapsed());
            }
            return result;
        }
        Either::Right(_) => {}
    }
    // Slow: hedge, if the budget allows.
    if !config.budget.withdraw() {
        return first.await;
    }
    crate::observe::hedge(crate::resilience::request::observed(&call), delay);
    let mut hedge = std::pin::pin!(second.oneshot(call));
    let result = match future::select(first.as_mut(), hedge.as_mut()).await {
        Either::Left((Ok(reply), _)) | Either::Right((Ok(reply), _)) => Ok(reply),
        // One failed: the other may still answer, unless the classifier says another try
        // cannot help (a 404, a validation error), which is then the answer.
        Either::Left((Err(error), _)) | Either::Right((Err(error), _))
            if !error
                .retry_advice_at(std::time::SystemTime::now())
                .is_retryable() =>
        {
            Err(error)
        }
        Either::Left((Err(_), _)) => hedge.await,
        Either::Right((Err(_), _)) => first.await,
    };
    if result.is_ok() {
        config.record(started.elapsed());
    }
    result
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::client::{Call, ClientError, Reply};
    use crate::resilience::classify::Timeout;
    use crate::wire::error::A2aError;

    struct SetOnDrop(Arc<AtomicUsize>);

    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// What a scripted call ends in.
    #[derive(Copy, Clone)]
    enum Answer {
        /// Its number.
        Ok,
        /// An attempt timeout, which another try may beat.
        Timeout,
        /// TASK_NOT_FOUND, which another try cannot change.
        NotFound,
    }

    /// The n-th call (from 0) takes `script[n].0` and then ends as `script[n].1` says;
    /// `dropped` counts the calls dropped unfinished.
    fn scripted(
        script: Vec<(Duration, Answer)>,
    ) -> (
        impl Service<Call, Response = Reply, Error = ClientError, Future: Send> + Clone + Send + 'static,
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
    ) {
        let calls = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (c, d) = (calls.clone(), dropped.clone());
        let service = tower::service_fn(move |_call: Call| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            let (delay, answer) = script
                .get(n)
                .copied()
                .unwrap_or((Duration::ZERO, Answer::Ok));
            let guard = SetOnDrop(d.clone());
            async move {
                tokio::time::sleep(delay).await;
                std::mem::forget(guard);
                match answer {
                    Answer::Ok => Ok(Reply::Result(serde_json::value::to_raw_value(&n).unwrap())),
                    Answer::Timeout => Err(ClientError::Timeout(Timeout::Attempt)),
                    Answer::NotFound => Err(ClientError::from_object(
                        crate::RemoteError::new(crate::code::TASK_NOT_FOUND, "gone")
                            .to_error_object(),
                        None,
                    )),
                }
            }
        });
        (service, calls, dropped)
    }

    fn fixed(ms: u64) -> HedgeConfig {
        HedgeConfig::new(HedgeDelay::Fixed(Duration::from_millis(ms)))
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_read_is_hedged_and_the_loser_cancelled() {
        let (service, calls, dropped) = scripted(vec![
            (Duration::from_secs(10), Answer::Ok),
            (Duration::from_millis(50), Answer::Ok),
        ]);
        let started = Instant::now();
        let reply = Hedge::new(service, fixed(200))
            .oneshot(Call::from_json("GetTask", "{}"))
            .await
            .unwrap();
        assert!(
            matches!(reply, Reply::Result(ref v) if v.get() == "1"),
            "{reply:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_millis(250));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn fast_reads_and_unsafe_methods_are_never_hedged() {
        let (service, calls, _) = scripted(vec![(Duration::from_millis(10), Answer::Ok)]);
        let _ = Hedge::new(service, fixed(200))
            .oneshot(Call::from_json("GetTask", "{}"))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let (service, calls, _) = scripted(vec![(Duration::from_secs(10), Answer::Ok)]);
        let _ = Hedge::new(service, fixed(200))
            .oneshot(Call::from_json("SendMessage", "{}"))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_attempt_leaves_the_other_to_answer_and_the_budget_bounds_hedges() {
        // The hedge fails at 150 ms; the first attempt still answers at 1 s.
        let (service, _, _) = scripted(vec![
            (Duration::from_secs(1), Answer::Ok),
            (Duration::from_millis(50), Answer::Timeout),
        ]);
        let started = Instant::now();
        let reply = Hedge::new(service, fixed(100))
            .oneshot(Call::from_json("GetTask", "{}"))
            .await
            .unwrap();
        assert!(matches!(reply, Reply::Result(ref v) if v.get() == "0"));
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        // A budget that allows nothing: slow calls wait for their one attempt.
        struct Empty;
        impl Budget for Empty {
            fn deposit(&self) {}
            fn withdraw(&self) -> bool {
                false
            }
        }
        let (service, calls, _) = scripted(vec![(Duration::from_secs(1), Answer::Ok)]);
        let _ = Hedge::new(service, fixed(100).budget(Arc::new(Empty)))
            .oneshot(Call::from_json("GetTask", "{}"))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_no_retry_can_change_ends_the_hedged_call() {
        // The hedge says TASK_NOT_FOUND at 150 ms: the first attempt (due at 10 s) is not
        // waited for, and is dropped.
        let (service, _, dropped) = scripted(vec![
            (Duration::from_secs(10), Answer::Ok),
            (Duration::from_millis(50), Answer::NotFound),
        ]);
        let started = Instant::now();
        let error = Hedge::new(service, fixed(100))
            .oneshot(Call::from_json("GetTask", "{}"))
            .await
            .unwrap_err();
        assert_eq!(error.remote_code(), Some(crate::code::TASK_NOT_FOUND));
        assert_eq!(started.elapsed(), Duration::from_millis(150));
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_percentile_delay_follows_recent_latencies() {
        let config = HedgeConfig::new(HedgeDelay::Percentile {
            p: 0.9,
            min: Duration::from_millis(10),
            max: Duration::from_secs(2),
        });
        assert_eq!(config.current_delay(), Duration::from_secs(2));
        for ms in 1..=100 {
            config.record(Duration::from_millis(ms));
        }
        assert_eq!(config.current_delay(), Duration::from_millis(90));
    }
}
