//! Reading a `text/event-stream` body, whoever sends it (an agent, a model provider, an MCP
//! server): the WHATWG "interpreting an event stream" algorithm, keeping `data` and `event`
//! (`id` and `retry` are read and dropped: no caller of this crate resumes with
//! `Last-Event-ID`; an A2A client resumes with `SubscribeToTask`).
//!
//! Written here rather than taken from a crate. eventsource-stream 0.2.3 (what this client
//! used) panics on a byte order mark, copies the rest of its buffer for every line (quadratic:
//! 512 KiB of blank lines cost 27 s of CPU inside one poll, past any deadline), loses a last
//! event whose lines end in CR and clones a long `id` into every event. sse-parse 0.1 is linear
//! but drops an oversized event silently, where a caller must learn that the peer broke its
//! limit, and copies the last id into every event. What this parser guarantees:
//! - linear time: every byte is looked at a bounded number of times, whatever the chunking;
//! - bounded work per poll ([`POLL_BUDGET`] bytes, then it yields), so timers above it fire;
//! - bounded memory: the event being read (its data and its unfinished line) is at most
//!   `max_event` bytes, or the stream fails with [`SseError::TooLarge`];
//! - one leading BOM stripped (even split across chunks), CR, LF and CRLF line ends, and an
//!   event dispatched as soon as its blank line is complete (a CR is not held back waiting to
//!   see whether an LF follows).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

/// The bytes parsed in one poll before the stream yields to the runtime.
pub(crate) const POLL_BUDGET: usize = 64 << 10;

/// The longest event type kept: the types callers match (A2A's `error`, a provider's
/// `message_delta`) are short; a longer name is cut (and so names no type a caller knows).
const MAX_EVENT_TYPE: usize = 32;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One event of a stream (server-sent events): an agent's, or a streamed reply of an HTTP
/// dependency. Decoded as UTF-8 as the SSE specification says (an invalid sequence becomes
/// U+FFFD), once, by the parser every reader shares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamEvent {
    /// The `event` field (empty when none was sent: a plain `message`).
    pub event: String,
    /// The `data` lines, joined by LF.
    pub data: String,
}

impl StreamEvent {
    /// Whether the event's type is `name`.
    pub(crate) fn is(&self, name: &str) -> bool {
        self.event == name
    }
}

/// `bytes` as text: taken as they are when valid UTF-8, copied with U+FFFD in place of each
/// invalid sequence when not.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// The event being read, and where the parser is in its lines.
#[derive(Debug)]
pub(crate) struct Parser {
    /// The unfinished line (only when a line spans chunks; a line inside one chunk is read in
    /// place).
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event: Vec<u8>,
    /// The last byte fed was a CR: an LF right after it ends no second line.
    after_cr: bool,
    /// How many bytes of a leading BOM have been matched; `None` once decided.
    bom: Option<usize>,
    max_event: usize,
}

/// The event grew past the parser's limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge;

impl Parser {
    /// A parser for events of at most `max_event` bytes (data and unfinished line together).
    pub(crate) fn new(max_event: usize) -> Self {
        Parser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event: Vec::new(),
            after_cr: false,
            bom: Some(0),
            max_event,
        }
    }

    /// Reads `input` until it ends or an event is complete: how many bytes were consumed and
    /// the event, if one was dispatched. Call again with the rest.
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<StreamEvent>), TooLarge> {
        let mut at = self.skip_bom(input);
        while at < input.len() {
            if self.after_cr {
                self.after_cr = false;
                if input[at] == b'\n' {
                    at += 1;
                    continue;
                }
            }
            let rest = &input[at..];
            let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.grow_line(rest)?;
                return Ok((input.len(), None));
            };
            self.after_cr = rest[end] == b'\r';
            at += end + 1;
            let event = if self.line.is_empty() {
                self.line_ended(&rest[..end])?
            } else {
                self.grow_line(&rest[..end])?;
                let line = std::mem::take(&mut self.line);
                let event = self.line_ended(&line);
                // Keep the buffer's allocation for the next long line.
                self.line = line;
                self.line.clear();
                event?
            };
            if event.is_some() {
                return Ok((at, event));
            }
        }
        Ok((at, None))
    }

    /// Strips a leading BOM, however it is split across chunks: the bytes consumed.
    fn skip_bom(&mut self, input: &[u8]) -> usize {
        let Some(matched) = self.bom else { return 0 };
        let mut n = matched;
        let mut taken = 0;
        while n < BOM.len() && taken < input.len() {
            if input[taken] != BOM[n] {
                // Not a BOM after all: what matched so far is content.
                self.bom = None;
                self.line.extend_from_slice(&BOM[..n]);
                return taken;
            }
            n += 1;
            taken += 1;
        }
        self.bom = (n < BOM.len()).then_some(n);
        taken
    }

    fn grow_line(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        if self.line.len() + self.data.len() + bytes.len() > self.max_event {
            return Err(TooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Processes one whole line (without its end).
    fn line_ended(&mut self, line: &[u8]) -> Result<Option<StreamEvent>, TooLarge> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max_event {
                    return Err(TooLarge);
                }
                // One allocation for the common event of one data line, LF included.
                self.data.reserve(value.len() + 1);
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event
                    .extend_from_slice(&value[..value.len().min(MAX_EVENT_TYPE)]);
            }
            // `id`, `retry` and unknown fields: nothing this client uses.
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<StreamEvent> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the LF after the last data line
        Some(StreamEvent {
            event: text(event),
            data: text(data),
        })
    }
}

/// Why an event stream ended in error.
#[derive(Debug)]
pub(crate) enum SseError<T> {
    /// The body failed below the parser.
    Transport(T),
    /// An event (or an unfinished line) grew past the limit.
    TooLarge,
}

/// The events of a stream of byte chunks. An event still unfinished when the body ends is
/// dropped, as the standard says.
pub(crate) struct Events<S> {
    body: S,
    parser: Parser,
    chunk: Bytes,
    ended: bool,
}

impl<S> Events<S> {
    /// The events of `body`, each at most `max_event` bytes.
    pub(crate) fn new(body: S, max_event: usize) -> Self {
        Events {
            body,
            parser: Parser::new(max_event),
            chunk: Bytes::new(),
            ended: false,
        }
    }
}

impl<S, T> Stream for Events<S>
where
    S: Stream<Item = Result<Bytes, T>> + Unpin,
{
    type Item = Result<StreamEvent, SseError<T>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let mut budget = POLL_BUDGET;
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if !this.chunk.is_empty() {
                if budget == 0 {
                    // A peer's bytes that make no event must not hold the thread: let the
                    // runtime run timers and other tasks, then carry on.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let take = this.chunk.len().min(budget);
                match this.parser.feed(&this.chunk[..take]) {
                    Err(TooLarge) => {
                        this.ended = true;
                        return Poll::Ready(Some(Err(SseError::TooLarge)));
                    }
                    Ok((used, event)) => {
                        budget -= used;
                        let _ = this.chunk.split_to(used);
                        if let Some(event) = event {
                            return Poll::Ready(Some(Ok(event)));
                        }
                    }
                }
                continue;
            }
            match Pin::new(&mut this.body).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.ended = true,
                Poll::Ready(Some(Err(error))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(SseError::Transport(error))));
                }
                Poll::Ready(Some(Ok(chunk))) => this.chunk = chunk,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{StreamExt, stream};
    use proptest::prelude::*;

    /// The standard's algorithm on the whole input at once, written as plainly as possible:
    /// the model the incremental parser is checked against.
    fn reference(input: &[u8]) -> Vec<StreamEvent> {
        let input = input.strip_prefix(&BOM[..]).unwrap_or(input);
        let mut lines = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < input.len() {
            match input[i] {
                b'\r' => {
                    lines.push(&input[start..i]);
                    if input.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    start = i + 1;
                }
                b'\n' => {
                    lines.push(&input[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        // A last line without its end is never processed.
        let (mut events, mut data, mut event) = (Vec::new(), Vec::<u8>::new(), Vec::new());
        let mut has_data = false;
        for line in lines {
            if line.is_empty() {
                if has_data {
                    data.pop();
                    events.push(StreamEvent {
                        event: text(std::mem::take(&mut event)),
                        data: text(std::mem::take(&mut data)),
                    });
                }
                event.clear();
                data.clear();
                has_data = false;
                continue;
            }
            if line[0] == b':' {
                continue;
            }
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(c) => (
                    &line[..c],
                    line[c + 1..].strip_prefix(b" ").unwrap_or(&line[c + 1..]),
                ),
                None => (line, &[][..]),
            };
            if name == b"data" {
                data.extend_from_slice(value);
                data.push(b'\n');
                has_data = true;
            } else if name == b"event" {
                event = value[..value.len().min(MAX_EVENT_TYPE)].to_vec();
            }
        }
        events
    }

    /// Feeds `chunks` through the stream adapter.
    fn parse(chunks: Vec<Vec<u8>>, max_event: usize) -> Result<Vec<StreamEvent>, ()> {
        let body = stream::iter(chunks.into_iter().map(|c| Ok::<_, ()>(Bytes::from(c))));
        let mut events = Events::new(body, max_event);
        // The body is always ready, so a pending poll is the budget's yield: poll again.
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut out = Vec::new();
        loop {
            match events.poll_next_unpin(&mut cx) {
                Poll::Pending => {}
                Poll::Ready(None) => return Ok(out),
                Poll::Ready(Some(event)) => out.push(event.map_err(|_| ())?),
            }
        }
    }

    fn whole(text: &[u8]) -> Vec<StreamEvent> {
        parse(vec![text.to_vec()], usize::MAX).unwrap()
    }

    fn event(event: &str, data: &str) -> StreamEvent {
        StreamEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn line_ends_and_fields() {
        let expected = vec![event("", "a\nb"), event("error", "c")];
        for text in [
            "data: a\ndata:b\n\nevent: error\ndata: c\n\n",
            "data: a\rdata:b\r\revent: error\rdata: c\r\r",
            "data: a\r\ndata:b\r\n\r\nevent: error\r\ndata: c\r\n\r\n",
            ": comment\nid: 1\nretry: 5\ndata: a\nunknown\ndata:b\n\nevent: error\ndata: c\n\n",
        ] {
            assert_eq!(whole(text.as_bytes()), expected, "{text:?}");
        }
        // No data, no event; a field with no colon is a field with an empty value.
        assert_eq!(whole(b"event: x\n\n"), vec![]);
        assert_eq!(whole(b"data\n\n"), vec![event("", "")]);
        // An event without its blank line at the end of the body is dropped.
        assert_eq!(whole(b"data: a\n\ndata: b\n"), vec![event("", "a")]);
    }

    #[test]
    fn a_bom_is_stripped_once_wherever_the_chunks_split_it() {
        let text = b"\xEF\xBB\xBFdata: x\n\n".to_vec();
        for split in 0..=4 {
            let chunks = vec![text[..split].to_vec(), text[split..].to_vec()];
            assert_eq!(parse(chunks, 1 << 20).unwrap(), vec![event("", "x")]);
        }
        let bytewise = text.iter().map(|&b| vec![b]).collect();
        assert_eq!(parse(bytewise, 1 << 20).unwrap(), vec![event("", "x")]);
        // A second BOM is content (an unknown field name here); a broken one is content.
        assert_eq!(whole(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"), vec![]);
        assert_eq!(whole(b"\xEF\xBBdata: x\n\n"), vec![]);
        assert_eq!(whole(b"\xEF\xBB\n\ndata: y\n\n"), vec![event("", "y")]);
    }

    #[test]
    fn a_cr_ended_event_is_dispatched_without_waiting_for_more() {
        let mut parser = Parser::new(1 << 20);
        let (used, got) = parser.feed(b"data: last\r\r").unwrap();
        assert_eq!((used, got), (12, Some(event("", "last"))));
    }

    #[test]
    fn events_and_unfinished_lines_are_bounded() {
        let long = format!("data: {}\n\n", "x".repeat(100));
        assert!(parse(vec![long.clone().into_bytes()], 50).is_err());
        assert_eq!(parse(vec![long.into_bytes()], 200).unwrap().len(), 1);
        // An event that never ends, fed in small chunks.
        let chunks = (0..100).map(|_| b"data: 0123456789\n".to_vec()).collect();
        assert!(parse(chunks, 1000).is_err());
        // A line that never ends.
        let chunks = (0..100).map(|_| vec![b'x'; 100]).collect();
        assert!(parse(chunks, 1000).is_err());
        // Blank lines and comments hold nothing: 4 MiB of them pass a 1 KiB limit.
        let blank = vec![b'\n'; 4 << 20];
        assert_eq!(parse(vec![blank], 1024).unwrap(), vec![]);
    }

    #[test]
    fn a_long_id_is_not_copied_into_events() {
        let mut text = format!("id: {}\n", "i".repeat(2 << 20)).into_bytes();
        for _ in 0..1000 {
            text.extend_from_slice(b"data: 1\n\n");
        }
        let events = whole(&text);
        assert_eq!(events.len(), 1000);
        assert!(events.iter().all(|e| e.data == "1" && e.event.is_empty()));
    }

    #[test]
    fn each_poll_does_bounded_work() {
        // 1 MiB of blank lines in one chunk: the first poll parses the budget and yields.
        let body = stream::iter([Ok::<_, ()>(Bytes::from(vec![b'\n'; 1 << 20]))]);
        let mut events = Events::new(body, 1024);
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut polls = 0;
        loop {
            polls += 1;
            match Pin::new(&mut events).poll_next(&mut cx) {
                Poll::Pending => continue,
                Poll::Ready(None) => break,
                Poll::Ready(Some(other)) => panic!("{other:?}"),
            }
        }
        assert_eq!(polls, (1 << 20) / POLL_BUDGET);
    }

    fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"data".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"data: ".to_vec()),
            Just(b"event: error".to_vec()),
            Just(b"id: 7".to_vec()),
            Just(b":".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(BOM.to_vec()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn matches_the_reference_model_whatever_the_chunking(
            input in sse_bytes(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for cut in cuts {
                chunks.push(input[last..cut].to_vec());
                last = cut;
            }
            chunks.push(input[last..].to_vec());
            prop_assert_eq!(parse(chunks, usize::MAX).unwrap(), reference(&input));
        }
    }
}
