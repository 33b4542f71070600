//! [`ProtoJson`]: an SDK type read and written as the A2A 1.0 JSON (ProtoJSON), exactly as the
//! SDK's own routers and clients convert it.

#[cfg(test)]
mod generate;
mod read;
mod write;

use a2a_pb::protojson_conv::{self, ProtoJsonPayload, ProtoJsonPayloadError};
use prost::Message as _;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use a2a_error_runtime::server::json::Prewritten;
use a2a_error_runtime::server::{OUTCOME_HEAD, outcome_head};
use bytes::Bytes;

/// `value`'s A2A 1.0 JSON, the bytes the SDK's routers write (`protojson_conv::to_value`,
/// then that value written), with one mend: a number of a `google.protobuf.Struct`
/// (metadata) is a double in protobuf, which the SDK's conversion writes as `-32603.0`;
/// protobuf's canonical JSON writes an integral double as an integer (`-32603`), and a client
/// that reads a failed task's `code` as an integer needs that.
///
/// A task, a SendMessage reply or a stream's event is written straight from the
/// SDK's type (`write`: what the conversion writes, without its copies); any other type
/// from the protobuf JSON type, without the SDK's `serde_json::Value` in between (see
/// [`a2a_error_runtime::wire::protojson`]); a type whose conversion also edits that value
/// (`ListTasksResponse`, whose `nextPageToken` is always written) through it.
pub(crate) fn to_json<T: ProtoJsonPayload + 'static>(
    value: &T,
) -> Result<Vec<u8>, ProtoJsonPayloadError> {
    match write::to_vec(value) {
        Some(json) => Ok(json),
        None => converted(value),
    }
}

/// `value`'s JSON the general way: converted as the SDK converts it, then written.
fn converted<T: ProtoJsonPayload + 'static>(value: &T) -> Result<Vec<u8>, ProtoJsonPayloadError> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<a2a::ListTasksResponse>() {
        let json = protojson_conv::to_value(value)?;
        return a2a_error_runtime::wire::protojson::to_vec(&json, false)
            .map_err(ProtoJsonPayloadError::Json);
    }
    // As the SDK converts: to protobuf, then through its bytes to the protobuf JSON type.
    let proto = T::to_proto(value);
    let json = T::ProtoJson::decode(proto.encode_to_vec().as_slice())
        .map_err(ProtoJsonPayloadError::Decode)?;
    a2a_error_runtime::wire::protojson::to_vec(&json, true).map_err(ProtoJsonPayloadError::Json)
}

/// `value`'s A2A 1.0 JSON (see [`to_json`]) as a `RawValue`.
fn to_raw<T: ProtoJsonPayload + 'static>(
    value: &T,
) -> Result<Box<RawValue>, ProtoJsonPayloadError> {
    a2a_error_runtime::wire::protojson::raw(to_json(value)?).map_err(ProtoJsonPayloadError::Json)
}

/// An SDK type (`a2a::SendMessageRequest`, `a2a::Task`, `a2a::StreamResponse`, …) in its A2A
/// 1.0 JSON form. The SDK's types derive `serde` too, but their serde form is not the wire's
/// (the SDK converts through protobuf), so every body the bridge reads or writes goes
/// through this.
#[derive(Clone, Debug, PartialEq)]
pub struct ProtoJson<T>(pub T);

/// Written as `to_json` writes it, as a raw JSON value: verbatim into serde_json's writer.
impl<T: ProtoJsonPayload + 'static> Serialize for ProtoJson<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        to_raw(&self.0)
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

/// Read straight from the text into the protobuf JSON type (no `serde_json::Value` in
/// between), then converted as the SDK converts it. A field of the wrong type is an error at
/// its path, as for any params.
impl<'de, T: ProtoJsonPayload> Deserialize<'de> for ProtoJson<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = T::ProtoJson::deserialize(deserializer)?;
        let proto = T::Proto::decode(json.encode_to_vec().as_slice()).map_err(D::Error::custom)?;
        T::try_from_proto(&proto)
            .map(ProtoJson)
            .map_err(D::Error::custom)
    }
}

/// A SendMessage reply as the bridge remembers and sends it: its A2A 1.0 JSON, made once
/// (the dedup's record and the JSON-RPC and REST replies are the same bytes), with the SDK's
/// reply while this process still holds it (the gRPC binding sends that as protobuf).
///
/// Its JSON is kept as the text this crate's writer made (serde_json, with the A2A member
/// order), not as a `RawValue`, whose making checks the text again in full: the endpoint and
/// the dedup's record copy it as it is; a `Serialize` of it elsewhere checks it then. It is
/// written after the head of the dedup's record of it, so that the record is this block,
/// shared rather than copied.
#[derive(Clone, Debug)]
pub struct SendReply {
    /// [`OUTCOME_HEAD`] bytes of the dedup's record, then the JSON (UTF-8, checked once).
    record: Bytes,
    /// Boxed: a reply goes up through every future of the call, copied at each.
    response: Option<Box<a2a::SendMessageResponse>>,
}

impl SendReply {
    /// The reply's JSON, converted as the SDK's routers convert it, after the head of its
    /// record for a request with `fingerprint` (any, without a dedup).
    pub(crate) fn new(
        response: a2a::SendMessageResponse,
        fingerprint: u64,
    ) -> Result<Self, protojson_conv::ProtoJsonPayloadError> {
        let head = outcome_head(fingerprint, true);
        let record = match write::to_vec_after(&head, &response) {
            Some(record) => record,
            None => [&head[..], &converted(&response)?].concat(),
        };
        std::str::from_utf8(&record[OUTCOME_HEAD..]).map_err(|error| {
            ProtoJsonPayloadError::Json(<serde_json::Error as serde::ser::Error>::custom(error))
        })?;
        Ok(SendReply::made(
            Bytes::from(record),
            Some(Box::new(response)),
        ))
    }

    /// A reply of `record`, the server told first how to recognize one (see
    /// [`Prewritten`]): every `SendReply` is made here.
    fn made(record: Bytes, response: Option<Box<a2a::SendMessageResponse>>) -> SendReply {
        a2a_error_runtime::server::json::recognize_prewritten(|reply| {
            reply
                .downcast_ref::<SendReply>()
                .map(|reply| reply as &dyn Prewritten)
        });
        SendReply { record, response }
    }

    /// The reply's A2A 1.0 JSON.
    pub fn json(&self) -> &str {
        // Checked when it was made or read.
        std::str::from_utf8(self.json_bytes()).unwrap_or_default()
    }

    /// The SDK's reply: the one this process made, or read back from the JSON (a replay).
    pub fn into_response(self) -> Result<a2a::SendMessageResponse, serde_json::Error> {
        match self.response {
            Some(response) => Ok(*response),
            None => serde_json::from_slice::<ProtoJson<_>>(self.json_bytes()).map(|reply| reply.0),
        }
    }
}

/// What the endpoint copies without checking it again, and what the dedup keeps as it is.
impl Prewritten for SendReply {
    fn json_bytes(&self) -> &[u8] {
        &self.record[OUTCOME_HEAD..]
    }

    fn record(&self, fingerprint: u64) -> Option<Bytes> {
        (self.record[..OUTCOME_HEAD] == outcome_head(fingerprint, true))
            .then(|| self.record.clone())
    }
}

impl Serialize for SendReply {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RawValue::from_string(self.json().to_owned())
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SendReply {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = Box::<RawValue>::deserialize(deserializer)?;
        let record = [&outcome_head(0, true)[..], json.get().as_bytes()].concat();
        Ok(SendReply::made(Bytes::from(record), None))
    }
}

/// SendMessage's params, with what A2A requires of them checked before the SDK's conversion,
/// which would fill a missing message or messageId with new ones (so an empty SendMessage
/// would run): a message with a messageId, a role and at least one part. What is missing is
/// reported at its path, as for any params.
///
/// Boxed: the request (~480 bytes) is held by every future of the call until the SDK's handler
/// takes it, and each would copy it whole when moved.
pub(crate) struct SendParams(pub Box<a2a::SendMessageRequest>);

impl<'de> Deserialize<'de> for SendParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        type Json = <a2a::SendMessageRequest as ProtoJsonPayload>::ProtoJson;
        let json = Json::deserialize(deserializer)?;
        let message = json.message.as_ref().map(|message| {
            (
                message.message_id.as_str(),
                message.role,
                !message.parts.is_empty(),
            )
        });
        if let Some(field) = missing_in_send(message) {
            return Err(D::Error::missing_field(field));
        }
        // Its fields moved into the SDK's type (`read`), as the conversion would make it.
        if read::shallow(&json) {
            return Ok(SendParams(Box::new(read::send_message_request(json))));
        }
        let proto = <a2a::SendMessageRequest as ProtoJsonPayload>::Proto::decode(
            json.encode_to_vec().as_slice(),
        )
        .map_err(D::Error::custom)?;
        a2a::SendMessageRequest::try_from_proto(&proto)
            .map(|request| SendParams(Box::new(request)))
            .map_err(D::Error::custom)
    }
}

/// The path of what A2A requires of a SendMessage request and it lacks: a message
/// (`(messageId, role, has parts)`) with a messageId, a role and at least one part. Checked
/// before the SDK's conversion, over every binding.
pub(super) fn missing_in_send(message: Option<(&str, i32, bool)>) -> Option<&'static str> {
    let Some((message_id, role, has_parts)) = message else {
        return Some("message");
    };
    if message_id.is_empty() {
        Some("message.messageId")
    } else if role == 0 {
        Some("message.role")
    } else if !has_parts {
        Some("message.parts")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDK's own bytes (its `Value`, written), with integral doubles as integers.
    fn sdk_bytes<T: ProtoJsonPayload>(value: &T) -> String {
        fn mend(value: &mut serde_json::Value) {
            match value {
                serde_json::Value::Number(number) if number.is_f64() => {
                    let double = number.as_f64().unwrap_or_default();
                    if double.fract() == 0.0 && double.abs() <= 9_007_199_254_740_992.0 {
                        *value = serde_json::Value::from(double as i64);
                    }
                }
                serde_json::Value::Array(items) => items.iter_mut().for_each(mend),
                serde_json::Value::Object(members) => members.values_mut().for_each(mend),
                _ => {}
            }
        }
        let mut json = protojson_conv::to_value(value).unwrap();
        mend(&mut json);
        serde_json::to_string(&json).unwrap()
    }

    fn read<T: ProtoJsonPayload>(json: serde_json::Value) -> T {
        serde_json::from_value::<ProtoJson<T>>(json).unwrap().0
    }

    #[test]
    fn the_sdks_bytes_without_its_value() {
        let task: a2a::Task = read(serde_json::json!({
            "id": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_FAILED", "timestamp": "2026-11-27T10:00:00.123456Z",
                       "message": {"messageId": "m-2", "role": "ROLE_AGENT",
                                   "parts": [{"text": "no \"quote\" here\n"}]}},
            "history": [{"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"},
                         {"data": {"b": 2.0, "a": [1.5, -3.0, {"z": null, "y": "é"}]}}],
                         "metadata": {"k2": "v", "k1": 1.0}}],
            "artifacts": [{"artifactId": "a-1", "parts": [{"url": "https://x/y", "mediaType": "text/plain"}]}],
            "metadata": {"a2a-error": {"code": -32603.0, "message": "Internal error"},
                         "timestamp": "2026-01-01T00:00:00+00:00", "n": 0.25},
        }));
        let status = a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            status: task.status.clone(),
            metadata: task.metadata.clone(),
        });
        let written = |json: Vec<u8>| String::from_utf8(json).unwrap();
        assert_eq!(written(to_json(&task).unwrap()), sdk_bytes(&task));
        assert_eq!(written(to_json(&status).unwrap()), sdk_bytes(&status));
        let reply = a2a::SendMessageResponse::Task(task.clone());
        assert_eq!(written(to_json(&reply).unwrap()), sdk_bytes(&reply));
        let text = written(to_json(&reply).unwrap());
        assert!(
            text.contains(r#""timestamp":"2026-11-27T10:00:00.123456Z""#),
            "{text}"
        );
        assert!(text.contains(r#""code":-32603,"#), "{text}");
        // The one conversion that edits the SDK's value goes through it.
        let list = a2a::ListTasksResponse {
            tasks: vec![task],
            next_page_token: String::new(),
            page_size: 1,
            total_size: 1,
        };
        assert_eq!(written(to_json(&list).unwrap()), sdk_bytes(&list));
        assert!(sdk_bytes(&list).contains(r#""nextPageToken":"""#));
        // As a raw value, and inside another reply.
        let raw = serde_json::to_string(&ProtoJson(reply.clone())).unwrap();
        assert_eq!(raw, sdk_bytes(&reply));
        assert_eq!(
            SendReply::new(reply.clone(), 7).unwrap().json(),
            sdk_bytes(&reply)
        );
        // Copied as it is where the endpoint and the dedup write it: the same bytes as its
        // (checked) `Serialize`, and read back as the same reply.
        let sent = SendReply::new(reply.clone(), 7).unwrap();
        let mut copied = Vec::new();
        a2a_error_runtime::server::json::write_json(&mut copied, &sent).unwrap();
        assert_eq!(copied, serde_json::to_vec(&sent).unwrap());
        // Its record for the request it was made for is its own block: the head the dedup
        // writes, then the same JSON; for another request there is none.
        let record = sent.record(7).unwrap();
        assert_eq!(&record[..OUTCOME_HEAD], outcome_head(7, true));
        assert_eq!(&record[OUTCOME_HEAD..], sent.json().as_bytes());
        assert_eq!(record.as_ptr(), sent.record.as_ptr(), "shared, not copied");
        assert!(sent.record(8).is_none());
        // The server finds it among any handler's replies without naming its type, and
        // nothing else is taken for one.
        let found = a2a_error_runtime::server::json::prewritten(&sent).expect("recognized");
        assert_eq!(found.record(7).unwrap().as_ptr(), sent.record.as_ptr());
        assert!(a2a_error_runtime::server::json::prewritten(&"text").is_none());
        let back: SendReply = serde_json::from_slice(&copied).unwrap();
        assert_eq!(back.json(), sent.json());
        assert!(back.into_response().is_ok());
    }
}
