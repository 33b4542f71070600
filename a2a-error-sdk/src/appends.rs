//! [`Appends`]: a forwarded answer's tokens, coalesced before the SDK's handler takes them.
//!
//! The SDK's `DefaultRequestHandler` applies each event of an execution to a copy of the
//! whole task and saves that copy (a2a-server-lf 0.5, `drive_execution`): an answer forwarded
//! a token an event, each token a part appended to one artifact, cost time quadratic in its
//! tokens (8,000 tokens: 14 s of CPU, the last 2,000 six times the first). So the guard gives
//! the handler a forwarded answer's appends joined: one append when the text waiting is at
//! least what the artifact already holds (at least 1 KiB, at most 1 MiB), when it has waited
//! [`LATEST`], and before any other event. The handler then copies the task about
//! log2(answer / 1 KiB) + seconds times, and the stored artifact holds that many parts.
//!
//! The caller of the stream still gets every token as its own event, at once: the guard hands
//! each one to the request's link (`Watch::send_token`), stamped with the number of events it
//! had given the handler, and the bridge's stream sends it between the same two events of the
//! handler as it was made; the joined append, marked with [`SENT_KEY`], is not sent to that
//! caller again. A reader that joins later (SubscribeToTask, a resumed stream) and push
//! notifications receive the joined appends, the marker removed: the same text in fewer
//! events.

use std::future::Future;
use std::time::Duration;

use a2a::{Artifact, Part, PartContent, StreamResponse, TaskArtifactUpdateEvent};
use serde_json::Value;

/// The key of the event metadata that marks a joined append whose tokens the stream's caller
/// has received already; removed before any event leaves the process.
pub(crate) const SENT_KEY: &str = "a2a-error.sent";

/// The longest a token waits before the handler (and so the task store) has it.
pub(crate) const LATEST: Duration = Duration::from_secs(1);

/// The least text joined into one append (but at [`LATEST`] and the answer's end).
const LEAST: usize = 1 << 10;
/// The most text joined into one append: the text waiting is at most that (and a token).
const MOST: usize = 1 << 20;

/// The appends of one artifact of a forwarded answer, text waiting for the handler.
pub(crate) struct Appends {
    task_id: String,
    context_id: String,
    artifact: String,
    /// The bytes of text the handler has been given.
    given: usize,
    /// The text not yet given.
    waiting: String,
    /// Whether the stream's caller receives the tokens as they come (the joined appends are
    /// marked [`SENT_KEY`]).
    sent: bool,
    /// When the oldest text waiting came.
    since: Option<tokio::time::Instant>,
    /// The timer of the text waiting ([`LATEST`] after `since`), made the first time the
    /// execution has no event ready while text waits.
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

/// The text of `update` when it is one text part and nothing else of note.
fn plain_text(update: &TaskArtifactUpdateEvent) -> Option<&str> {
    let [part] = update.artifact.parts.as_slice() else {
        return None;
    };
    let plain = update.metadata.is_none()
        && update.last_chunk.is_none()
        && update.artifact.metadata.is_none()
        && part.metadata.is_none()
        && part.filename.is_none()
        && part.media_type.is_none();
    match &part.content {
        PartContent::Text(text) if plain => Some(text),
        _ => None,
    }
}

impl Appends {
    /// The appends to the artifact `event` makes, when it is a forwarded answer's first:
    /// one text part, not an append. `sent`: the stream's caller gets the tokens at once.
    pub(crate) fn start(event: &StreamResponse, sent: bool) -> Option<Appends> {
        let StreamResponse::ArtifactUpdate(update) = event else {
            return None;
        };
        let text = plain_text(update).filter(|_| update.append != Some(true))?;
        Some(Appends {
            task_id: update.task_id.clone(),
            context_id: update.context_id.clone(),
            artifact: update.artifact.artifact_id.clone(),
            given: text.len(),
            waiting: String::new(),
            sent,
            since: None,
            timer: None,
        })
    }

    /// The text `event` appends to this artifact, when it is a plain text append.
    pub(crate) fn text_of<'a>(&self, event: &'a StreamResponse) -> Option<&'a str> {
        match event {
            StreamResponse::ArtifactUpdate(update)
                if update.append == Some(true)
                    && update.artifact.artifact_id == self.artifact
                    && update.task_id == self.task_id =>
            {
                plain_text(update)
            }
            _ => None,
        }
    }

    /// Whether the stream's caller receives the tokens as they come.
    pub(crate) fn sent(&self) -> bool {
        self.sent
    }

    /// Adds a token's text to what waits.
    pub(crate) fn add(&mut self, text: &str) {
        if self.waiting.is_empty() {
            self.since = Some(tokio::time::Instant::now());
        }
        self.waiting.push_str(text);
    }

    /// Whether the text waiting is to be given now: as much as was given (a doubling), within
    /// [`LEAST`] and [`MOST`].
    pub(crate) fn due(&self) -> bool {
        self.waiting.len() >= self.given.clamp(LEAST, MOST)
    }

    /// The text waiting as one append once it has waited [`LATEST`]; else `None`, and `cx`
    /// is woken when it has.
    pub(crate) fn poll_waited(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> Option<StreamResponse> {
        let since = self.since?;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(since + LATEST)));
        if timer.as_mut().poll(cx).is_pending() {
            return None;
        }
        self.join()
    }

    /// The text waiting as one append, if any waits.
    pub(crate) fn join(&mut self) -> Option<StreamResponse> {
        if self.waiting.is_empty() {
            return None;
        }
        let text = std::mem::take(&mut self.waiting);
        self.given += text.len();
        self.since = None;
        self.timer = None;
        let metadata = self
            .sent
            .then(|| std::collections::HashMap::from([(SENT_KEY.to_owned(), Value::Bool(true))]));
        Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact: Artifact {
                artifact_id: self.artifact.clone(),
                name: None,
                description: None,
                parts: vec![Part::text(text)],
                metadata: None,
                extensions: None,
            },
            append: Some(true),
            last_chunk: None,
            metadata,
        }))
    }
}

/// Whether `event` is a joined append its stream's caller has received as tokens; the mark
/// is removed either way (`Some(true)`: marked).
pub(crate) fn unmark(event: &mut StreamResponse) -> bool {
    let StreamResponse::ArtifactUpdate(update) = event else {
        return false;
    };
    let Some(metadata) = &mut update.metadata else {
        return false;
    };
    let marked = metadata.remove(SENT_KEY).is_some();
    if metadata.is_empty() {
        update.metadata = None;
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &str, append: bool) -> StreamResponse {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact: Artifact {
                artifact_id: "a".into(),
                name: None,
                description: None,
                parts: vec![Part::text(text)],
                metadata: None,
                extensions: None,
            },
            append: append.then_some(true),
            last_chunk: None,
            metadata: None,
        })
    }

    #[test]
    fn appends_join_as_the_artifact_doubles() {
        let mut appends = Appends::start(&token("0123456789", false), true).unwrap();
        assert!(Appends::start(&token("x", true), true).is_none());
        let mut joins = Vec::new();
        for _ in 0..100_000 {
            let event = token("abcd", true);
            let text = appends.text_of(&event).unwrap();
            appends.add(text);
            if appends.due() {
                joins.push(appends.join().unwrap());
            }
        }
        joins.extend(appends.join());
        // 400,010 bytes in 1 KiB, 2 KiB, 4 KiB, ... : about log2(400 KB / 1 KiB) joins.
        assert!((8..=11).contains(&joins.len()), "{} joins", joins.len());
        let text: usize = joins
            .iter()
            .map(|event| match event {
                StreamResponse::ArtifactUpdate(update) => match &update.artifact.parts[0].content {
                    PartContent::Text(text) => text.len(),
                    _ => 0,
                },
                _ => 0,
            })
            .sum();
        assert_eq!(text, 400_000);
        // Each join is marked for the caller that had its tokens, and the mark comes off.
        let mut last = joins.pop().unwrap();
        assert!(unmark(&mut last));
        assert!(!unmark(&mut last));
        let StreamResponse::ArtifactUpdate(update) = last else {
            unreachable!()
        };
        assert!(update.metadata.is_none());
        assert_eq!(update.append, Some(true));
    }

    #[test]
    fn only_plain_text_appends_to_the_same_artifact_join() {
        let appends = Appends::start(&token("a", false), false).unwrap();
        let StreamResponse::ArtifactUpdate(mut other) = token("b", true) else {
            unreachable!()
        };
        other.artifact.artifact_id = "other".into();
        assert!(
            appends
                .text_of(&StreamResponse::ArtifactUpdate(other.clone()))
                .is_none()
        );
        other.artifact.artifact_id = "a".into();
        other.last_chunk = Some(true);
        assert!(
            appends
                .text_of(&StreamResponse::ArtifactUpdate(other.clone()))
                .is_none()
        );
        other.last_chunk = None;
        other.artifact.parts.push(Part::text("c"));
        assert!(
            appends
                .text_of(&StreamResponse::ArtifactUpdate(other))
                .is_none()
        );
        // Not marked when the caller does not receive the tokens as they come.
        let mut appends = appends;
        appends.add("x");
        let mut joined = appends.join().unwrap();
        assert!(!unmark(&mut joined));
        assert!(appends.join().is_none());
    }
}
