//! Streamed replies (server-sent events) of an HTTP dependency: a model's answer as it is
//! generated. The stack owns the *opening* of a stream: a failing status, a lost connection,
//! an in-band error event, an oversized event and the time to the first content event, all
//! before the first content event, fail the attempt, which the layers retry (with the
//! service's delay, the budget, the breaker) exactly as a whole reply's. From the first
//! content event on the stream is the caller's: a failure ends it with a
//! [`StreamInterrupted`] that says how much was delivered, is never retried, and still counts
//! against the dependency's breaker.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderValue;
use tokio::time::Instant;

use super::error::{HttpError, HttpFailure, InBand};
use super::transport::HttpService;
use crate::dependency::failure::Failure;
pub use crate::http::sse::StreamEvent;
use crate::http::sse::{Events, SseError};
use crate::observe::ModelNames;
use crate::resilience::breaker::CircuitBreaker;
use crate::resilience::{Outcome, Request, Timeout, within, within_time};

/// What a [`StreamFormat`] makes of one event.
#[derive(Clone, Debug, PartialEq)]
pub enum Read {
    /// Content for the caller (a token, a chunk of an answer).
    Content,
    /// Nothing for the caller (a role, usage only, a keep-alive).
    Skip,
    /// The end of the answer (`data: [DONE]`, `message_stop`).
    Done,
    /// An error the service sent inside the stream.
    Error(InBand),
}

/// How the events of a stream are read: which carry content, which end it, which are errors.
/// [`OpenAiChat`] (the default of [`HttpDependency::model`](super::HttpDependency::model)) and
/// [`AnthropicMessages`] are provided; another provider's is a few lines:
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use a2a_error::dependency::{InBand, Read, StreamEvent, StreamFormat};
///
/// /// A provider that sends `event: token` lines, then `event: end`, or `event: failure`.
/// struct Tokens;
///
/// impl StreamFormat for Tokens {
///     fn read(&self, event: &StreamEvent) -> Read {
///         match event.event.as_str() {
///             "token" => Read::Content,
///             "end" => Read::Done,
///             "failure" => Read::Error(InBand::of(&event.data)),
///             _ => Read::Skip,
///         }
///     }
/// }
/// ```
pub trait StreamFormat: Send + Sync + 'static {
    /// What `event` is.
    fn read(&self, event: &StreamEvent) -> Read;

    /// Whether an answer ends with an event read as [`Read::Done`], so that a stream closed
    /// without one was cut (default: yes). When not, the end of the body is the end of the
    /// answer.
    fn ends_with_done(&self) -> bool {
        true
    }

    /// The tokens `event` reports the call used, as (input, output), when it reports them
    /// (OpenAI's last chunk with `stream_options.include_usage`, Anthropic's `message_start`
    /// and `message_delta`); the last report of each counts. Asked of the events that are not
    /// content (usage comes in events of its own). Default: none.
    fn usage(&self, event: &StreamEvent) -> (Option<u64>, Option<u64>) {
        let _ = event;
        (None, None)
    }

    /// The text a content event carries, for a caller that forwards it (as
    /// `sdk::forward_stream` does). Default: its data.
    fn text(&self, event: &StreamEvent) -> Option<String> {
        Some(event.data.clone())
    }
}

/// OpenAI's chat completions stream (and every provider that copies it): content is a
/// non-empty `choices[0].delta.content`; `data: [DONE]` ends the stream; a `data:` object
/// with a top-level `error` is an in-band error (its `type`, else its `code`). Anthropic's
/// `event: error` is read too.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAiChat;

impl StreamFormat for OpenAiChat {
    fn usage(&self, event: &StreamEvent) -> (Option<u64>, Option<u64>) {
        usage_of(event)
    }

    /// `choices[0].delta.content`.
    fn text(&self, event: &StreamEvent) -> Option<String> {
        let chunk = serde_json::from_str::<ChatChunk<'_>>(&event.data).ok()?;
        Some(chunk.choices.0?.delta?.content?.into_owned())
    }

    fn read(&self, event: &StreamEvent) -> Read {
        if event.data.trim() == "[DONE]" {
            return Read::Done;
        }
        // Read in place: only what decides, nothing of the rest kept.
        let Ok(chunk) = serde_json::from_str::<ChatChunk<'_>>(&event.data) else {
            return Read::Skip;
        };
        if let Some(error) = chunk.error
            && let Some(error) = in_band_error(&event.event, &chunk.kind, error)
        {
            return Read::Error(error);
        }
        match chunk.choices.0.and_then(|choice| choice.delta?.content) {
            Some(text) if !text.is_empty() => Read::Content,
            _ => Read::Skip,
        }
    }
}

/// The token counts an event reports (see [`usage_in`]).
fn usage_of(event: &StreamEvent) -> (Option<u64>, Option<u64>) {
    if !event.data.contains("\"usage\"") {
        return (None, None);
    }
    usage_read(event.data.as_bytes())
}

/// The token counts a JSON reply or event reports: OpenAI's `usage` (`prompt_tokens`,
/// `completion_tokens`), Anthropic's (`input_tokens`, `output_tokens`, at the top or in
/// `message`). Only text that names a usage is read, and only that member is kept.
pub(super) fn usage_in(json: &[u8]) -> (Option<u64>, Option<u64>) {
    if !json.windows(7).any(|window| window == b"\"usage\"") {
        return (None, None);
    }
    usage_read(json)
}

fn usage_read(json: &[u8]) -> (Option<u64>, Option<u64>) {
    #[derive(serde::Deserialize, Default)]
    struct Usage {
        #[serde(default, alias = "input_tokens")]
        prompt_tokens: Option<u64>,
        #[serde(default, alias = "output_tokens")]
        completion_tokens: Option<u64>,
    }
    #[derive(serde::Deserialize)]
    struct Message {
        #[serde(default)]
        usage: Option<Usage>,
    }
    #[derive(serde::Deserialize)]
    struct Reported {
        #[serde(default)]
        usage: Option<Usage>,
        #[serde(default)]
        message: Option<Message>,
    }
    let Ok(reported) = serde_json::from_slice::<Reported>(json) else {
        return (None, None);
    };
    let usage = reported
        .usage
        .or_else(|| reported.message.and_then(|message| message.usage))
        .unwrap_or_default();
    (usage.prompt_tokens, usage.completion_tokens)
}

/// What [`OpenAiChat`] reads of an event's JSON, borrowed from it.
#[derive(serde::Deserialize)]
struct ChatChunk<'a> {
    #[serde(default, borrow)]
    choices: FirstOf<ChatChoice<'a>>,
    #[serde(default, borrow)]
    error: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct ChatChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<ChatDelta<'a>>,
}

#[derive(serde::Deserialize)]
struct ChatDelta<'a> {
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
}

/// The first element of a JSON array, the rest skipped unread.
struct FirstOf<T>(Option<T>);

impl<T> Default for FirstOf<T> {
    fn default() -> Self {
        FirstOf(None)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for FirstOf<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = FirstOf<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstOf<T>, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstOf(first))
            }
        }
        deserializer.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

/// Anthropic's messages stream: content is a `content_block_delta` (its `delta.text` or
/// `delta.partial_json`); `message_stop` ends the stream; `event: error` is an in-band error
/// (`{"type":"error","error":{"type":"overloaded_error",…}}`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AnthropicMessages;

impl StreamFormat for AnthropicMessages {
    fn usage(&self, event: &StreamEvent) -> (Option<u64>, Option<u64>) {
        usage_of(event)
    }

    /// A `content_block_delta`'s `delta.text` (or `delta.partial_json`).
    fn text(&self, event: &StreamEvent) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Delta<'a> {
            #[serde(default, borrow)]
            text: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow)]
            partial_json: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(serde::Deserialize)]
        struct Block<'a> {
            #[serde(default, borrow)]
            delta: Option<Delta<'a>>,
        }
        let delta = serde_json::from_str::<Block<'_>>(&event.data).ok()?.delta?;
        Some(delta.text.or(delta.partial_json)?.into_owned())
    }

    fn read(&self, event: &StreamEvent) -> Read {
        let Ok(chunk) = serde_json::from_str::<ChatChunk<'_>>(&event.data) else {
            return Read::Skip;
        };
        if let Some(error) = chunk.error
            && let Some(error) = in_band_error(&event.event, &chunk.kind, error)
        {
            return Read::Error(error);
        }
        let kind = chunk.kind.as_deref().unwrap_or(&event.event);
        match kind {
            "message_stop" => Read::Done,
            "content_block_delta" => Read::Content,
            _ => Read::Skip,
        }
    }
}

/// Any event is content, `event: error` an in-band error, and the end of the body the end of
/// the answer: for a service whose stream this crate does not know (the default of [`HttpDependency::builder`](super::HttpDependency::builder)).
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyEvent;

impl StreamFormat for AnyEvent {
    fn ends_with_done(&self) -> bool {
        false
    }

    fn read(&self, event: &StreamEvent) -> Read {
        if event.event == "error" {
            let chunk = serde_json::from_str::<ChatChunk<'_>>(&event.data).ok();
            let error = chunk.and_then(|chunk| {
                let error = chunk.error?;
                in_band_error("error", &chunk.kind, error)
            });
            return Read::Error(error.unwrap_or(InBand::of("")));
        }
        Read::Content
    }
}

/// The in-band error of an event whose JSON has an `error` member: OpenAI's (an object), or
/// Anthropic's (`event: error`, or `"type": "error"`); its `type`, else its `code`.
fn in_band_error(
    event: &str,
    kind: &Option<std::borrow::Cow<'_, str>>,
    error: &serde_json::value::RawValue,
) -> Option<InBand> {
    #[derive(serde::Deserialize)]
    struct ErrorBody<'a> {
        #[serde(default, borrow, rename = "type")]
        kind: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        code: Option<serde_json::Value>,
    }
    let body = serde_json::from_str::<ErrorBody<'_>>(error.get());
    let marked = event == "error" || kind.as_deref() == Some("error");
    let body = match body {
        Ok(body) => body,
        // Not an object: an error only when the event says so.
        Err(_) if marked => return Some(InBand::of("")),
        Err(_) => return None,
    };
    let code = body.code.as_ref().and_then(serde_json::Value::as_str);
    Some(InBand::of(body.kind.as_deref().or(code).unwrap_or("")))
}

/// How a stream that had delivered content ended in failure.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Interruption {
    /// The connection closed (or broke) before the end of the answer.
    Closed,
    /// Nothing (no event, no comment line) arrived within the idle timeout.
    Idle,
    /// The call's deadline (the caller's, or the total timeout) passed.
    Deadline,
    /// The service sent an error inside the stream.
    InBand(InBand),
    /// One event, or the whole stream, grew past its limit.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

/// A stream that failed after it had delivered content: never retried (the caller holds what
/// was delivered), counted against the dependency's breaker.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("the stream stopped after {delivered} events: {cause:?}")]
pub struct StreamInterrupted {
    /// How many content events had been delivered.
    pub delivered: usize,
    /// Why it stopped.
    pub cause: Interruption,
}

/// The parser over a streamed reply's bounded body.
type Body = Events<BoxStream<'static, Result<Bytes, BodyFault>>>;

/// The events of a streamed reply, opened: the content events, in order, then its end; or a
/// [`StreamInterrupted`] as its last item. Dropping it closes the connection at once.
pub struct HttpStream {
    first: Option<StreamEvent>,
    /// `None` once the stream has ended (its connection dropped with it).
    events: Option<Body>,
    format: Arc<dyn StreamFormat>,
    max_event: usize,
    delivered: usize,
    breaker: Option<CircuitBreaker>,
    /// The tokens reported so far, (input, output).
    usage: (Option<u64>, Option<u64>),
    /// What the call's GenAI series need, for a model's stream; taken when recorded.
    gen_ai: Option<GenAi>,
    /// The call's charge to its caller's budget, settled with the usage when it ends.
    charge: Option<super::quota::Charge>,
}

/// A model call's GenAI series, recorded once its stream ends (or is dropped), and its span,
/// which lasts as long as the stream.
struct GenAi {
    names: Arc<ModelNames>,
    span: tracing::Span,
    started: Instant,
    first_chunk: Duration,
    /// When the last content event arrived, and where the time between them goes.
    last_chunk: Instant,
    chunk_times: metrics::Histogram,
    /// Whether the stream waited for the network since the last content event: events read
    /// from one burst arrived together, and the clock is read once for them.
    waited: bool,
}

impl GenAi {
    /// A content event arrived: the time since the last one.
    fn chunk(&mut self) {
        if self.waited {
            self.waited = false;
            let now = Instant::now();
            let since = now.duration_since(self.last_chunk);
            self.last_chunk = now;
            self.chunk_times.record(since.as_secs_f64());
        } else {
            self.chunk_times.record(0.0);
        }
    }
}

impl std::fmt::Debug for HttpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpStream")
            .field("delivered", &self.delivered)
            .finish_non_exhaustive()
    }
}

impl Stream for HttpStream {
    type Item = Result<StreamEvent, StreamInterrupted>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.first.is_some() {
            this.delivered += 1;
            return Poll::Ready(this.first.take().map(Ok));
        }
        loop {
            let Some(events) = this.events.as_mut() else {
                // An answer without content ends here (after a failure, this records nothing).
                this.record(None);
                return Poll::Ready(None);
            };
            let event = match events.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(event))) => event,
                Poll::Pending => {
                    if let Some(gen_ai) = &mut this.gen_ai {
                        gen_ai.waited = true;
                    }
                    return Poll::Pending;
                }
                Poll::Ready(None) => return Poll::Ready(this.ended(None)),
                Poll::Ready(Some(Err(fault))) => return Poll::Ready(this.ended(Some(fault))),
            };
            match this.format.read(&event) {
                Read::Content => {
                    this.delivered += 1;
                    if let Some(gen_ai) = &mut this.gen_ai {
                        gen_ai.chunk();
                    }
                    return Poll::Ready(Some(Ok(event)));
                }
                // Usage comes in events of its own (OpenAI's last chunk, Anthropic's
                // `message_start` and `message_delta`), never with content.
                Read::Skip => count(&*this.format, &event, &mut this.usage),
                Read::Done => {
                    count(&*this.format, &event, &mut this.usage);
                    return Poll::Ready(this.end());
                }
                Read::Error(error) => return Poll::Ready(this.fail(Interruption::InBand(error))),
            }
        }
    }
}

impl HttpStream {
    /// The body ended (`None`), or failed below the parser: the answer's end or its
    /// interruption. Out of the way of the loop that reads each event.
    #[cold]
    #[inline(never)]
    fn ended(
        &mut self,
        fault: Option<SseError<BodyFault>>,
    ) -> Option<Result<StreamEvent, StreamInterrupted>> {
        match fault {
            None if !self.format.ends_with_done() => self.end(),
            None => self.fail(Interruption::Closed),
            Some(SseError::TooLarge) => {
                let limit = self.max_event;
                self.fail(Interruption::TooLarge { limit })
            }
            Some(SseError::Transport(fault)) => {
                let cause = match fault {
                    BodyFault::Broken => Interruption::Closed,
                    BodyFault::Idle => Interruption::Idle,
                    BodyFault::Deadline => Interruption::Deadline,
                    BodyFault::TooLong(limit) => Interruption::TooLarge { limit },
                };
                self.fail(cause)
            }
        }
    }
}

impl Drop for HttpStream {
    fn drop(&mut self) {
        // The caller stopped reading: the call ended there.
        self.record(Some("CANCELLED"));
    }
}

impl HttpStream {
    /// The text `event` (one of this stream's content events) carries, as its
    /// [`StreamFormat`] reads it: `choices[0].delta.content` for [`OpenAiChat`].
    pub fn text(&self, event: &StreamEvent) -> Option<String> {
        self.format.text(event)
    }

    /// The stream, reporting a failure after it opened to `breaker`, and (for a model)
    /// recording the call's GenAI series and closing its span when it ends: the call began at
    /// `started`.
    pub(super) fn reporting(
        mut self,
        breaker: Option<CircuitBreaker>,
        model: Option<(Arc<ModelNames>, tracing::Span)>,
        started: Instant,
    ) -> HttpStream {
        self.breaker = breaker;
        self.gen_ai = model.map(|(names, span)| GenAi {
            chunk_times: names.chunk_times(),
            names,
            span,
            started,
            first_chunk: started.elapsed(),
            last_chunk: Instant::now(),
            waited: false,
        });
        self
    }

    /// The answer ended: the connection goes.
    fn end(&mut self) -> Option<Result<StreamEvent, StreamInterrupted>> {
        self.events = None;
        self.record(None);
        None
    }

    /// The stream, charging its caller's budget with its usage when it ends (its estimate
    /// when it reported none).
    pub(super) fn charging(mut self, charge: Option<super::quota::Charge>) -> HttpStream {
        self.charge = charge;
        self
    }

    /// Records the call's GenAI series, and settles its charge, once.
    fn record(&mut self, failure: Option<&str>) {
        if let Some(charge) = self.charge.take() {
            let used = super::quota::total(self.usage).unwrap_or(charge.estimate());
            charge.settle(used);
        }
        if let Some(gen_ai) = self.gen_ai.take() {
            let first_chunk =
                (self.delivered > 0 || self.first.is_some()).then_some(gen_ai.first_chunk);
            gen_ai.names.ended(
                &gen_ai.span,
                gen_ai.started.elapsed(),
                first_chunk,
                self.usage,
                failure,
            );
        }
    }

    /// The stream failed for `cause`: the connection goes, the breaker hears of it.
    fn fail(&mut self, cause: Interruption) -> Option<Result<StreamEvent, StreamInterrupted>> {
        self.events = None;
        self.record(Some("STREAM_INTERRUPTED"));
        if let Some(breaker) = &self.breaker {
            let outcome = match &cause {
                Interruption::InBand(error) if error.kind == "rate_limit_error" => {
                    Outcome::RateLimited
                }
                Interruption::InBand(error) if !error.retryable => Outcome::Success,
                Interruption::Deadline => Outcome::DeadlineCut,
                _ => Outcome::Failure,
            };
            breaker.record_late(outcome);
        }
        Some(Err(StreamInterrupted {
            delivered: self.delivered,
            cause,
        }))
    }
}

/// The limits of a dependency's streams.
#[derive(Clone)]
pub(super) struct StreamSettings {
    pub(super) first_event: Option<Duration>,
    pub(super) idle: Option<Duration>,
    pub(super) max_event: usize,
    pub(super) format: Arc<dyn StreamFormat>,
}

/// A failure of the body below the parser.
#[derive(Debug)]
enum BodyFault {
    Broken,
    Idle,
    Deadline,
    TooLong(usize),
}

/// What opens a stream, at the bottom of the dependency's stream stack: one attempt.
#[derive(Clone)]
pub(super) struct StreamService {
    pub(super) http: HttpService,
    pub(super) settings: StreamSettings,
}

impl tower::Service<super::HttpCall> for StreamService {
    type Response = HttpStream;
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpStream, HttpError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: super::HttpCall) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.open(call).await })
    }
}

impl StreamService {
    async fn open(self, call: super::HttpCall) -> Result<HttpStream, HttpError> {
        let now = Instant::now();
        let deadline = call.time_limit().deadline_from(now);
        let first_by = self
            .settings
            .first_event
            .and_then(|limit| now.checked_add(limit));
        let (open_by, fired) =
            match Timeout::first(first_by.map(|at| (at, Timeout::Attempt)), deadline) {
                Some((at, fired)) => (Some(at), fired),
                None => (None, Timeout::Total),
            };
        let accept = HeaderValue::from_static("text/event-stream");
        let response = within(
            open_by.map(|at| (at, fired)),
            self.http.open(call, Some(accept)),
        )
        .await?;
        let body = bounded_body(response, self.http.max_reply, self.settings.idle, deadline);
        let mut events = Events::new(body, self.settings.max_event);
        let format = self.settings.format.clone();
        // Before the first content event, every failure is the attempt's.
        let mut usage = (None, None);
        let first = loop {
            let next = within(open_by.map(|at| (at, fired)), async {
                Ok::<_, HttpError>(events.next().await)
            })
            .await?;
            let event = match next {
                None => return Err(lost("the stream closed before its first content event")),
                Some(Err(SseError::TooLarge)) => {
                    return Err(Failure::Failed(HttpFailure::EventTooLarge {
                        limit: self.settings.max_event,
                    }));
                }
                Some(Err(SseError::Transport(fault))) => return Err(open_fault(fault, fired)),
                Some(Ok(event)) => event,
            };
            let read = format.read(&event);
            if matches!(read, Read::Skip | Read::Done) {
                // Anthropic's `message_start` counts the input before any content.
                count(&*format, &event, &mut usage);
            }
            match read {
                Read::Content => break Some(event),
                Read::Skip => {}
                // An answer with no content: the stream ends at once.
                Read::Done => break None,
                Read::Error(error) => return Err(Failure::Failed(HttpFailure::InBand(error))),
            }
        };
        let ended = first.is_none();
        Ok(HttpStream {
            first,
            events: (!ended).then_some(events),
            format,
            max_event: self.settings.max_event,
            delivered: 0,
            breaker: None,
            usage,
            gen_ai: None,
            charge: None,
        })
    }
}

/// Adds the tokens `event` reports, if any, to `usage`: the last report of each counts.
fn count(format: &dyn StreamFormat, event: &StreamEvent, usage: &mut (Option<u64>, Option<u64>)) {
    let (input, output) = format.usage(event);
    *usage = (input.or(usage.0), output.or(usage.1));
}

fn lost(detail: &str) -> HttpError {
    Failure::Failed(HttpFailure::Transport {
        detail: detail.to_owned(),
    })
}

/// A fault of the body before the first content event, as the attempt's failure.
fn open_fault(fault: BodyFault, fired: Timeout) -> HttpError {
    match fault {
        BodyFault::Broken => lost("the stream broke before its first content event"),
        // The idle limit is longer than the time to the first event, or the attempt's own
        // limit would have fired first; either way the attempt took too long.
        BodyFault::Idle => Failure::Timeout(fired),
        BodyFault::Deadline => Failure::Timeout(Timeout::Total),
        BodyFault::TooLong(limit) => Failure::Failed(HttpFailure::TooLarge { limit }),
    }
}

/// The body's chunks, each wait bounded by the idle limit and the deadline, the whole at most
/// `max` bytes as received; ended after the first fault.
fn bounded_body(
    response: reqwest::Response,
    max: usize,
    idle: Option<Duration>,
    deadline: Option<Instant>,
) -> BoxStream<'static, Result<Bytes, BodyFault>> {
    let body = response
        .bytes_stream()
        .map(|chunk| chunk.map_err(|_| BodyFault::Broken));
    let timed_out = |fired| match fired {
        Timeout::Idle => BodyFault::Idle,
        _ => BodyFault::Deadline,
    };
    let timed = within_time(body, idle, deadline, timed_out);
    crate::http::body::counted(timed, max, BodyFault::TooLong).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: &str, data: &str) -> StreamEvent {
        StreamEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn openai_events_are_read_by_their_delta() {
        let read = |data: &str| OpenAiChat.read(&event("", data));
        assert_eq!(
            read(r#"{"choices":[{"delta":{"content":"Hi"}}]}"#),
            Read::Content
        );
        assert_eq!(
            read(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#),
            Read::Skip
        );
        assert_eq!(
            read(r#"{"choices":[],"usage":{"prompt_tokens":3}}"#),
            Read::Skip
        );
        assert_eq!(read(" [DONE]"), Read::Done);
        assert_eq!(read("not json"), Read::Skip);
        assert_eq!(
            read(r#"{"error":{"type":"server_error","message":"/srv secret"}}"#),
            Read::Error(InBand::of("server_error"))
        );
        assert_eq!(
            read(r#"{"error":{"code":"rate_limit_exceeded"}}"#),
            Read::Error(InBand::of("rate_limit_exceeded"))
        );
        assert_eq!(read(r#"{"error":null,"choices":[]}"#), Read::Skip);
    }

    #[test]
    fn anthropic_events_are_read_by_their_type() {
        let read = |name: &str, data: &str| AnthropicMessages.read(&event(name, data));
        let delta =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
        assert_eq!(read("content_block_delta", delta), Read::Content);
        assert_eq!(
            read("message_start", r#"{"type":"message_start"}"#),
            Read::Skip
        );
        assert_eq!(
            read("message_stop", r#"{"type":"message_stop"}"#),
            Read::Done
        );
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"x"}}"#;
        assert_eq!(
            read("error", overloaded),
            Read::Error(InBand::of("overloaded_error"))
        );
    }

    #[test]
    fn in_band_errors_are_classified_and_their_names_bounded() {
        for retried in [
            "overloaded_error",
            "rate_limit_error",
            "api_error",
            "server_error",
            "timeout",
        ] {
            assert!(InBand::of(retried).retryable, "{retried}");
        }
        for refused in [
            "invalid_request_error",
            "authentication_error",
            "permission_error",
            "not_found_error",
        ] {
            assert!(!InBand::of(refused).retryable, "{refused}");
        }
        let hostile = InBand::of(&format!("x\n{}", "y".repeat(500)));
        assert_eq!(hostile.kind.len(), 64);
        assert!(
            hostile
                .kind
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        );
        assert_eq!(InBand::of("").kind, "unknown");
        assert_eq!(
            AnyEvent.read(&event("error", "oops")),
            Read::Error(InBand::of(""))
        );
        assert_eq!(AnyEvent.read(&event("", "anything")), Read::Content);
    }
}
