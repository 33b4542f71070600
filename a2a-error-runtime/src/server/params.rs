//! Reading a peer's params into a handler's type, and saying what was wrong in the peer's own
//! terms: the field path as it appears in the request, and a fixed phrase. serde's messages
//! name Rust types (`expected struct SendMessageRequest`) and echo whatever a custom
//! `Deserialize` impl said; none of that may reach the wire.

use serde::de::DeserializeOwned;

use crate::wire::bad_request::BadRequest;

/// The longest field path published; a longer one (a hostile peer's keys) is cut.
const MAX_FIELD_CHARS: usize = 256;
/// The longest list of accepted values published for an unknown enum value.
const MAX_CHOICES_CHARS: usize = 256;

/// Deserializes JSON-RPC params (JSON text already checked for syntax) as `T`, or says
/// which field is wrong and how. Text that is JSON to a validator but not to a reader (a
/// number out of range like `1e400`, a lone surrogate escape) is an invalid value of the
/// params, not a malformed request.
pub(crate) fn from_raw<T: DeserializeOwned>(
    params: &serde_json::value::RawValue,
) -> Result<T, BadRequest> {
    from_slice(params.get().as_bytes()).map_err(|violation| {
        violation.unwrap_or_else(|| {
            BadRequest::field(
                "",
                "a value cannot be read: a number out of range or an invalid string escape",
            )
        })
    })
}

/// Deserializes the JSON text `bytes` as `T`; `Err(None)` when it is not JSON at all.
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Option<BadRequest>> {
    let renamed = renamed(bytes);
    let bytes = renamed.as_deref().unwrap_or(bytes);
    // Valid params are read once, without tracking the path (serde_path_to_error wraps every
    // value it reads); only a failure is read again to say where it is.
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        // A shape error early in text that is not JSON further on is still a syntax error.
        let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
        match error.inner().classify() {
            serde_json::error::Category::Data if is_json => Some(violation(error)),
            _ => None,
        }
    })?;
    deserializer.end().map_err(|_| None)?;
    Ok(value)
}

/// A2A 0.3's name of SendMessage's push config, taken as 1.0's.
const OLD_PUSH_CONFIG: &[u8] = b"\"pushNotificationConfig\"";

/// `bytes` with `configuration.pushNotificationConfig` (A2A 0.3's name) renamed
/// `configuration.taskPushNotificationConfig` (1.0's), when it is there and 1.0's is not; the
/// protobuf JSON types would drop it. `None` (nothing to rename) costs one SIMD scan.
fn renamed(bytes: &[u8]) -> Option<Vec<u8>> {
    // Built once: building a searcher costs more than a search of a request's params.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(OLD_PUSH_CONFIG));
    FINDER.find(bytes)?;
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let configuration = value.get_mut("configuration")?.as_object_mut()?;
    if configuration.contains_key("taskPushNotificationConfig") {
        return None;
    }
    let config = configuration.remove("pushNotificationConfig")?;
    configuration.insert("taskPushNotificationConfig".to_owned(), config);
    serde_json::to_vec(&value).ok()
}

fn violation(error: serde_path_to_error::Error<serde_json::Error>) -> BadRequest {
    let path = error.path().to_string();
    let mut field = if path == "." { String::new() } else { path };
    let message = error.inner().to_string();
    let (member, description) = describe(&message);
    if let Some(member) = member {
        if !field.is_empty() {
            field.push('.');
        }
        field.push_str(member);
    }
    if field.chars().count() > MAX_FIELD_CHARS {
        field = field.chars().take(MAX_FIELD_CHARS).collect::<String>() + "…";
    }
    BadRequest::field(field, description)
}

/// The missing member a message names (the path stops at its parent), and what is wrong, in
/// JSON terms.
fn describe(message: &str) -> (Option<&str>, String) {
    // serde_json appends the position when it read text; the path already says where.
    let message = message
        .rsplit_once(" at line ")
        .map_or(message, |(head, _)| head);
    if let Some(rest) = message.strip_prefix("missing field ") {
        return (named(rest), "required field is missing".into());
    }
    // The path of an unknown or duplicate member already ends in its name.
    if message.starts_with("unknown field ") {
        return (None, "unknown field".into());
    }
    if message.starts_with("duplicate field ") {
        return (None, "field appears more than once".into());
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return (
            None,
            format!("expected {}, got {}", kind(expected), found_kind(found)),
        );
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        // The accepted values are the wire names; the rejected one is the peer's own text
        // and is not echoed.
        let choices = rest.split_once(", expected ").map(|(_, choices)| choices);
        return (
            None,
            match choices {
                Some(choices) if choices.chars().count() <= MAX_CHOICES_CHARS => {
                    format!("unknown value; expected {choices}")
                }
                _ => "unknown value".into(),
            },
        );
    }
    if message.starts_with("invalid length ") {
        return (None, "wrong number of elements".into());
    }
    if message.starts_with("data did not match any variant") {
        return (None, "does not match any accepted form".into());
    }
    // invalid value, custom errors from a `Deserialize` impl, anything else: their text may
    // carry internals.
    (None, "invalid value".into())
}

/// The member named in backquotes at the start of `rest`.
fn named(rest: &str) -> Option<&str> {
    rest.strip_prefix('`')?
        .split_once('`')
        .map(|(name, _)| name)
}

/// What serde expected, as a JSON type.
fn kind(expected: &str) -> &'static str {
    let expected = expected.trim();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| expected.starts_with(p));
    if starts(&["struct ", "a map", "map", "an object"]) {
        "an object"
    } else if starts(&[
        "a sequence",
        "tuple",
        "a tuple",
        "an array",
        "array",
        "a list",
    ]) {
        "an array"
    } else if starts(&[
        "a string",
        "a borrowed string",
        "a character",
        "char",
        "string",
    ]) {
        "a string"
    } else if starts(&["a boolean", "bool"]) {
        "a boolean"
    } else if starts(&["u8", "u16", "u32", "u64", "u128", "usize"]) {
        "a non-negative integer"
    } else if starts(&["i8", "i16", "i32", "i64", "i128", "isize", "an integer"]) {
        "an integer"
    } else if starts(&["f32", "f64", "a float", "a number"]) {
        "a number"
    } else if starts(&["unit", "null"]) {
        "null"
    } else {
        "a value of another type"
    }
}

/// What the peer sent, as a JSON type (never its value).
fn found_kind(found: &str) -> &'static str {
    let starts = |prefix: &str| found.starts_with(prefix);
    if starts("map") {
        "an object"
    } else if starts("sequence") {
        "an array"
    } else if starts("string") || starts("char") {
        "a string"
    } else if starts("integer") || starts("floating point") {
        "a number"
    } else if starts("boolean") {
        "a boolean"
    } else if starts("unit") || starts("null") || starts("Option") {
        "null"
    } else {
        "a value of another type"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct SendMessageRequest {
        message: Message,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Message {
        message_id: String,
        role: Role,
        parts: Vec<Part>,
        count: Option<u32>,
    }

    #[derive(Debug, Deserialize)]
    enum Role {
        #[serde(rename = "ROLE_USER")]
        User,
    }

    #[allow(dead_code)]
    #[derive(Debug)]
    struct Part(String);

    impl<'de> Deserialize<'de> for Part {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let text = String::deserialize(d)?;
            if text.is_empty() {
                return Err(serde::de::Error::custom(
                    "PartValidator in crate::secret::module rejected it",
                ));
            }
            Ok(Part(text))
        }
    }

    fn wrong(value: serde_json::Value) -> (String, String) {
        let raw = serde_json::value::to_raw_value(&value).unwrap();
        let bad = from_raw::<SendMessageRequest>(&raw).unwrap_err();
        let v = &bad.violations[0];
        (v.field.clone(), v.description.clone())
    }

    #[test]
    fn descriptions_use_json_terms_and_never_rust_types() {
        let ok = json!({"messageId": "m", "role": "ROLE_USER", "parts": ["x"]});
        let cases = [
            (json!("x"), "", "expected an object, got a string"),
            (json!([]), "", "wrong number of elements"),
            (
                json!({"message": 5}),
                "message",
                "expected an object, got a number",
            ),
            (
                json!({"message": {"role": "ROLE_USER", "parts": []}}),
                "message.messageId",
                "required field is missing",
            ),
            (
                json!({"message": {"messageId": 7, "role": "ROLE_USER", "parts": []}}),
                "message.messageId",
                "expected a string, got a number",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_BOT", "parts": []}}),
                "message.role",
                "unknown value; expected `ROLE_USER`",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [""]}}),
                "message.parts[0]",
                "invalid value",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [],
                       "count": -1}}),
                "message.count",
                "invalid value",
            ),
            (json!({"message": ok, "extra": 1}), "extra", "unknown field"),
        ];
        for (value, field, description) in cases {
            let (got_field, got) = wrong(value.clone());
            assert_eq!(
                (got_field.as_str(), got.as_str()),
                (field, description),
                "{value}"
            );
            for leak in [
                "struct",
                "Request",
                "Message",
                "crate::",
                "u32",
                "PartValidator",
            ] {
                assert!(!got.contains(leak), "{got}");
            }
        }
    }

    #[test]
    fn text_bodies_tell_syntax_from_shape() {
        assert!(matches!(from_slice::<SendMessageRequest>(b"{"), Err(None)));
        assert!(matches!(
            from_slice::<SendMessageRequest>(b"{} x"),
            Err(None)
        ));
        let bad = from_slice::<SendMessageRequest>(br#"{"message": "x"}"#).unwrap_err();
        let bad = bad.unwrap();
        assert_eq!(bad.violations[0].field, "message");
        assert_eq!(
            bad.violations[0].description,
            "expected an object, got a string"
        );
    }

    #[test]
    fn hostile_paths_are_cut() {
        let key = "k".repeat(10_000);
        let value = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [],
            "count": {key: 1}}});
        let (field, _) = wrong(value);
        assert!(
            field.chars().count() <= MAX_FIELD_CHARS + 1,
            "{}",
            field.len()
        );
    }
}
