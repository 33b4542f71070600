//! `ErrorObject`: the JSON-RPC error object, and reading the details peers put in it.
//!
//! Decoding is lenient on purpose: it accepts the A2A 1.0 typed-details array, the legacy
//! data object, `data` absent or any other JSON, and what the official SDKs actually send
//! (non-string metadata values, ErrorInfo without metadata). Nothing received is dropped:
//! `data` is kept as it came.

use std::time::Duration;

use serde::de::DeserializeSeed;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The shape of `error.data` on the wire.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum WireProfile {
    /// A2A 1.0: `data` is an array of typed details, a `google.rpc.ErrorInfo` (reason, domain,
    /// string metadata) and a `google.rpc.RetryInfo` when a delay is known.
    #[default]
    A2a,
    /// A2A 0.3 era: `data` is one object with `reason`, `domain`, `retryable`, `retryAfter`
    /// (seconds) and the data fields as plain JSON members.
    Legacy,
}

impl WireProfile {
    /// Both profiles.
    pub const ALL: [WireProfile; 2] = [WireProfile::A2a, WireProfile::Legacy];
}

use a2a_error_codes::LEGACY_RESERVED_KEYS;

/// A JSON-RPC 2.0 error object: `code`, `message` and optional `data`, exactly as received or
/// about to be sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The JSON-RPC error code.
    pub code: i32,
    /// The short public message.
    #[serde(default)]
    pub message: String,
    /// Anything else the peer sent; an explicit `null` is kept as `Some(Value::Null)`.
    ///
    /// Read within a budget of [`MAX_DATA_NODES`] JSON values: a `serde_json::Value` costs
    /// up to ~85 times the bytes of the text it was read from, so a peer's 31 MiB `data` would
    /// cost gigabytes. Values past the budget are skipped as they are read (arrays and objects
    /// keep their first members), so the memory of a decoded error is bounded whatever its
    /// size; a real error's details are a few dozen values.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded_data"
    )]
    pub data: Option<Value>,
}

/// The most JSON values (every array, object, string, number, … counts one) kept of a received
/// `data` member.
pub const MAX_DATA_NODES: usize = 4096;

/// Deserializes `data` within [`MAX_DATA_NODES`]; an explicit `null` is `Some(Null)`.
fn bounded_data<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    let mut budget = MAX_DATA_NODES;
    // The budget is not spent yet, so the value is never skipped.
    Ok(Some(
        Bounded(&mut budget)
            .deserialize(deserializer)?
            .unwrap_or(Value::Null),
    ))
}

/// Reads one value while the budget lasts; `None` (and the value skipped) once it is spent.
struct Bounded<'b>(&'b mut usize);

impl Bounded<'_> {
    /// Spends one node on `value`.
    fn node<E>(self, value: Value) -> Result<Option<Value>, E> {
        *self.0 -= 1;
        Ok(Some(value))
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        if *self.0 == 0 {
            serde::de::IgnoredAny::deserialize(deserializer)?;
            return Ok(None);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Bounded<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        self.node(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        self.node(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        self.node(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        self.node(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        self.node(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        self.node(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        self.node(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        self.node(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        *self.0 -= 1;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Bounded(&mut *self.0))? {
            items.extend(item);
        }
        Ok(Some(Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        *self.0 -= 1;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(value) = map.next_value_seed(Bounded(&mut *self.0))? {
                members.insert(key, value);
            }
        }
        Ok(Some(Value::Object(members)))
    }
}

impl ErrorObject {
    /// An error object without `data`.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The object used when an error cannot even be encoded: a bare internal error.
    pub fn fallback() -> Self {
        ErrorObject::new(crate::code::INTERNAL_ERROR, "Internal error")
    }

    /// Which profile `data` is in, if it is in either.
    pub fn profile(&self) -> Option<WireProfile> {
        match &self.data {
            Some(Value::Array(_)) => Some(WireProfile::A2a),
            Some(Value::Object(_)) => Some(WireProfile::Legacy),
            _ => None,
        }
    }

    /// The typed details (`{"@type": …}` objects) of an A2A 1.0 `data` array.
    pub fn details(&self) -> impl Iterator<Item = &Map<String, Value>> {
        let items = match &self.data {
            Some(Value::Array(items)) => items.as_slice(),
            _ => &[],
        };
        items.iter().filter_map(Value::as_object)
    }

    /// The first detail whose `@type` names `type_name` (`"google.rpc.ErrorInfo"`), with or
    /// without the `type.googleapis.com/` prefix.
    pub fn detail(&self, type_name: &str) -> Option<&Map<String, Value>> {
        self.details()
            .find(|detail| detail_type(detail) == Some(type_name))
    }

    /// The `google.rpc.ErrorInfo` detail, if any.
    pub fn error_info(&self) -> Option<&Map<String, Value>> {
        self.detail("google.rpc.ErrorInfo")
    }

    /// The legacy `data` object, if `data` is one.
    pub fn legacy_data(&self) -> Option<&Map<String, Value>> {
        self.data.as_ref().and_then(Value::as_object)
    }

    /// The object carrying `reason`, `domain` and the data fields: the ErrorInfo detail in the
    /// A2A 1.0 profile, the data object itself in the legacy one.
    fn info(&self) -> Option<&Map<String, Value>> {
        self.error_info().or_else(|| self.legacy_data())
    }

    /// The ErrorInfo reason, if the peer sent one.
    pub fn reason(&self) -> Option<&str> {
        self.info()?.get("reason")?.as_str()
    }

    /// The ErrorInfo domain, if the peer sent one.
    pub fn domain(&self) -> Option<&str> {
        self.info()?.get("domain")?.as_str()
    }

    /// The published data fields: ErrorInfo `metadata` (A2A 1.0) or the legacy data members
    /// other than `reason`, `domain`, `retryable` and `retryAfter`.
    ///
    /// The reserved names (`reason`, `domain`, `retryable`, `retryAfter`) are never data
    /// fields, in either profile.
    pub fn metadata(&self) -> Map<String, Value> {
        match self.fields() {
            Some(fields) => fields
                .iter()
                .filter(|(key, _)| !LEGACY_RESERVED_KEYS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
            None => Map::new(),
        }
    }

    /// One published data field as received, without copying the rest.
    pub fn metadata_value(&self, key: &str) -> Option<&Value> {
        if LEGACY_RESERVED_KEYS.contains(&key) {
            return None;
        }
        self.fields()?.get(key)
    }

    /// Where the data fields are: ErrorInfo `metadata`, or the legacy data object.
    fn fields(&self) -> Option<&Map<String, Value>> {
        match self.error_info() {
            Some(info) => info.get("metadata")?.as_object(),
            None => self.legacy_data(),
        }
    }

    /// The retry delay the peer asked for: `google.rpc.RetryInfo` `retryDelay` (`"10s"`, or a
    /// `{seconds, nanos}` object), else the legacy `retryAfter` (seconds).
    pub fn retry_after(&self) -> Option<Duration> {
        if let Some(info) = self.detail("google.rpc.RetryInfo") {
            return info.get("retryDelay").and_then(parse_proto_duration);
        }
        let seconds = self.legacy_data()?.get("retryAfter")?;
        match seconds {
            Value::Number(n) => n.as_f64().and_then(duration_from_secs),
            Value::String(s) => s.trim().parse().ok().and_then(duration_from_secs),
            _ => None,
        }
    }

    /// Whether the peer said the call may be retried: the legacy `retryable` member, or a
    /// `retryable` ErrorInfo metadata entry (`"true"` / `"false"`, as this project's
    /// encoder writes it when an error's advice differs from its code's default).
    pub fn retryable(&self) -> Option<bool> {
        match self.fields()?.get("retryable")? {
            Value::Bool(flag) => Some(*flag),
            Value::String(text) => text.parse().ok(),
            _ => None,
        }
    }
}

/// The type name a typed detail's `@type` names (`"google.rpc.ErrorInfo"`), with or without
/// the `type.googleapis.com/` prefix.
pub fn detail_type(detail: &Map<String, Value>) -> Option<&str> {
    detail.get("@type")?.as_str()?.rsplit('/').next()
}

fn duration_from_secs(seconds: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(seconds).ok()
}

/// Parses protobuf `Duration` JSON: `"1.5s"`, or `{"seconds": 1, "nanos": 500000000}`.
pub fn parse_proto_duration(value: &Value) -> Option<Duration> {
    match value {
        Value::String(text) => {
            let number = text.trim().strip_suffix('s')?;
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if whole.is_empty() && fraction.is_empty()
                || !whole.bytes().all(|b| b.is_ascii_digit())
                || !fraction.bytes().all(|b| b.is_ascii_digit())
                || fraction.len() > 9
            {
                return None;
            }
            let seconds = if whole.is_empty() {
                0
            } else {
                whole.parse().ok()?
            };
            let nanos = if fraction.is_empty() {
                0
            } else {
                fraction.parse::<u32>().ok()? * 10u32.pow(9 - fraction.len() as u32)
            };
            Some(Duration::new(seconds, nanos))
        }
        Value::Object(parts) => {
            let seconds = match parts.get("seconds") {
                Some(Value::String(s)) => s.parse().ok()?,
                Some(v) => v.as_u64()?,
                None => 0,
            };
            let nanos = parts.get("nanos").map_or(Some(0), Value::as_u64)?;
            // Protobuf allows 0..=999_999_999; more would carry into the seconds, and
            // `Duration::new` panics when that carry overflows.
            if nanos >= 1_000_000_000 {
                return None;
            }
            Some(Duration::new(seconds, nanos as u32))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(value: Value) -> ErrorObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn reads_a2a_details() {
        let o = obj(json!({"code": -32052, "message": "Rate limited", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMITED",
             "domain": "x.example", "metadata": {"n": "7", "list": [1, 2]}},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.5s"}]}));
        assert_eq!(o.profile(), Some(WireProfile::A2a));
        assert_eq!(o.reason(), Some("RATE_LIMITED"));
        assert_eq!(o.domain(), Some("x.example"));
        assert_eq!(o.retry_after(), Some(Duration::from_millis(2500)));
        assert_eq!(o.data_field::<u32>("n"), Some(7));
        assert_eq!(o.data_field::<String>("n"), Some("7".into()));
        assert_eq!(o.data_field::<Vec<u8>>("list"), Some(vec![1, 2]));
        assert_eq!(o.data_field::<Option<u8>>("absent"), Some(None));
        assert_eq!(o.data_field::<u8>("absent"), None);
    }

    #[test]
    fn reads_legacy_data() {
        let o = obj(json!({"code": -32052, "message": "m", "data":
            {"reason": "RATE_LIMITED", "retryable": true, "retryAfter": 5, "detail": "x"}}));
        assert_eq!(o.profile(), Some(WireProfile::Legacy));
        assert_eq!(o.reason(), Some("RATE_LIMITED"));
        assert_eq!(o.domain(), None);
        assert_eq!(o.retryable(), Some(true));
        assert_eq!(o.retry_after(), Some(Duration::from_secs(5)));
        assert_eq!(
            o.metadata(),
            json!({"detail": "x"}).as_object().unwrap().clone()
        );
        // The legacy fixed members are not data fields.
        assert_eq!(o.data_field::<String>("reason"), None);
    }

    #[test]
    fn keeps_explicit_null_and_odd_data() {
        for data in [json!(null), json!("text"), json!(42), json!([1, "a"])] {
            let o = obj(json!({"code": 1, "message": "m", "data": data.clone()}));
            assert_eq!(o.data, Some(data.clone()));
            assert_eq!(serde_json::to_value(&o).unwrap()["data"], data);
            assert_eq!(o.reason(), None);
            assert_eq!(o.retry_after(), None);
        }
        let bare = obj(json!({"code": 1, "message": "m"}));
        assert_eq!(bare.data, None);
        assert!(!serde_json::to_string(&bare).unwrap().contains("data"));
    }

    #[test]
    fn proto_duration_forms() {
        let parse = |v: Value| parse_proto_duration(&v);
        assert_eq!(parse(json!("10s")), Some(Duration::from_secs(10)));
        assert_eq!(parse(json!("0.000000001s")), Some(Duration::from_nanos(1)));
        assert_eq!(parse(json!(".5s")), Some(Duration::from_millis(500)));
        assert_eq!(
            parse(json!({"seconds": "3", "nanos": 1})),
            Some(Duration::new(3, 1))
        );
        assert_eq!(
            parse(json!({"seconds": "18446744073709551615", "nanos": 999_999_999})),
            Some(Duration::MAX)
        );
        for bad in [
            json!("10"),
            json!("-1s"),
            json!("s"),
            json!("1.0000000001s"),
            json!(true),
            json!({"seconds": "18446744073709551615", "nanos": 4294967295u32}),
            json!({"seconds": 1, "nanos": 1_000_000_000}),
            json!("18446744073709551616s"),
        ] {
            assert_eq!(parse(bad.clone()), None, "{bad}");
        }
    }
}
