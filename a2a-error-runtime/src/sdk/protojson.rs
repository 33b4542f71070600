//! [`ProtoJson`]: an SDK type read and written as the A2A 1.0 JSON (ProtoJSON), exactly as the
//! SDK's own routers and clients convert it.

use a2a_pb::protojson_conv::{self, ProtoJsonPayload};
use prost::Message as _;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

// Written as the SDK converts it, with one mend: a number of a `google.protobuf.Struct`
// (metadata) is a double in protobuf, which the SDK's conversion writes as `-32603.0`;
// protobuf's canonical JSON writes an integral double as an integer (`-32603`), and a client
// that reads a failed task's `code` as an integer needs that.
use crate::wire::protojson::Canonical;

/// An SDK type (`a2a::SendMessageRequest`, `a2a::Task`, `a2a::StreamResponse`, …) in its A2A
/// 1.0 JSON form. The SDK's types derive `serde` too, but their serde form is not the wire's
/// (the SDK converts through protobuf), so every body the bridge reads or writes goes
/// through this.
#[derive(Clone, Debug, PartialEq)]
pub struct ProtoJson<T>(pub T);

impl<T: ProtoJsonPayload> Serialize for ProtoJson<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let json = protojson_conv::to_value(&self.0).map_err(serde::ser::Error::custom)?;
        Canonical(&json).serialize(serializer)
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
#[derive(Clone, Debug)]
pub struct SendReply {
    json: Box<RawValue>,
    response: Option<a2a::SendMessageResponse>,
}

impl SendReply {
    /// The reply's JSON, converted as the SDK's routers convert it.
    pub(crate) fn new(
        response: a2a::SendMessageResponse,
    ) -> Result<Self, protojson_conv::ProtoJsonPayloadError> {
        let json = protojson_conv::to_value(&response)?;
        let json = serde_json::value::to_raw_value(&Canonical(&json))
            .map_err(protojson_conv::ProtoJsonPayloadError::Json)?;
        Ok(SendReply {
            json,
            response: Some(response),
        })
    }

    /// The reply's A2A 1.0 JSON.
    pub fn json(&self) -> &str {
        self.json.get()
    }

    /// The SDK's reply: the one this process made, or read back from the JSON (a replay).
    pub fn into_response(self) -> Result<a2a::SendMessageResponse, serde_json::Error> {
        match self.response {
            Some(response) => Ok(response),
            None => serde_json::from_str::<ProtoJson<_>>(self.json.get()).map(|reply| reply.0),
        }
    }
}

impl Serialize for SendReply {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SendReply {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(SendReply {
            json: Box::<RawValue>::deserialize(deserializer)?,
            response: None,
        })
    }
}

/// SendMessage's params, with what A2A requires of them checked before the SDK's conversion,
/// which would fill a missing message or messageId with new ones (so an empty SendMessage
/// would run): a message with a messageId, a role and at least one part. What is missing is
/// reported at its path, as for any params.
pub(crate) struct SendParams(pub a2a::SendMessageRequest);

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
        let proto = <a2a::SendMessageRequest as ProtoJsonPayload>::Proto::decode(
            json.encode_to_vec().as_slice(),
        )
        .map_err(D::Error::custom)?;
        a2a::SendMessageRequest::try_from_proto(&proto)
            .map(SendParams)
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
