//! Fan-out: the same request to several agents at once, each through its own client (its own
//! breaker and retries), decided by how many answer.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::{self, Either};
use futures_util::stream::FuturesUnordered;
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::client::downstream::CHAIN_BYTES;
use crate::client::downstream::Downstream;
use crate::client::error::ClientError;
use crate::resilience::{Answered, FallbackError};
use crate::wire::code::{self, CodeRow};
use crate::wire::data::DataSink;
use crate::wire::error::{A2aError, Category, RetryHint};
use crate::wire::remote::RemoteError;

/// When a fan-out stops waiting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Settle {
    /// As soon as `min_results` agents answered; the rest are cancelled.
    AtMinimum,
    /// When every agent has answered or failed (or the deadline passed): the result has every
    /// answer there is.
    All,
}

/// Calls several agents concurrently and succeeds once at least `min_results` answer.
///
/// It stops early when the outcome is decided: with [`Settle::AtMinimum`] as soon as enough
/// answered, and in either mode as soon as too many failed for `min_results` to be reached.
/// Calls not finished by then are cancelled (dropped, which cancels their HTTP requests) and
/// listed as unfinished. A deadline bounds the whole fan-out.
#[derive(Copy, Clone, Debug)]
pub struct FanOut {
    min_results: usize,
    settle: Settle,
    deadline: Option<Instant>,
}

impl FanOut {
    /// A fan-out that needs `min_results` answers (at least 1), waiting for all by default.
    pub fn new(min_results: usize) -> Self {
        FanOut {
            min_results: min_results.max(1),
            settle: Settle::All,
            deadline: None,
        }
    }

    /// When to stop waiting (default [`Settle::All`]).
    pub fn settle(mut self, settle: Settle) -> Self {
        self.settle = settle;
        self
    }

    /// Stops waiting at `deadline`: calls still running are cancelled and count as failed
    /// (`Timeout::Total`).
    pub fn deadline(mut self, deadline: impl Into<Option<Instant>>) -> Self {
        self.deadline = deadline.into();
        self
    }

    /// Runs `calls`, each an agent's name and the future of its call, all of one type. To
    /// mix calls of different types (a plain call beside a [`Fallback`](crate::resilience::Fallback)),
    /// add them one by one with [`call`](Self::call) and [`fallback`](Self::fallback).
    pub async fn run<T, E, F>(
        self,
        calls: impl IntoIterator<Item = (Arc<str>, F)>,
    ) -> Result<FanOutResult<T, E>, FanOutError<E>>
    where
        F: Future<Output = Result<T, ClientError<E>>>,
    {
        // Collected before the first await: a lazy `map` held across it trips rustc's
        // higher-ranked `Send` check for callers' borrowing iterators.
        let calls: Vec<_> = calls
            .into_iter()
            .map(|(name, call)| (name, async move { call.await.map(|value| (value, false)) }))
            .collect();
        self.run_marked(calls).await
    }

    /// Starts a fan-out of calls of any future types: `agent`'s call, then more with
    /// [`Branches::call`] and [`Branches::fallback`], and [`Branches::run`].
    pub fn call<'a, T, E, F>(self, agent: impl Into<Arc<str>>, call: F) -> Branches<'a, T, E>
    where
        F: Future<Output = Result<T, ClientError<E>>> + Send + 'a,
    {
        Branches::new(self).call(agent, call)
    }

    /// Starts a fan-out whose first branch is `agent` behind a [`Fallback`](crate::resilience::Fallback)
    /// chain (see [`Branches::fallback`]).
    pub fn fallback<'a, T, E, F>(self, agent: impl Into<Arc<str>>, chain: F) -> Branches<'a, T, E>
    where
        F: Future<Output = Result<Answered<T>, FallbackError<ClientError<E>>>> + Send + 'a,
    {
        Branches::new(self).fallback(agent, chain)
    }

    /// Runs calls whose answers say whether they were degraded (a fallback answered).
    async fn run_marked<T, E, F>(
        self,
        calls: impl IntoIterator<Item = (Arc<str>, F)>,
    ) -> Result<FanOutResult<T, E>, FanOutError<E>>
    where
        F: Future<Output = Result<(T, bool), ClientError<E>>>,
    {
        let mut names = Vec::new();
        let mut running = FuturesUnordered::new();
        for (index, (name, call)) in calls.into_iter().enumerate() {
            names.push(name);
            running.push(async move { (index, call.await) });
        }
        let total = names.len();
        let mut answered: Vec<(usize, (T, bool))> = Vec::new();
        let mut failed: Vec<(usize, ClientError<E>)> = Vec::new();
        let mut finished = vec![false; total];
        let mut deadline = std::pin::pin!(self.deadline.map(tokio::time::sleep_until));
        loop {
            let decided = match self.settle {
                Settle::AtMinimum => answered.len() >= self.min_results,
                Settle::All => answered.len() + failed.len() == total,
            } || total - failed.len() < self.min_results;
            if decided || running.is_empty() {
                break;
            }
            let next = match deadline.as_mut().as_pin_mut() {
                Some(deadline) => match future::select(running.next(), deadline).await {
                    Either::Left((next, _)) => next,
                    Either::Right(_) => None,
                },
                None => running.next().await,
            };
            match next {
                Some((index, result)) => {
                    finished[index] = true;
                    match result {
                        Ok(value) => answered.push((index, value)),
                        Err(error) => failed.push((index, error)),
                    }
                }
                None => break,
            }
        }
        drop(running);
        let unfinished: Vec<Arc<str>> = (0..total)
            .filter(|i| !finished[*i])
            .map(|i| names[i].clone())
            .collect();
        // The order of the agents as given, not of their finishing.
        answered.sort_by_key(|(index, _)| *index);
        failed.sort_by_key(|(index, _)| *index);
        let failed: Vec<Downstream<E>> = failed
            .into_iter()
            .map(|(index, error)| Downstream::new(names[index].clone(), error))
            .collect();
        if answered.len() < self.min_results {
            tracing::info!(
                answered = answered.len(),
                needed = self.min_results,
                failed = failed.len(),
                "fan-out failed"
            );
            return Err(FanOutError {
                failed,
                unfinished,
                answered: answered.len(),
                needed: self.min_results,
            });
        }
        let degraded = answered
            .iter()
            .filter(|(_, (_, degraded))| *degraded)
            .map(|(index, _)| names[*index].clone())
            .collect();
        let result = FanOutResult {
            answered: answered
                .into_iter()
                .map(|(index, (value, _))| (names[index].clone(), value))
                .collect(),
            failed,
            unfinished,
            degraded,
        };
        if result.is_degraded() {
            crate::observe::degraded("fan_out");
            tracing::info!(
                answered = result.answered.len(),
                failed = result.failed.len(),
                unfinished = result.unfinished.len(),
                from_fallback = result.degraded.len(),
                "fan-out degraded"
            );
        }
        Ok(result)
    }
}

/// A fan-out that got enough answers.
pub struct FanOutResult<T, E = RemoteError> {
    /// Each agent that answered, with its answer, in the order the agents were given.
    pub answered: Vec<(Arc<str>, T)>,
    /// Each agent that failed, and why.
    pub failed: Vec<Downstream<E>>,
    /// The agents whose calls were cancelled once the outcome was decided.
    pub unfinished: Vec<Arc<str>>,
    /// The agents among `answered` whose answer came from a fallback step, not the agent
    /// itself ([`Branches::fallback`]).
    pub degraded: Vec<Arc<str>>,
}

impl<T, E> FanOutResult<T, E> {
    /// Whether the answer is not the full one: some agent did not answer, or a fallback
    /// answered for it.
    pub fn is_degraded(&self) -> bool {
        !self.failed.is_empty() || !self.unfinished.is_empty() || !self.degraded.is_empty()
    }
}

/// The branch future of a fan-out: its answer, and whether a fallback gave it.
type Branch<'a, T, E> =
    Pin<Box<dyn Future<Output = Result<(T, bool), ClientError<E>>> + Send + 'a>>;

/// A fan-out being assembled from calls of different future types ([`FanOut::call`]): each
/// is boxed, so a plain call, a [`Fallback`](crate::resilience::Fallback) chain and a call of your own
/// sit side by side.
#[must_use = "a fan-out does nothing until `run` is awaited"]
pub struct Branches<'a, T, E = RemoteError> {
    fan_out: FanOut,
    calls: Vec<(Arc<str>, Branch<'a, T, E>)>,
}

impl<'a, T, E> Branches<'a, T, E> {
    fn new(fan_out: FanOut) -> Self {
        Branches {
            fan_out,
            calls: Vec::new(),
        }
    }

    /// Adds `agent`'s call.
    pub fn call<F>(mut self, agent: impl Into<Arc<str>>, call: F) -> Self
    where
        F: Future<Output = Result<T, ClientError<E>>> + Send + 'a,
    {
        let call = async move { call.await.map(|value| (value, false)) };
        self.calls.push((agent.into(), Box::pin(call)));
        self
    }

    /// Adds `agent` behind a fallback chain (the future of
    /// [`Fallback::run`](crate::resilience::Fallback::run)): an answer from a step other than the primary
    /// is listed in [`FanOutResult::degraded`], and makes the result degraded.
    pub fn fallback<F>(mut self, agent: impl Into<Arc<str>>, chain: F) -> Self
    where
        F: Future<Output = Result<Answered<T>, FallbackError<ClientError<E>>>> + Send + 'a,
    {
        // A failed chain stands in the fan-out as its last step's failure.
        let chain = async move {
            match chain.await {
                Ok(answered) => {
                    let degraded = answered.is_degraded();
                    Ok((answered.value, degraded))
                }
                Err(failed) => Err(failed.into_last()),
            }
        };
        self.calls.push((agent.into(), Box::pin(chain)));
        self
    }

    /// Runs the calls (see [`FanOut`]).
    pub async fn run(self) -> Result<FanOutResult<T, E>, FanOutError<E>> {
        self.fan_out.run_marked(self.calls).await
    }
}

impl<T: fmt::Debug, E: fmt::Debug> fmt::Debug for FanOutResult<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOutResult")
            .field("answered", &self.answered)
            .field("failed", &self.failed)
            .field("unfinished", &self.unfinished)
            .finish()
    }
}

/// Fewer than `min_results` agents answered. Passed on, it is one DOWNSTREAM_FAILED whose
/// ErrorInfo metadata names every agent that failed and the reason it sent, or its local
/// failure (`UNREACHABLE`, `TIMEOUT`, `CIRCUIT_OPEN`, …): `failedAgents` is the JSON text of
/// `{"name": "REASON", …}` and `downstreamFailures` of `[{"agent","code","reason","domain"}]`;
/// at most 16 agents are listed and the object stays within 2 KiB (`failuresTruncated` says
/// how many were left out). When a single agent was called, its whole chain comes too
/// (`downstreamAgent`, `downstreamChain`, …; see [`Hop`](crate::Hop)), so coordinators
/// chained one behind the other report every hop down to the root cause.
pub struct FanOutError<E = RemoteError> {
    /// Each agent that failed, and why, in the order the agents were given.
    pub failed: Vec<Downstream<E>>,
    /// The agents whose calls were cancelled once the outcome was decided.
    pub unfinished: Vec<Arc<str>>,
    /// How many answered.
    pub answered: usize,
    /// How many were needed.
    pub needed: usize,
}

impl<E: fmt::Debug> fmt::Debug for FanOutError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOutError")
            .field("failed", &self.failed)
            .field("unfinished", &self.unfinished)
            .field("answered", &self.answered)
            .field("needed", &self.needed)
            .finish()
    }
}

impl<E: fmt::Display> fmt::Display for FanOutError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} needed agents answered",
            self.answered, self.needed
        )?;
        for failure in &self.failed {
            write!(f, "; {failure}")?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + 'static> std::error::Error for FanOutError<E> {}

/// The most agents a fan-out error lists.
const MAX_LISTED: usize = 16;
/// The bytes the list may take beside a single failure's chain.
const SINGLE_LIST_BYTES: usize = 320;

impl<E> FanOutError<E> {
    /// Whether every call failed only because our own deadline ran out (before or while
    /// calling): that is DEADLINE_EXCEEDED, not a downstream failure.
    fn out_of_time(&self) -> bool {
        !self.failed.is_empty()
            && self.failed.iter().all(|failure| {
                matches!(
                    failure.error(),
                    ClientError::Timeout(crate::resilience::Timeout::Total)
                )
            })
    }
}

impl<E> FanOutError<E> {
    /// The table row this error is passed on as.
    fn row(&self) -> &'static CodeRow {
        code::row(if self.out_of_time() {
            code::DEADLINE_EXCEEDED
        } else {
            code::DOWNSTREAM_FAILED
        })
    }
}

impl<E: A2aError + 'static> A2aError for FanOutError<E> {
    fn code(&self) -> i32 {
        self.row().code
    }

    fn reason(&self) -> &str {
        self.row().reason
    }

    fn domain(&self) -> &str {
        a2a_error_codes::PROJECT_DOMAIN
    }

    fn has_placeholder_domain(&self) -> bool {
        true
    }

    fn public_message(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.row().message)
    }

    /// Each agent's failure was retried by its own client already, so not again; unless
    /// every failure was an open circuit (nothing was sent): then after the earliest
    /// half-open, when the agents may be tried again.
    fn retry_hint(&self) -> RetryHint {
        let delays: Option<Vec<std::time::Duration>> = self
            .failed
            .iter()
            .map(|failure| match failure.error() {
                ClientError::CircuitOpen { retry_after } if !retry_after.is_zero() => {
                    Some(*retry_after)
                }
                _ => None,
            })
            .collect();
        match delays.and_then(|delays| delays.into_iter().min()) {
            Some(delay) if self.unfinished.is_empty() => RetryHint::After(delay),
            _ => RetryHint::Never,
        }
    }

    fn category(&self) -> Category {
        self.row().category
    }

    fn http_status(&self) -> u16 {
        self.row().http_status
    }

    fn write_data(&self, sink: &mut DataSink<'_>) {
        let mut list_bytes = CHAIN_BYTES;
        if let ([only], []) = (self.failed.as_slice(), self.unfinished.as_slice()) {
            list_bytes = SINGLE_LIST_BYTES;
            only.error().write_downstream_within(
                Some(only.agent()),
                sink,
                CHAIN_BYTES - SINGLE_LIST_BYTES,
            );
        }
        let mut reasons = Map::new();
        let mut hops = Vec::new();
        let mut left_out = 0;
        let mut size = 0;
        let unfinished = self.unfinished.iter().map(|name| (name.as_ref(), None));
        let failed = self.failed.iter().map(|f| (f.agent(), Some(f.error())));
        for (name, error) in failed.chain(unfinished) {
            let hop = match error {
                Some(error) => error.first_hop(Some(name)),
                None => crate::wire::chain::Hop::new(
                    Some(name),
                    code::DEADLINE_EXCEEDED,
                    "CANCELLED",
                    None,
                ),
            };
            let entry = serde_json::to_string(&hop.to_json()).unwrap_or_default();
            // Quoted twice in metadata: leave room for the escapes.
            let cost = 2 * entry.len() + hop.reason.len();
            if hops.len() >= MAX_LISTED || size + cost > list_bytes {
                left_out += 1;
                continue;
            }
            size += cost;
            let agent = hop.agent.clone().unwrap_or_default();
            reasons.insert(agent, Value::String(hop.reason.clone()));
            hops.push(hop.to_json());
        }
        sink.field("failedAgents", &Value::Object(reasons));
        sink.field("downstreamFailures", &Value::Array(hops));
        sink.field("answered", &self.answered.to_string());
        sink.field("needed", &self.needed.to_string());
        if left_out > 0 {
            sink.field("failuresTruncated", &left_out.to_string());
        }
    }
}

/// Never rebuilt from a received object (its per-agent errors do not travel whole): a client
/// reads a fan-out failure as the DOWNSTREAM_FAILED it is, its agents in the metadata.
impl<E> crate::wire::error::FromErrorObject for FanOutError<E> {
    fn from_error_object(_: &crate::wire::object::ErrorObject) -> Option<Self> {
        None
    }

    fn code_for_reason(reason: &str) -> Option<i32> {
        (reason == "DOWNSTREAM_FAILED").then_some(code::DOWNSTREAM_FAILED)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::resilience::Fallback;
    use crate::resilience::Timeout;

    #[tokio::test(start_paused = true)]
    async fn calls_of_different_types_mix_and_a_fallback_answer_is_degraded() {
        let plain = async { Ok::<Value, ClientError>(json!("search")) };
        let slow = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok::<Value, ClientError>(json!("hotels"))
        };
        let weather = Fallback::new("weather", || async {
            Err::<Value, ClientError>(ClientError::Timeout(Timeout::Attempt))
        })
        .or_default("cached forecast", json!("sunny"))
        .run();
        let result = FanOut::new(3)
            .call("search", plain)
            .call("hotels", slow)
            .fallback("weather", weather)
            .run()
            .await
            .unwrap();
        let names: Vec<&str> = result.answered.iter().map(|(name, _)| &**name).collect();
        assert_eq!(names, ["search", "hotels", "weather"]);
        assert_eq!(result.answered[2].1, json!("sunny"));
        assert_eq!(result.degraded, [Arc::<str>::from("weather")]);
        assert!(result.failed.is_empty() && result.unfinished.is_empty());
        assert!(
            result.is_degraded(),
            "a fallback answered: not the full answer"
        );

        // The primary answering is not degraded.
        let primary = Fallback::new("weather", || async { Ok::<Value, ClientError>(json!(1)) })
            .or_default("cached", json!(0))
            .run();
        let result = FanOut::new(1)
            .fallback("weather", primary)
            .run()
            .await
            .unwrap();
        assert!(!result.is_degraded());
    }
}
