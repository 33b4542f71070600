//! What a call's retries keep between attempts: the state its clones share (the policy, the
//! attempts histogram) and the loop that runs once a first attempt has failed.

use std::sync::{Arc, OnceLock};

use metrics::Histogram;
use tower::{Service, ServiceExt};
use tracing::Instrument;

use super::policy::RetryPolicy;
use crate::resilience::classify::Classify;
use crate::resilience::request::Request;

/// What the clones of one `Retry` and their calls share, behind one reference count.
pub(super) struct Shared<E> {
    pub(super) policy: Arc<RetryPolicy<E>>,
    // The `a2a.client.attempts` histogram of this service's agent, registered on the first
    // call: recording into a kept handle costs no label allocation per call.
    pub(super) attempts: OnceLock<Histogram>,
}

impl<E> Shared<E> {
    pub(super) fn new(policy: Arc<RetryPolicy<E>>) -> Arc<Self> {
        Arc::new(Shared {
            policy,
            attempts: OnceLock::new(),
        })
    }

    /// Records the attempts of a finished call.
    pub(super) fn record_attempts(&self, attempts: u32) {
        if let Some(histogram) = self.attempts.get() {
            histogram.record(f64::from(attempts));
        }
    }
}

/// What the retries of a call need once its first attempt has failed.
pub(super) struct Retrying<S, R, E> {
    pub(super) shared: Arc<Shared<E>>,
    pub(super) inner: S,
    pub(super) request: R,
}

impl<S, R: Request, E> Retrying<S, R, E> {
    /// Starts the call's clock: a time budget becomes a deadline from now. Starting it again
    /// changes nothing.
    pub(super) fn start_clock(&mut self) {
        let now = self.shared.policy.clock_ref().now();
        let limit = self.request.time_limit().started(now);
        self.request.set_time_limit(limit);
    }
}

impl<S, R, E> Retrying<S, R, E>
where
    S: Service<R, Error = E>,
    R: Request,
    E: Classify,
{
    /// Retries after attempt 1 failed with `error`, until success or the policy says stop.
    pub(super) async fn run(mut self, mut error: E) -> Result<S::Response, E> {
        // A first attempt that failed without waiting has not started the clock yet.
        self.start_clock();
        let Retrying {
            shared,
            mut inner,
            request,
        } = self;
        let policy = &shared.policy;
        let mut previous = policy.backoff().base;
        let mut attempt = 1;
        let result = loop {
            let Some(wait) = policy.next_delay(&request, &error, attempt, &mut previous) else {
                break Err(error);
            };
            policy.notify(attempt, &error, wait.delay);
            crate::observe::retry(
                crate::resilience::request::observed(&request),
                attempt,
                error.failure_reason(),
                wait.delay,
                wait.source.as_str(),
            );
            tokio::time::sleep(wait.delay).await;
            attempt += 1;
            let span = crate::observe::attempt_span(attempt - 1);
            let next = request.clone();
            let result = async {
                inner.ready().await?;
                inner.call(next).await
            };
            error = match result.instrument(span).await {
                Ok(reply) => break Ok(reply),
                Err(error) => error,
            };
        };
        shared.record_attempts(attempt);
        result
    }
}

impl<S, R, E> Retrying<S, R, E> {
    /// The call ended on its first attempt.
    pub(super) fn first_attempt_ended(&self) {
        self.shared.record_attempts(1);
    }
}
