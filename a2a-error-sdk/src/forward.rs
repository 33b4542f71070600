//! [`forward_stream`]: a model's streamed answer, forwarded from an SDK executor to its A2A
//! caller as the task's one artifact, with the first-event rule built in.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use a2a::{
    A2AError, Artifact, Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::ExecutorContext;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::{Map, Value, json};

use a2a_error_runtime::dependency::{DependencyFailed, HttpStream};
use a2a_error_runtime::resilience::{Answered, DEGRADED_KEY};

/// Whether the request an execution serves is a stream (SendStreamingMessage on any binding
/// of the [`Bridge`](crate::serve::Bridge)), whose caller receives each event as it is made; a
/// SendMessage's caller receives the outcome only. The bridge says so, in a service param no
/// caller can set.
pub fn is_streaming(ctx: &ExecutorContext) -> bool {
    super::call::read(&ctx.service_params)
        .link
        .and_then(super::link::find)
        .is_some_and(|watch| watch.is_stream())
}

/// Forwards a model's streamed answer to the A2A caller of `ctx`'s task: return it from your
/// executor's `execute`, under [`Guarded`](crate::executor::Guarded). `opening` opens the model's
/// stream ([`HttpDependency::stream`](a2a_error_runtime::dependency::HttpDependency::stream), or a
/// [`Fallback`](a2a_error_runtime::resilience::Fallback) over several, whose [`Answered`] says which
/// step answered) and passes a failure on as your error (say
/// [`DependencyFailed::models`]).
///
/// - A stream's first event is its Task as stored (the caller's message, SUBMITTED), sent
///   with the model's first content (A2A 1.0 §3.1.2: a task's stream begins with the Task).
/// - Until the model's first content event, nothing is sent: a failure to open (after the
///   stack's retries and fallbacks) is the call's error, an ordinary JSON-RPC error (REST:
///   the HTTP status with its `google.rpc.Status`).
/// - Each content event's text (see [`StreamFormat::text`](a2a_error_runtime::dependency::StreamFormat::text))
///   becomes a `TaskArtifactUpdateEvent` on one artifact: the first with `append` absent,
///   the rest appended. Events without text send nothing.
/// - The caller of the stream receives each token as its own event, as it comes; the task
///   (in the store, for GetTask, for a reader that subscribes later, for push notifications)
///   gets them joined into a few appends: one when the text waiting is as long as what the
///   artifact holds (1 KiB to 1 MiB), once it has waited a second, and before any other
///   event. The SDK's handler copies the whole task for every event it is given, so an
///   answer given to it a token an event cost time quadratic in its length; joined, an
///   answer's cost per token does not grow with it (8,000 tokens: ~1.2x a plain relay's CPU,
///   where it was ~200x). Joining needs the [`Bridge`](crate::serve::Bridge) (an execution served
///   otherwise is given every token).
/// - The model's end of answer ends the task COMPLETED, the final status update's `metadata`
///   carrying the degraded mark (`{"degraded": {"step": …, "index": …}}`) when a fallback
///   answered, or when the answer was marked degraded for a reason of yours
///   ([`Forwarded::degraded`]: a tool that was down).
/// - A failure after the first content ends the task FAILED in a final status update whose
///   message's `metadata.error` names the cause (`code`, `reason`, `domain`, `retryable`, and
///   `retryDelay` when one is known): `MODEL_STREAM_INTERRUPTED` (-32062, retryable) for a
///   stream cut, silent past its idle timeout, oversized or failing in-band;
///   DEADLINE_EXCEEDED at the caller's deadline. What was sent stands; no second model call
///   is made. So does a failure of the SDK's handler after the first event (its task store
///   refusing the grown task: CONTENT_TOO_LARGE): the caller's stream ends with the FAILED
///   status update naming it, never with an error event in its middle.
/// - The caller leaving (its stream closed) drops the model's stream, which closes the
///   connection to the model at once.
///
/// For a SendMessage (see [`is_streaming`]) the same events build the task the caller is
/// answered with.
pub fn forward_stream<F, O>(
    ctx: &ExecutorContext,
    opening: F,
) -> BoxStream<'static, Result<StreamResponse, A2AError>>
where
    F: Future<Output = Result<O, A2AError>> + Send + 'static,
    O: Into<Forwarded>,
{
    let task_id = ctx.task_id.clone();
    let context_id = ctx.context_id.clone();
    let state = Forwarding::Opening(Box::pin(async move { opening.await.map(Into::into) }));
    futures_util::stream::unfold(state, move |state| {
        let (task_id, context_id) = (task_id.clone(), context_id.clone());
        async move {
            let (mut stream, mark, artifact, sent) = match state {
                Forwarding::Opening(opening) => {
                    super::executor::fail_as_status();
                    match opening.await {
                        Ok(forwarded) => {
                            let mark = forwarded.mark();
                            (Box::new(forwarded.stream), mark, artifact_id(), false)
                        }
                        Err(error) => return Some((Err(error), Forwarding::Ended)),
                    }
                }
                Forwarding::Streaming {
                    stream,
                    mark,
                    artifact,
                } => (stream, mark, artifact, true),
                Forwarding::Ended => return None,
            };
            loop {
                match stream.next().await {
                    Some(Ok(event)) => {
                        let Some(text) = stream.text(&event).filter(|text| !text.is_empty()) else {
                            continue;
                        };
                        let update = TaskArtifactUpdateEvent {
                            task_id,
                            context_id,
                            artifact: Artifact {
                                artifact_id: artifact.clone(),
                                name: None,
                                description: None,
                                parts: vec![Part::text(text)],
                                metadata: None,
                                extensions: None,
                            },
                            append: sent.then_some(true),
                            last_chunk: None,
                            metadata: None,
                        };
                        let next = Forwarding::Streaming {
                            stream,
                            mark,
                            artifact,
                        };
                        return Some((Ok(StreamResponse::ArtifactUpdate(update)), next));
                    }
                    Some(Err(stopped)) => {
                        tracing::warn!(error = %stopped, "a model's stream stopped");
                        let error = a2a_error_runtime::sdk_errors::to_sdk(
                            &DependencyFailed::interrupted(&stopped),
                        );
                        return Some((Err(error), Forwarding::Ended));
                    }
                    None => {
                        let completed = TaskStatusUpdateEvent {
                            task_id,
                            context_id,
                            status: TaskStatus {
                                state: TaskState::Completed,
                                message: None,
                                timestamp: None,
                            },
                            metadata: mark
                                .map(|mark| HashMap::from([(DEGRADED_KEY.to_owned(), mark)])),
                        };
                        return Some((
                            Ok(StreamResponse::StatusUpdate(completed)),
                            Forwarding::Ended,
                        ));
                    }
                }
            }
        }
    })
    .boxed()
}

/// A model's opened stream as [`forward_stream`] forwards it, with what marks its answer
/// degraded: the fallback step that answered (from an [`Answered`]), and reasons of yours.
pub struct Forwarded {
    stream: HttpStream,
    /// The step that answered and its position, when a fallback chain opened the stream.
    step: Option<(Value, usize)>,
    /// The reasons of the caller's own, added to the mark.
    reasons: Map<String, Value>,
}

impl Forwarded {
    /// Marks the answer degraded for a reason of yours: `key` → `value` in the final status
    /// update's degraded mark, beside the step that answered (`"tool": "unavailable"` for a
    /// tool the model went without).
    pub fn degraded(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.reasons.insert(key.into(), value.into());
        self
    }

    /// The degraded mark: the step that answered, when it was not the primary or a reason was
    /// added, and the reasons.
    fn mark(&self) -> Option<Value> {
        let fell_back = self.step.as_ref().is_some_and(|(_, index)| *index > 0);
        if !fell_back && self.reasons.is_empty() {
            return None;
        }
        let mut mark = Map::new();
        if let Some((step, index)) = &self.step {
            mark.insert("step".into(), step.clone());
            mark.insert("index".into(), json!(index));
        }
        mark.extend(self.reasons.clone());
        Some(Value::Object(mark))
    }
}

impl From<HttpStream> for Forwarded {
    fn from(stream: HttpStream) -> Self {
        Forwarded {
            stream,
            step: None,
            reasons: Map::new(),
        }
    }
}

impl From<Answered<HttpStream>> for Forwarded {
    fn from(answered: Answered<HttpStream>) -> Self {
        Forwarded {
            stream: answered.value,
            step: Some((json!(answered.step), answered.index)),
            reasons: Map::new(),
        }
    }
}

/// Where a forwarded stream stands.
enum Forwarding {
    Opening(std::pin::Pin<Box<dyn Future<Output = Result<Forwarded, A2AError>> + Send>>),
    /// Boxed: the stream is large, and moves with each event.
    Streaming {
        stream: Box<HttpStream>,
        mark: Option<Value>,
        artifact: String,
    },
    Ended,
}

/// A new artifact id: a task's later turns add answers of their own.
fn artifact_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!("answer-{nanos:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
