//! Fallback chains: the primary, then alternates in order, then a default value, with the
//! step that answered always known.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::resilience::classify::Classify;

type Run<'a, T, E> =
    Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'a>> + Send + 'a>;
type Guard<'a, E> = Box<dyn Fn(&E) -> bool + Send + Sync + 'a>;

struct Step<'a, T, E> {
    name: Cow<'static, str>,
    guard: Option<Guard<'a, E>>,
    run: Run<'a, T, E>,
    share: Option<f64>,
}

/// The key under which [`Answered::mark`] records a degraded answer in a result's
/// `metadata`: `{"degraded": {"step": "cache", "index": 1}}`. A caller that sees it knows the
/// answer is not the primary's.
pub const DEGRADED_KEY: &str = "degraded";

/// Tries the primary, then each alternate in order, then the default value.
///
/// An alternate guarded by a predicate ([`or_if`](Self::or_if)) runs only when the previous
/// step's error satisfies it (fall back on unavailability, not on a refusal); a step skipped
/// by its guard leaves the last error standing. The result says which step answered ([`Answered`]),
/// and any step but the first is a degraded answer: logged, counted in `a2a.degraded`, and
/// markable on the wire with [`Answered::mark`]. When every step fails, the error
/// ([`FallbackError`]) keeps every step's: its name, its error, and so its reason and delay.
///
/// A step given a [`share`](Self::share) of the time left runs with that much of the chain's
/// deadline (the caller's, inherited, or [`deadline`](Self::deadline)): the calls inside it
/// inherit the shorter deadline, so a primary's retries cannot spend the alternates' time.
/// A step followed by others and given no share has an equal one: with `n` steps left
/// (itself included), `1/n` of the time left; the last step has all that is left. So with a
/// deadline, every step gets its turn: a primary whose attempts outlast the caller's
/// deadline (a model slower to its first token than the deadline) is cut at its share and
/// the next step asked.
pub struct Fallback<'a, T, E> {
    steps: Vec<Step<'a, T, E>>,
    default: Option<(Cow<'static, str>, T)>,
    deadline: Option<Instant>,
}

impl<T, E> fmt::Debug for Fallback<'_, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.steps.iter().map(|step| &*step.name).collect();
        f.debug_struct("Fallback")
            .field("steps", &names)
            .field("default", &self.default.as_ref().map(|(name, _)| name))
            .finish()
    }
}

impl<'a, T: Send + 'a, E: Send + 'a> Fallback<'a, T, E> {
    /// A chain whose primary is `run`, named `name` (in the result, logs and metrics).
    pub fn new<F, Fut>(name: impl Into<Cow<'static, str>>, run: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Result<T, E>> + Send + 'a,
    {
        Fallback {
            steps: Vec::new(),
            default: None,
            deadline: None,
        }
        .push(name, None, run)
    }

    /// Then `run`, whatever the previous step failed with.
    pub fn or<F, Fut>(self, name: impl Into<Cow<'static, str>>, run: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Result<T, E>> + Send + 'a,
    {
        self.push(name, None, run)
    }

    /// Then `run`, if the previous step's error satisfies `guard`.
    pub fn or_if<F, Fut>(
        self,
        guard: impl Fn(&E) -> bool + Send + Sync + 'a,
        name: impl Into<Cow<'static, str>>,
        run: F,
    ) -> Self
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Result<T, E>> + Send + 'a,
    {
        self.push(name, Some(Box::new(guard)), run)
    }

    /// Gives the step added last at most `fraction` (0 to 1) of the time left when it starts,
    /// before the chain's deadline; the calls it makes inherit that shorter deadline. Without
    /// a deadline (none inherited and none set) it changes nothing. Without it, a step
    /// followed by `n - 1` others has `1/n` (see [`Fallback`]); `share(1.0)` lets a step spend
    /// all that is left.
    pub fn share(mut self, fraction: f64) -> Self {
        if let Some(step) = self.steps.last_mut() {
            step.share = Some(if fraction.is_finite() {
                fraction.clamp(0.0, 1.0)
            } else {
                1.0
            });
        }
        self
    }

    /// Ends the whole chain by `deadline` (an earlier deadline inherited from the request
    /// being served is kept); the steps' calls inherit it.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Finally `value`, when every step failed.
    pub fn or_default(mut self, name: impl Into<Cow<'static, str>>, value: T) -> Self {
        self.default = Some((name.into(), value));
        self
    }

    fn push<F, Fut>(
        mut self,
        name: impl Into<Cow<'static, str>>,
        guard: Option<Guard<'a, E>>,
        run: F,
    ) -> Self
    where
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Result<T, E>> + Send + 'a,
    {
        self.steps.push(Step {
            name: name.into(),
            guard,
            run: Box::new(move || Box::pin(run())),
            share: None,
        });
        self
    }

    /// Runs the chain: the first step that answers, or every step's error when none does and
    /// there is no default.
    pub async fn run(self) -> Result<Answered<T>, FallbackError<E>> {
        let deadline = crate::deadline::earliest(self.deadline, crate::deadline::inherited());
        let mut failed: Vec<StepError<E>> = Vec::new();
        let mut index = 0;
        let steps = self.steps.len();
        for step in self.steps {
            if let (Some(guard), Some(last)) = (&step.guard, failed.last())
                && !guard(&last.error)
            {
                tracing::info!(step = &*step.name, "fallback step skipped by its guard");
                crate::observe::fallback_step(step.name.clone(), "skipped");
                index += 1;
                continue;
            }
            // A step followed by others and given no share has an equal share of what is left.
            let steps_left = steps - index;
            let share = step
                .share
                .or_else(|| (steps_left > 1).then(|| 1.0 / steps_left as f64));
            let step_deadline = match (deadline, share) {
                (Some(deadline), Some(share)) => {
                    let now = Instant::now();
                    let left = deadline.saturating_duration_since(now);
                    Some(now + left.mul_f64(share))
                }
                (deadline, _) => deadline,
            };
            match crate::deadline::scope(step_deadline, (step.run)()).await {
                Ok(value) => {
                    crate::observe::fallback_step(step.name.clone(), "answered");
                    return Ok(Answered::new(value, step.name, index));
                }
                Err(error) => {
                    tracing::info!(step = &*step.name, "fallback step failed");
                    crate::observe::fallback_step(step.name.clone(), "failed");
                    failed.push(StepError {
                        step: step.name,
                        error,
                    });
                }
            }
            index += 1;
        }
        match self.default {
            Some((name, value)) => {
                crate::observe::fallback_step(name.clone(), "answered");
                Ok(Answered::new(value, name, index))
            }
            None => Err(FallbackError { steps: failed }),
        }
    }
}

/// One failed step of a fallback chain.
#[derive(Debug)]
pub struct StepError<E> {
    /// The step's name.
    pub step: Cow<'static, str>,
    /// What it failed with.
    pub error: E,
}

/// Every step of a fallback chain failed or was skipped by its guard: each failed step's
/// error, in order (a skipped step has none).
#[derive(Debug)]
pub struct FallbackError<E> {
    steps: Vec<StepError<E>>,
}

impl<E> FallbackError<E> {
    /// Every failed step, in the order they ran.
    pub fn steps(&self) -> &[StepError<E>] {
        &self.steps
    }

    /// The last step's error.
    pub fn last(&self) -> &E {
        &self
            .steps
            .last()
            .expect("a failed chain failed at a step")
            .error
    }

    /// The last step's error, taken out.
    pub fn into_last(self) -> E {
        self.steps
            .into_iter()
            .next_back()
            .expect("a failed chain failed at a step")
            .error
    }
}

impl<E: Classify> FallbackError<E> {
    /// The soonest delay after which a step may succeed: the least of the delays its steps
    /// were given (a `Retry-After`, an open circuit's time to half-open), if any gave one.
    pub fn soonest_delay(&self) -> Option<Duration> {
        let now = SystemTime::now();
        self.steps
            .iter()
            .filter_map(|step| step.error.delay_at(now))
            .min()
    }
}

impl<E: fmt::Display> fmt::Display for FallbackError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("every fallback step failed")?;
        for (i, step) in self.steps.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}{}: {}", step.step, step.error)?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + 'static> std::error::Error for FallbackError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.last())
    }
}

/// The value a fallback chain answered with, and which step gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered<T> {
    /// The answer.
    pub value: T,
    /// The name of the step that answered.
    pub step: Cow<'static, str>,
    /// Its position: 0 is the primary.
    pub index: usize,
}

impl<T> Answered<T> {
    fn new(value: T, step: Cow<'static, str>, index: usize) -> Self {
        if index > 0 {
            tracing::info!(step = &*step, index, "degraded answer");
            crate::observe::degraded("fallback");
        }
        Answered { value, step, index }
    }

    /// Whether the answer came from an alternate or the default, not the primary.
    pub fn is_degraded(&self) -> bool {
        self.index > 0
    }
}

impl Answered<Value> {
    /// The answer as a JSON result, marked for our caller when degraded: its `metadata`
    /// object gets [`DEGRADED_KEY`] → `{"step": …, "index": …}` (A2A's Message, Task and
    /// Artifact all carry a free-form `metadata`). A result that is not an object is left
    /// as it is.
    pub fn mark(self) -> Value {
        let mut value = self.value;
        if self.index > 0
            && let Value::Object(object) = &mut value
        {
            let metadata = object
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(metadata) = metadata {
                metadata.insert(
                    DEGRADED_KEY.into(),
                    json!({"step": self.step, "index": self.index}),
                );
            }
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn steps_run_in_order_and_the_answer_names_its_step() {
        let answered = Fallback::new("primary", || async { Err::<Value, &str>("down") })
            .or_if(|e| *e == "validation", "never", || async { Ok(json!(0)) })
            .or("cache", || async { Ok(json!({"text": "stale"})) })
            .run()
            .await
            .unwrap();
        assert_eq!((answered.step.as_ref(), answered.index), ("cache", 2));
        assert!(answered.is_degraded());
        assert_eq!(
            answered.mark(),
            json!({"text": "stale", "metadata": {"degraded": {"step": "cache", "index": 2}}})
        );
        let primary = Fallback::new("primary", || async { Ok::<_, ()>(json!({"a": 1})) })
            .or_default("empty", json!({}))
            .run()
            .await
            .unwrap();
        assert!(!primary.is_degraded());
        assert_eq!(primary.mark(), json!({"a": 1}));
    }

    #[tokio::test]
    async fn the_default_answers_last_and_without_it_the_last_error_stands() {
        let answered = Fallback::new("primary", || async { Err::<u8, u8>(1) })
            .or("secondary", || async { Err(2) })
            .or_default("default", 7)
            .run()
            .await
            .unwrap();
        assert_eq!((answered.value, answered.step.as_ref()), (7, "default"));
        let error = Fallback::new("primary", || async { Err::<u8, u8>(1) })
            .or_if(|e| *e == 9, "guarded", || async { Ok(5) })
            .run()
            .await
            .unwrap_err();
        assert_eq!(*error.last(), 1);
        let error = Fallback::new("primary", || async { Err::<u8, u8>(1) })
            .or("secondary", || async { Err(2) })
            .run()
            .await
            .unwrap_err();
        let steps: Vec<_> = error.steps().iter().map(|s| (&*s.step, s.error)).collect();
        assert_eq!(steps, [("primary", 1), ("secondary", 2)]);
        assert_eq!(error.into_last(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn every_step_gets_its_turn_within_the_deadline() {
        // The primary waits for the deadline it inherits (a model slower to its first token
        // than the caller's deadline), and says when it was cut.
        let slow = || async {
            let Some(end) = crate::deadline::inherited() else {
                return Err("no deadline");
            };
            tokio::time::sleep_until(end).await;
            Err("cut")
        };
        let started = Instant::now();
        let deadline = started + Duration::from_millis(900);
        let answered = Fallback::new("primary", slow)
            .or("second", slow)
            .or("third", || async { Ok::<_, &str>(Instant::now()) })
            .deadline(deadline)
            .run()
            .await
            .unwrap();
        // A third of 900 ms, then half of the 600 left: the third asked at 600 ms.
        assert_eq!(answered.step.as_ref(), "third");
        assert_eq!(answered.value - started, Duration::from_millis(600));
        // An explicit share is kept; the last step has all that is left.
        let started = Instant::now();
        let error = Fallback::new("primary", slow)
            .share(0.8)
            .or("second", slow)
            .deadline(started + Duration::from_millis(1000))
            .run()
            .await
            .unwrap_err();
        assert_eq!(*error.last(), "cut");
        assert_eq!(Instant::now() - started, Duration::from_millis(1000));
    }
}
