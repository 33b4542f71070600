//! The A2A 1.0 JSON of the SDK's replies and events (a task, a SendMessage reply, a stream's
//! event) written straight from the SDK's types: the bytes of the SDK's conversion
//! ([`super::to_json`]'s general way: to protobuf, through its bytes into the protobuf JSON
//! type, then written sorted), without making two more copies of the value and encoding one
//! of them on the way. A SendMessage reply through the bridge: ~30k instructions that way.
//!
//! What the conversion does, this does: a member protobuf's JSON leaves out at its default
//! (an empty string or list, a zero enum, `false`) is left out; members are in key order at
//! every level (a type's members are listed here in that order, a map's are sorted); a
//! metadata number is a double, written as an integer when integral within ±2^53; a member
//! named `timestamp` or `statusTimestampAfter` anywhere, metadata included, has its
//! `+00:00` written `Z`. What it would not write as the conversion does (a timestamp in a
//! leap second, a metadata value nested deeper than [`DEPTH`], which protobuf's decoder
//! refuses) it declines, and the general way writes it, or fails as it does.

use std::any::Any;
use std::collections::HashMap;

use a2a::{
    Artifact, Message, Part, PartContent, Role, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use base64::Engine as _;
use serde_json::Value;

use a2a_error_runtime::wire::data::write_str;
use a2a_error_runtime::wire::protojson::{TIMESTAMP_MEMBERS, integral};

/// The deepest a metadata value is written here (a member's object or list inside another
/// counts one more); deeper ones go the general way, whose protobuf decoder stops at 100
/// levels of messages (a level of a value is two of them).
const DEPTH: usize = 32;

/// The value was not written: it has something written the general way.
pub(super) struct Declined;

type Written = Result<(), Declined>;

/// `value`'s JSON when it is one of the types written here and holds nothing declined; else
/// `None` (the general way).
pub(super) fn to_vec(value: &dyn Any) -> Option<Vec<u8>> {
    to_vec_after(&[], value)
}

/// `head`, then `value`'s JSON, in one block, as [`to_vec`].
pub(super) fn to_vec_after(head: &[u8], value: &dyn Any) -> Option<Vec<u8>> {
    a2a_error_runtime::wire::scratch::with(|out| {
        out.extend_from_slice(head);
        match any(value, out)? {
            Ok(()) => Some(out.to_vec()),
            Err(Declined) => None,
        }
    })
}

/// Writes `value` when it is one of the types written here.
fn any(value: &dyn Any, out: &mut Vec<u8>) -> Option<Written> {
    if let Some(reply) = value.downcast_ref::<SendMessageResponse>() {
        Some(send_message_response(reply, out))
    } else if let Some(event) = value.downcast_ref::<StreamResponse>() {
        Some(stream_response(event, out))
    } else {
        value.downcast_ref::<Task>().map(|found| task(found, out))
    }
}

fn send_message_response(reply: &SendMessageResponse, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    match reply {
        SendMessageResponse::Message(found) => message(found, object.key("message"))?,
        SendMessageResponse::Task(found) => task(found, object.key("task"))?,
    }
    object.end();
    Ok(())
}

fn stream_response(event: &StreamResponse, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    match event {
        StreamResponse::ArtifactUpdate(update) => {
            artifact_update(update, object.key("artifactUpdate"))?
        }
        StreamResponse::Message(found) => message(found, object.key("message"))?,
        StreamResponse::StatusUpdate(update) => status_update(update, object.key("statusUpdate"))?,
        StreamResponse::Task(found) => task(found, object.key("task"))?,
    }
    object.end();
    Ok(())
}

fn task(task: &Task, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    object.list("artifacts", task.artifacts.as_deref(), artifact)?;
    object.str("contextId", &task.context_id);
    object.list("history", task.history.as_deref(), message)?;
    object.str("id", &task.id);
    object.metadata(&task.metadata)?;
    status(&task.status, object.key("status"))?;
    object.end();
    Ok(())
}

fn status(status: &TaskStatus, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    if let Some(found) = &status.message {
        message(found, object.key("message"))?;
    }
    if let Some(state) = state_name(&status.state) {
        object.str("state", state);
    }
    if let Some(timestamp) = &status.timestamp {
        // The conversion leaves out what protobuf's timestamp cannot hold.
        if let Some(proto) = a2a_pb::pbconv::to_proto_timestamp(timestamp) {
            // A leap second's nanoseconds (1e9 and over): as the general way writes it.
            if !(0..1_000_000_000).contains(&proto.nanos) {
                return Err(Declined);
            }
            let text = timestamp.to_rfc3339();
            let out = object.key("timestamp");
            out.push(b'"');
            match text.strip_suffix("+00:00") {
                Some(utc) => {
                    out.extend_from_slice(utc.as_bytes());
                    out.push(b'Z');
                }
                None => out.extend_from_slice(text.as_bytes()),
            }
            out.push(b'"');
        }
    }
    object.end();
    Ok(())
}

fn message(message: &Message, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    object.opt_str("contextId", &message.context_id);
    object.strings("extensions", message.extensions.as_deref());
    object.str("messageId", &message.message_id);
    object.metadata(&message.metadata)?;
    object.list("parts", Some(&message.parts), part)?;
    object.strings("referenceTaskIds", message.reference_task_ids.as_deref());
    match message.role {
        Role::Unspecified => {}
        Role::User => object.str("role", "ROLE_USER"),
        Role::Agent => object.str("role", "ROLE_AGENT"),
    }
    object.opt_str("taskId", &message.task_id);
    object.end();
    Ok(())
}

fn part(part: &Part, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    if let PartContent::Data(data) = &part.content {
        value(data, 1, object.key("data"))?;
    }
    object.opt_str("filename", &part.filename);
    object.opt_str("mediaType", &part.media_type);
    object.metadata(&part.metadata)?;
    match &part.content {
        PartContent::Data(_) => {}
        // A part's content is a oneof: written even when empty.
        PartContent::Raw(raw) => {
            let out = object.key("raw");
            out.push(b'"');
            let start = out.len();
            let engine = &base64::engine::general_purpose::STANDARD;
            out.resize(
                start + base64::encoded_len(raw.len(), true).ok_or(Declined)?,
                0,
            );
            let written = engine
                .encode_slice(raw, &mut out[start..])
                .map_err(|_| Declined)?;
            out.truncate(start + written);
            out.push(b'"');
        }
        PartContent::Text(text) => write_str(object.key("text"), text),
        PartContent::Url(url) => write_str(object.key("url"), url),
    }
    object.end();
    Ok(())
}

fn artifact(artifact: &Artifact, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    object.str("artifactId", &artifact.artifact_id);
    object.opt_str("description", &artifact.description);
    object.strings("extensions", artifact.extensions.as_deref());
    object.metadata(&artifact.metadata)?;
    object.opt_str("name", &artifact.name);
    object.list("parts", Some(&artifact.parts), part)?;
    object.end();
    Ok(())
}

fn status_update(update: &TaskStatusUpdateEvent, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    object.str("contextId", &update.context_id);
    object.metadata(&update.metadata)?;
    status(&update.status, object.key("status"))?;
    object.str("taskId", &update.task_id);
    object.end();
    Ok(())
}

fn artifact_update(update: &TaskArtifactUpdateEvent, out: &mut Vec<u8>) -> Written {
    let mut object = Object::new(out);
    if update.append == Some(true) {
        object.key("append").extend_from_slice(b"true");
    }
    artifact(&update.artifact, object.key("artifact"))?;
    object.str("contextId", &update.context_id);
    if update.last_chunk == Some(true) {
        object.key("lastChunk").extend_from_slice(b"true");
    }
    object.metadata(&update.metadata)?;
    object.str("taskId", &update.task_id);
    object.end();
    Ok(())
}

/// A task state's protobuf name; none for the zero value, which protobuf's JSON leaves out.
fn state_name(state: &TaskState) -> Option<&'static str> {
    Some(match state {
        TaskState::Unspecified => return None,
        TaskState::Submitted => "TASK_STATE_SUBMITTED",
        TaskState::Working => "TASK_STATE_WORKING",
        TaskState::Completed => "TASK_STATE_COMPLETED",
        TaskState::Failed => "TASK_STATE_FAILED",
        TaskState::Canceled => "TASK_STATE_CANCELED",
        TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
        TaskState::Rejected => "TASK_STATE_REJECTED",
        TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
    })
}

/// A metadata value (a `google.protobuf.Value` in the conversion) at `depth`.
fn value(value: &Value, depth: usize, out: &mut Vec<u8>) -> Written {
    if depth > DEPTH {
        return Err(Declined);
    }
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // A protobuf number is a double.
        Value::Number(number) => match number.as_f64().unwrap_or(0.0) {
            double if !double.is_finite() => return Err(Declined),
            double => match integral(double) {
                Some(integer) => {
                    out.extend_from_slice(itoa::Buffer::new().format(integer).as_bytes())
                }
                // serde_json's shortest form, as the conversion's writer writes it.
                None => serde_json::to_writer(&mut *out, &double).map_err(|_| Declined)?,
            },
        },
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                self::value(item, depth + 1, out)?;
            }
            out.push(b']');
        }
        Value::Object(members) => map(members.iter(), depth + 1, out)?,
    }
    Ok(())
}

/// A map's members (a `google.protobuf.Struct`'s), sorted by key as the conversion's are.
fn map<'a>(
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Written {
    if depth > DEPTH {
        return Err(Declined);
    }
    let mut members: Vec<(&String, &Value)> = members.collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (n, (key, member)) in members.into_iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        match member {
            // As the conversion mends any member of these names, wherever it is.
            Value::String(text) if TIMESTAMP_MEMBERS.contains(&key.as_bytes()) => {
                match text.strip_suffix("+00:00") {
                    Some(utc) => write_str(out, &format!("{utc}Z")),
                    None => write_str(out, text),
                }
            }
            member => value(member, depth, out)?,
        }
    }
    out.push(b'}');
    Ok(())
}

/// An object being written, its members given in key order.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// Starts a member (its key is a name of ours: no escapes), for its value to be written.
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// A string member, left out when empty.
    fn str(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            write_str(self.key(key), value);
        }
    }

    fn opt_str(&mut self, key: &str, value: &Option<String>) {
        if let Some(value) = value {
            self.str(key, value);
        }
    }

    /// A list of strings, left out when empty.
    fn strings(&mut self, key: &str, values: Option<&[String]>) {
        let Some(values) = values.filter(|values| !values.is_empty()) else {
            return;
        };
        let out = self.key(key);
        out.push(b'[');
        for (n, value) in values.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_str(out, value);
        }
        out.push(b']');
    }

    /// A list of messages, left out when empty.
    fn list<T>(
        &mut self,
        key: &str,
        items: Option<&[T]>,
        write: fn(&T, &mut Vec<u8>) -> Written,
    ) -> Written {
        let Some(items) = items.filter(|items| !items.is_empty()) else {
            return Ok(());
        };
        let out = self.key(key);
        out.push(b'[');
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write(item, out)?;
        }
        out.push(b']');
        Ok(())
    }

    /// The `metadata` member: a `google.protobuf.Struct`, written when present (even empty).
    fn metadata(&mut self, metadata: &Option<HashMap<String, Value>>) -> Written {
        match metadata {
            Some(members) => map(members.iter(), 1, self.key("metadata")),
            None => Ok(()),
        }
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::generate::Random;
    use super::*;

    /// Written here, byte for byte what the general way writes (or declined).
    fn same<T: a2a_pb::protojson_conv::ProtoJsonPayload + 'static>(value: &T) -> bool {
        let general = super::super::converted(value).expect("the general way writes it");
        match to_vec(value) {
            Some(direct) => {
                assert_eq!(
                    String::from_utf8(direct).unwrap(),
                    String::from_utf8(general).unwrap()
                );
                true
            }
            None => false,
        }
    }

    #[test]
    fn writes_the_conversions_bytes() {
        let mut random = Random(0x5eed_0fa2);
        let mut written = 0;
        for _ in 0..1_500 {
            let task = random.task();
            let message = random.message();
            written += usize::from(same(&task));
            written += usize::from(same(&SendMessageResponse::Task(task)));
            written += usize::from(same(&SendMessageResponse::Message(message)));
            written += usize::from(same(&random.event()));
        }
        // Declined only for what it declines (none of these values).
        assert_eq!(written, 1_500 * 4);
    }

    #[test]
    fn declines_what_it_would_not_write_as_the_conversion_does() {
        let mut task = Random(7).task();
        // Nested deeper than it writes: the general way's (a decoder error, here).
        let deep = (0..40).fold(json!(1), |inner, _| json!({ "a": inner }));
        task.metadata = Some(HashMap::from([("deep".to_owned(), deep)]));
        assert!(to_vec(&task).is_none());
        assert_eq!(
            super::super::to_json(&task).ok(),
            super::super::converted(&task).ok()
        );
        task.metadata = None;
        // A leap second.
        if let Some(leap) = chrono::DateTime::from_timestamp(1_483_228_799, 1_500_000_000) {
            task.status.timestamp = Some(leap);
            assert!(to_vec(&task).is_none());
        }
        // Types it does not write.
        let list = a2a::ListTasksResponse {
            tasks: vec![],
            next_page_token: String::new(),
            page_size: 0,
            total_size: 0,
        };
        assert!(to_vec(&list).is_none());
    }
}
