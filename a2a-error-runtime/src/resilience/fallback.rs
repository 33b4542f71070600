//! Fallback chains: the primary, then alternates in order, then a default value, with the
//! step that answered always known.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

type Run<'a, T, E> =
    Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'a>> + Send + 'a>;
type Guard<'a, E> = Box<dyn Fn(&E) -> bool + Send + Sync + 'a>;

struct Step<'a, T, E> {
    name: Cow<'static, str>,
    guard: Option<Guard<'a, E>>,
    run: Run<'a, T, E>,
}

/// The key under which [`Answered::mark`] records a degraded answer in a result's
/// `metadata`: `{"degraded": {"step": "cache", "index": 1}}`. A caller that sees it knows the
/// answer is not the primary's.
pub const DEGRADED_KEY: &str = "degraded";

/// Tries the primary, then each alternate in order, then the default value.
///
/// An alternate guarded by a predicate ([`or_if`](Self::or_if)) runs only when the previous
/// step's error satisfies it (fall back on unavailability, not on a validation error); a
/// step skipped by its guard leaves the last error standing. The result says which step
/// answered ([`Answered`]), and any step but the first is a degraded answer: logged, counted
/// in `a2a.degraded`, and markable on the wire with [`Answered::mark`].
pub struct Fallback<'a, T, E> {
    steps: Vec<Step<'a, T, E>>,
    default: Option<(Cow<'static, str>, T)>,
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
        });
        self
    }

    /// Runs the chain: the first step that answers, or the last error when none does and
    /// there is no default.
    pub async fn run(self) -> Result<Answered<T>, E> {
        let mut last: Option<E> = None;
        let mut index = 0;
        for step in self.steps {
            if let (Some(guard), Some(error)) = (&step.guard, &last)
                && !guard(error)
            {
                tracing::info!(step = &*step.name, "fallback step skipped by its guard");
                metrics::counter!("a2a.fallback.steps", "step" => step.name.clone(), "outcome" => "skipped")
                    .increment(1);
                index += 1;
                continue;
            }
            match (step.run)().await {
                Ok(value) => {
                    metrics::counter!("a2a.fallback.steps", "step" => step.name.clone(), "outcome" => "answered")
                        .increment(1);
                    return Ok(Answered::new(value, step.name, index));
                }
                Err(error) => {
                    tracing::info!(step = &*step.name, "fallback step failed");
                    metrics::counter!("a2a.fallback.steps", "step" => step.name.clone(), "outcome" => "failed")
                        .increment(1);
                    last = Some(error);
                }
            }
            index += 1;
        }
        match (self.default, last) {
            (Some((name, value)), _) => {
                metrics::counter!("a2a.fallback.steps", "step" => name.clone(), "outcome" => "answered")
                    .increment(1);
                Ok(Answered::new(value, name, index))
            }
            (None, Some(error)) => Err(error),
            (None, None) => unreachable!("a fallback chain has a primary step"),
        }
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
            metrics::counter!("a2a.degraded", "source" => "fallback").increment(1);
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
        assert_eq!(error, 1);
    }
}
