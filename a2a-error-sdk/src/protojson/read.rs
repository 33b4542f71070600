//! SendMessage's params made the SDK's type from the protobuf JSON type they are read into,
//! by moving its fields: what the SDK's conversion makes (`try_from_proto` of the value
//! encoded to protobuf and decoded again, which copies every string twice), field for field,
//! as `a2a_pb::pbconv`'s `from_proto_*` functions make it.
//!
//! A request whose metadata or data nests deeper than [`DEPTH`] goes the general way, whose
//! protobuf decoder refuses what nests past 100 messages (a level of a JSON value is two or
//! three of them).

use std::collections::HashMap;

use a2a::{
    AuthenticationInfo, Message, Part, PartContent, SendMessageConfiguration, SendMessageRequest,
    TaskPushNotificationConfig,
};
use a2a_pb::pbconv::from_proto_role;
use a2a_pb::protojson as json;
use pbjson_types::value::Kind;
use serde_json::Value;

/// The most lists and objects nested in a metadata or data value moved here.
const DEPTH: usize = 20;

/// `request` as the SDK's type; for a request that is [`shallow`].
pub(super) fn send_message_request(request: json::SendMessageRequest) -> SendMessageRequest {
    let json::SendMessageRequest {
        tenant,
        message,
        configuration,
        metadata,
    } = request;
    SendMessageRequest {
        tenant: non_empty(tenant),
        // A missing message is refused before this (`missing_in_send`); the conversion
        // would make a new one.
        message: message
            .map(self::message)
            .unwrap_or_else(|| Message::new(a2a::Role::User, vec![])),
        configuration: configuration.map(self::configuration),
        metadata: metadata.map(map),
    }
}

/// Whether no value of `request` nests deeper than [`DEPTH`]: else it goes the general way.
pub(super) fn shallow(request: &json::SendMessageRequest) -> bool {
    let members = |metadata: &Option<pbjson_types::Struct>| {
        metadata
            .iter()
            .flat_map(|members| members.fields.values())
            .all(|member| within(member, 1))
    };
    let Some(message) = &request.message else {
        return members(&request.metadata);
    };
    members(&request.metadata)
        && members(&message.metadata)
        && message.parts.iter().all(|part| {
            members(&part.metadata)
                && match &part.content {
                    Some(json::part::Content::Data(data)) => within(data, 1),
                    _ => true,
                }
        })
}

/// Whether `value`, a list or an object at `depth`, holds none deeper than [`DEPTH`].
fn within(value: &pbjson_types::Value, depth: usize) -> bool {
    match &value.kind {
        Some(Kind::ListValue(list)) => {
            depth <= DEPTH && list.values.iter().all(|item| within(item, depth + 1))
        }
        Some(Kind::StructValue(members)) => {
            depth <= DEPTH
                && members
                    .fields
                    .values()
                    .all(|member| within(member, depth + 1))
        }
        _ => true,
    }
}

fn message(message: json::Message) -> Message {
    Message {
        message_id: message.message_id,
        context_id: non_empty(message.context_id),
        task_id: non_empty(message.task_id),
        role: from_proto_role(message.role),
        parts: message.parts.into_iter().map(part).collect(),
        metadata: message.metadata.map(map),
        extensions: non_empty_list(message.extensions),
        reference_task_ids: non_empty_list(message.reference_task_ids),
    }
}

fn part(part: json::Part) -> Part {
    use json::part::Content;
    Part {
        content: match part.content {
            Some(Content::Text(text)) => PartContent::Text(text),
            Some(Content::Raw(raw)) => PartContent::Raw(raw),
            Some(Content::Url(url)) => PartContent::Url(url),
            Some(Content::Data(data)) => PartContent::Data(value(data)),
            None => PartContent::Text(String::new()),
        },
        filename: non_empty(part.filename),
        media_type: non_empty(part.media_type),
        metadata: part.metadata.map(map),
    }
}

fn configuration(configuration: json::SendMessageConfiguration) -> SendMessageConfiguration {
    SendMessageConfiguration {
        accepted_output_modes: non_empty_list(configuration.accepted_output_modes),
        task_push_notification_config: configuration.task_push_notification_config.map(push_config),
        history_length: configuration.history_length,
        return_immediately: configuration.return_immediately.then_some(true),
    }
}

fn push_config(config: json::TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        url: config.url,
        id: non_empty(config.id),
        task_id: config.task_id,
        token: non_empty(config.token),
        authentication: config
            .authentication
            .map(|authentication| AuthenticationInfo {
                scheme: authentication.scheme,
                credentials: non_empty(authentication.credentials),
            }),
        tenant: non_empty(config.tenant),
    }
}

/// A `google.protobuf.Struct` as the SDK's map.
fn map(members: pbjson_types::Struct) -> HashMap<String, Value> {
    members
        .fields
        .into_iter()
        .map(|(key, member)| (key, value(member)))
        .collect()
}

/// A `google.protobuf.Value` as JSON: a number that is not finite is null, and an object's
/// members go in in key order (protobuf's decoder reads them into a sorted map).
fn value(value: pbjson_types::Value) -> Value {
    match value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(flag)) => Value::Bool(flag),
        Some(Kind::NumberValue(number)) => serde_json::Number::from_f64(number)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Some(Kind::StringValue(text)) => Value::String(text),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.into_iter().map(self::value).collect())
        }
        Some(Kind::StructValue(members)) => {
            let mut members: Vec<(String, pbjson_types::Value)> =
                members.fields.into_iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                members
                    .into_iter()
                    .map(|(key, member)| (key, self::value(member)))
                    .collect(),
            )
        }
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn non_empty_list(list: Vec<String>) -> Option<Vec<String>> {
    (!list.is_empty()).then_some(list)
}

#[cfg(test)]
mod tests {
    use a2a_pb::protojson_conv::ProtoJsonPayload;
    use prost::Message as _;

    use super::super::generate::Random;
    use super::*;

    type Proto = <SendMessageRequest as ProtoJsonPayload>::Proto;

    /// What the SDK's conversion makes of `request`: through protobuf's bytes.
    fn converted(request: &json::SendMessageRequest) -> SendMessageRequest {
        let proto = Proto::decode(request.encode_to_vec().as_slice()).unwrap();
        SendMessageRequest::try_from_proto(&proto).unwrap()
    }

    fn read(text: &str) -> json::SendMessageRequest {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn makes_what_the_conversion_makes() {
        let mut random = Random(0x0a2a_5e4d);
        for _ in 0..2_000 {
            let request = random.request();
            let proto = SendMessageRequest::to_proto(&request);
            let json = json::SendMessageRequest::decode(proto.encode_to_vec().as_slice()).unwrap();
            let expected = converted(&json);
            assert!(shallow(&json));
            let moved = send_message_request(json);
            assert_eq!(moved, expected);
        }
        // What only the JSON says: a null or missing content, roles by number.
        for text in [
            r#"{"message":{"messageId":"m","role":2,"parts":[{"data":null},{}]}}"#,
            r#"{"message":{"messageId":"m","role":0,"parts":[{"text":"a","metadata":{}}]}}"#,
            r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"AAE="},
                {"data":{"z":[1,{"b":null,"a":1e300}],"y":-0.0}}]},"metadata":{"k":[]},
                "configuration":{"historyLength":0,"returnImmediately":false,
                "taskPushNotificationConfig":{"url":"u","authentication":{"scheme":"s"}}}}"#,
        ] {
            let json = read(text);
            assert!(shallow(&json));
            assert_eq!(send_message_request(json.clone()), converted(&json));
        }
    }

    #[test]
    fn leaves_what_nests_too_deep_to_the_conversion() {
        let deep = (0..DEPTH).fold("1".to_owned(), |inner, _| format!(r#"{{"a":{inner}}}"#));
        let at_limit =
            format!(r#"{{"message":{{"messageId":"m","role":1,"parts":[{{"data":{deep}}}]}}}}"#);
        let json = read(&at_limit);
        assert!(shallow(&json));
        assert_eq!(send_message_request(json.clone()), converted(&json));
        for past in [
            format!(r#"{{"message":{{"messageId":"m","role":1,"parts":[{{"data":[{deep}]}}]}}}}"#),
            format!(
                r#"{{"metadata":{{"k":[{deep}]}},"message":{{"messageId":"m","role":1,"parts":[]}}}}"#
            ),
            format!(
                r#"{{"message":{{"messageId":"m","role":1,"parts":[{{"text":"t","metadata":{{"k":[{deep}]}}}}]}}}}"#
            ),
        ] {
            assert!(!shallow(&read(&past)));
        }
    }
}
