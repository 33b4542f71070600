//! Seeded values of the SDK's types for the tests of the direct ways: every kind of member,
//! empty and missing ones, escapes, every part kind, timestamps at and past protobuf's range,
//! numbers past 2^53.

use std::collections::HashMap;

use a2a::{
    Artifact, Message, Part, PartContent, Role, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use serde_json::{Value, json};

/// A seeded xorshift: the same values every run.
pub(super) struct Random(pub(super) u64);

impl Random {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(super) fn text(&mut self) -> String {
        const TEXTS: [&str; 14] = [
            "",
            "a",
            "t-1",
            "é",
            "quote\"d",
            "back\\slash",
            "\u{1}ctl",
            "line\nbreak",
            "emoji 😀",
            "\u{7f}",
            "x+00:00",
            "2026-01-01T00:00:00+00:00",
            "timestamp",
            "a longer text of more than thirty-two bytes, \"quoted\"",
        ];
        TEXTS[self.below(TEXTS.len())].to_owned()
    }

    pub(super) fn maybe_text(&mut self) -> Option<String> {
        (self.below(3) > 0).then(|| self.text())
    }

    pub(super) fn texts(&mut self) -> Option<Vec<String>> {
        match self.below(3) {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some((0..=self.below(3)).map(|_| self.text()).collect()),
        }
    }

    pub(super) fn value(&mut self, depth: usize) -> Value {
        let numbers = [
            json!(0),
            json!(-0.0),
            json!(1),
            json!(-32603.0),
            json!(0.5),
            json!(1e300),
            json!(1.5e-7),
            json!(9_007_199_254_740_993u64),
            json!(i64::MIN),
            json!(u64::MAX),
        ];
        match self.below(if depth > 3 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => numbers[self.below(numbers.len())].clone(),
            3 => Value::String(self.text()),
            4 => Value::Array((0..self.below(4)).map(|_| self.value(depth + 1)).collect()),
            _ => Value::Object(
                (0..self.below(4))
                    .map(|_| (self.key(), self.value(depth + 1)))
                    .collect(),
            ),
        }
    }

    pub(super) fn key(&mut self) -> String {
        const KEYS: [&str; 8] = [
            "timestamp",
            "statusTimestampAfter",
            "B",
            "a",
            "é",
            "",
            "k\"",
            "b",
        ];
        KEYS[self.below(KEYS.len())].to_owned()
    }

    pub(super) fn metadata(&mut self) -> Option<HashMap<String, Value>> {
        match self.below(3) {
            0 => None,
            1 => Some(HashMap::new()),
            _ => Some(
                (0..=self.below(4))
                    .map(|_| {
                        let key = self.key();
                        let value = match self.below(3) {
                            0 => Value::String("2026-11-28T10:00:00.5+00:00".into()),
                            _ => self.value(1),
                        };
                        (key, value)
                    })
                    .collect(),
            ),
        }
    }

    pub(super) fn part(&mut self) -> Part {
        let content = match self.below(4) {
            0 => PartContent::Text(self.text()),
            1 => PartContent::Raw((0..self.below(7)).map(|_| self.next() as u8).collect()),
            2 => PartContent::Url(self.text()),
            _ => PartContent::Data(self.value(0)),
        };
        Part {
            content,
            filename: self.maybe_text(),
            media_type: self.maybe_text(),
            metadata: self.metadata(),
        }
    }

    pub(super) fn message(&mut self) -> Message {
        Message {
            message_id: self.text(),
            context_id: self.maybe_text(),
            task_id: self.maybe_text(),
            role: [Role::Unspecified, Role::User, Role::Agent][self.below(3)].clone(),
            parts: (0..self.below(3)).map(|_| self.part()).collect(),
            metadata: self.metadata(),
            extensions: self.texts(),
            reference_task_ids: self.texts(),
        }
    }

    pub(super) fn status(&mut self) -> TaskStatus {
        const STATES: [TaskState; 9] = [
            TaskState::Unspecified,
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::InputRequired,
            TaskState::Rejected,
            TaskState::AuthRequired,
        ];
        // Whole seconds, milli-, micro- and nanoseconds, the range's ends and past them.
        let timestamps = [
            (1_795_000_000, 0),
            (1_795_000_000, 500_000_000),
            (1_795_000_000, 123_456_000),
            (1_795_000_000, 123_456_789),
            (-62_135_596_800, 0),
            (253_402_300_799, 999_999_999),
            (253_402_300_800, 0),
            (-62_135_596_801, 0),
            (0, 1),
        ];
        let timestamp = match self.below(timestamps.len() + 1) {
            0 => None,
            n => {
                let (seconds, nanos) = timestamps[n - 1];
                chrono::DateTime::from_timestamp(seconds, nanos)
            }
        };
        TaskStatus {
            state: STATES[self.below(STATES.len())].clone(),
            message: (self.below(3) == 0).then(|| self.message()),
            timestamp,
        }
    }

    pub(super) fn artifact(&mut self) -> Artifact {
        Artifact {
            artifact_id: self.text(),
            name: self.maybe_text(),
            description: self.maybe_text(),
            parts: (0..self.below(3)).map(|_| self.part()).collect(),
            metadata: self.metadata(),
            extensions: self.texts(),
        }
    }

    pub(super) fn task(&mut self) -> Task {
        Task {
            id: self.text(),
            context_id: self.text(),
            status: self.status(),
            artifacts: match self.below(3) {
                0 => None,
                1 => Some(Vec::new()),
                _ => Some((0..=self.below(2)).map(|_| self.artifact()).collect()),
            },
            history: match self.below(3) {
                0 => None,
                1 => Some(Vec::new()),
                _ => Some((0..=self.below(2)).map(|_| self.message()).collect()),
            },
            metadata: self.metadata(),
        }
    }

    pub(super) fn event(&mut self) -> StreamResponse {
        match self.below(4) {
            0 => StreamResponse::Task(self.task()),
            1 => StreamResponse::Message(self.message()),
            2 => StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: self.text(),
                context_id: self.text(),
                status: self.status(),
                metadata: self.metadata(),
            }),
            _ => StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: self.text(),
                context_id: self.text(),
                artifact: self.artifact(),
                append: [None, Some(false), Some(true)][self.below(3)],
                last_chunk: [None, Some(false), Some(true)][self.below(3)],
                metadata: self.metadata(),
            }),
        }
    }

    /// A SendMessage request with every member the conversion reads.
    pub(super) fn request(&mut self) -> a2a::SendMessageRequest {
        let configuration = (self.below(2) == 0).then(|| a2a::SendMessageConfiguration {
            accepted_output_modes: self.texts(),
            task_push_notification_config: (self.below(2) == 0).then(|| {
                a2a::TaskPushNotificationConfig {
                    url: self.text(),
                    id: self.maybe_text(),
                    task_id: self.text(),
                    token: self.maybe_text(),
                    authentication: (self.below(2) == 0).then(|| a2a::AuthenticationInfo {
                        scheme: self.text(),
                        credentials: self.maybe_text(),
                    }),
                    tenant: self.maybe_text(),
                }
            }),
            history_length: [None, Some(0), Some(-1), Some(3)][self.below(4)],
            return_immediately: [None, Some(false), Some(true)][self.below(3)],
        });
        a2a::SendMessageRequest {
            tenant: self.maybe_text(),
            message: self.message(),
            configuration,
            metadata: self.metadata(),
        }
    }
}
