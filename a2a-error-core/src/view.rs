//! `ErrorView`: a received error object read in place, for the client mirror's fast path.
//!
//! Reading the text into an [`ErrorObject`] builds a `serde_json::Value` tree of every detail
//! (a map and owned strings per detail); the mirror then needs three strings of it. A view
//! keeps the peer's text and borrows from it: the code, the message, the first ErrorInfo's
//! reason, domain and metadata, the first RetryInfo's delay. Nothing is allocated unless a
//! string has escapes. An object in the legacy profile (or any `data` that is not a details
//! array) is read into an `ErrorObject` instead, so both profiles decode the same way.
//!
//! A view holds the text and a fixed number of slices of it: its memory does not grow with
//! what the peer sent.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use a2a_error_codes::LEGACY_RESERVED_KEYS;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::object::{self, ErrorObject};
use crate::received::{DataValue, ReceivedError, Text};

/// A received JSON-RPC error object, viewed in the text it came in.
///
/// ```
/// use a2a_error::{ErrorView, FromErrorObject, StandardError};
///
/// let text = r#"{"code":-32001,"message":"Task not found","data":[{
///     "@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND",
///     "domain":"a2a-protocol.org","metadata":{"taskId":"t-1"}}]}"#;
/// let view = ErrorView::parse(text).unwrap();
/// assert_eq!(
///     StandardError::from_received(&view),
///     Some(StandardError::TaskNotFound { task_id: Some("t-1".into()) })
/// );
/// ```
#[derive(Debug)]
pub struct ErrorView<'a> {
    /// The whole text, for [`ReceivedError::to_object`].
    text: &'a str,
    code: i32,
    message: Cow<'a, str>,
    body: Body<'a>,
}

#[derive(Debug)]
enum Body<'a> {
    /// `data` absent, `null` or a details array (A2A 1.0).
    Details {
        info: Option<Info<'a>>,
        /// The first RetryInfo's `retryDelay`: `None` without a RetryInfo, `Some(None)` for a
        /// RetryInfo without a delay.
        retry_delay: Option<Option<&'a RawValue>>,
    },
    /// Any other `data` (the legacy object): read in full.
    Object(Box<ErrorObject>),
}

/// The first ErrorInfo detail.
#[derive(Debug, Default)]
struct Info<'a> {
    reason: Option<Cow<'a, str>>,
    metadata: Option<&'a RawValue>,
}

impl<'a> ErrorView<'a> {
    /// Views `text`, a JSON-RPC error object, in one pass. Fails as reading it into an
    /// [`ErrorObject`] would: not an object, no integer `code`, a `message` that is not a
    /// string.
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        let top: Top<'a> = serde_json::from_str(text)?;
        let body = match top.data {
            Scan::Details { info, retry_delay } => Body::Details { info, retry_delay },
            Scan::Other => Body::Object(Box::new(serde_json::from_str(text)?)),
        };
        Ok(ErrorView {
            text,
            code: top.code,
            message: top.message.0,
            body,
        })
    }

    /// The public message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl ReceivedError for ErrorView<'_> {
    fn code(&self) -> i32 {
        self.code
    }

    fn reason(&self) -> Option<&str> {
        match &self.body {
            Body::Details { info, .. } => info.as_ref()?.reason.as_deref(),
            Body::Object(object) => object.reason(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match &self.body {
            Body::Details { retry_delay, .. } => {
                let delay: serde_json::Value = serde_json::from_str((*retry_delay)??.get()).ok()?;
                object::parse_proto_duration(&delay)
            }
            Body::Object(object) => object.retry_after(),
        }
    }

    fn data_value(&self, key: &str) -> DataValue<'_> {
        match &self.body {
            Body::Details { info, .. } => {
                let Some(metadata) = info.as_ref().and_then(|info| info.metadata) else {
                    return DataValue::Absent;
                };
                if LEGACY_RESERVED_KEYS.contains(&key) {
                    return DataValue::Absent;
                }
                let mut reader = serde_json::Deserializer::from_str(metadata.get());
                match (&mut reader).deserialize_map(Find { key, found: None }) {
                    Ok(Some(value)) => DataValue::Raw(value),
                    _ => DataValue::Absent,
                }
            }
            Body::Object(object) => object.data_value(key),
        }
    }

    fn to_object(&self) -> Cow<'_, ErrorObject> {
        match &self.body {
            // The text was read once already, as this view.
            Body::Details { .. } => Cow::Owned(
                serde_json::from_str(self.text)
                    .unwrap_or_else(|_| ErrorObject::new(self.code, self.message.clone())),
            ),
            Body::Object(object) => Cow::Borrowed(object),
        }
    }
}

/// The `visit_*` methods of a visitor that reads numbers and booleans as `$value`.
macro_rules! numbers_and_bools_are {
    ($value:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// The members of the error object, `data` scanned as it is read.
#[derive(Deserialize)]
struct Top<'a> {
    code: i32,
    #[serde(default, borrow)]
    message: Text<'a>,
    #[serde(default, borrow)]
    data: Scan<'a>,
}

/// What `data` holds for the mirror: the first ErrorInfo and the first RetryInfo of a details
/// array (nothing for `null`), or `Other` for any other value.
enum Scan<'a> {
    Details {
        info: Option<Info<'a>>,
        retry_delay: Option<Option<&'a RawValue>>,
    },
    Other,
}

impl Default for Scan<'_> {
    fn default() -> Self {
        Scan::Details {
            info: None,
            retry_delay: None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scan<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScanVisitor(std::marker::PhantomData))
    }
}

struct ScanVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ScanVisitor<'a> {
    type Value = Scan<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("error data")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut info, mut retry_delay) = (None, None);
        while let Some(Element(detail)) = seq.next_element()? {
            let Some(detail) = detail else { continue };
            match detail
                .kind
                .as_deref()
                .and_then(|kind| kind.rsplit('/').next())
            {
                Some("google.rpc.ErrorInfo") if info.is_none() => {
                    info = Some(Info {
                        reason: detail.reason,
                        metadata: detail.metadata,
                    });
                }
                Some("google.rpc.RetryInfo") if retry_delay.is_none() => {
                    retry_delay = Some(detail.retry_delay);
                }
                _ => {}
            }
        }
        Ok(Scan::Details { info, retry_delay })
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Scan::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scan::Other)
    }

    numbers_and_bools_are!(Scan::Other);
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Scan::Other)
    }
}

/// One element of the details array: the members the mirror reads, unparsed. `None` for an
/// element that is not an object (skipped, as [`ErrorObject::details`] skips it). A member
/// sent twice keeps its last value, as in a `serde_json::Map`.
#[derive(Default)]
struct Detail<'a> {
    /// `@type`, when it is a string.
    kind: Option<Cow<'a, str>>,
    /// `reason`, when it is a string.
    reason: Option<Cow<'a, str>>,
    metadata: Option<&'a RawValue>,
    retry_delay: Option<&'a RawValue>,
}

/// An element of the details array: a detail, or `None` for anything else.
struct Element<'a>(Option<Detail<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Element<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(DetailVisitor(std::marker::PhantomData))
            .map(Element)
    }
}

struct DetailVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for DetailVisitor<'a> {
    type Value = Option<Detail<'a>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a detail")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut detail = Detail::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                "@type" => detail.kind = map.next_value::<Lenient<'a>>()?.0,
                "reason" => detail.reason = map.next_value::<Lenient<'a>>()?.0,
                "metadata" => detail.metadata = Some(map.next_value()?),
                "retryDelay" => detail.retry_delay = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(detail))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    numbers_and_bools_are!(None);
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A value that is read as a string when it is one, and skipped when it is anything else.
struct Lenient<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Lenient<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = deserializer.deserialize_any(LenientVisitor(std::marker::PhantomData))?;
        Ok(Lenient(value))
    }
}

struct LenientVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for LenientVisitor<'a> {
    type Value = Option<Cow<'a, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    numbers_and_bools_are!(None);
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Finds member `key` of a metadata object (the last one, when it is sent twice).
struct Find<'k, 'a> {
    key: &'k str,
    found: Option<&'a RawValue>,
}

impl<'de> Visitor<'de> for Find<'_, 'de> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a metadata object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0 == self.key {
                self.found = Some(map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(self.found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The view reads `text` as the object read from it does.
    fn agrees(text: &str, keys: &[&str]) {
        let obj: ErrorObject = serde_json::from_str(text).unwrap();
        let view = ErrorView::parse(text).unwrap();
        assert_eq!(view.code(), obj.code, "{text}");
        assert_eq!(view.message(), obj.message, "{text}");
        assert_eq!(ReceivedError::reason(&view), obj.reason(), "{text}");
        assert_eq!(
            ReceivedError::retry_after(&view),
            obj.retry_after(),
            "{text}"
        );
        for key in keys {
            assert_eq!(
                view.data_value(key).read::<Value>(),
                obj.data_field::<Value>(key),
                "{key} in {text}"
            );
            assert_eq!(
                view.data_value(key).read::<u64>(),
                obj.data_field::<u64>(key),
                "{key} in {text}"
            );
        }
        assert_eq!(*view.to_object(), obj, "{text}");
    }

    #[test]
    fn reads_the_first_error_info_and_retry_info() {
        let text = r#"{"code":-32052,"message":"slow down","data":[
            7, "x", null, [1, {"@type":"google.rpc.ErrorInfo","reason":"NESTED"}],
            {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"},
            {"reason":"NO_TYPE"},
            {"metadata":{"n":"7"},"domain":"d","reason":"RATE_LIMITED",
             "@type":"type.googleapis.com/google.rpc.ErrorInfo","extra":{"deep":[1,2]}},
            {"@type":"google.rpc.ErrorInfo","reason":"SECOND"},
            {"@type":"google.rpc.RetryInfo","retryDelay":{"seconds":9}}]}"#;
        let view = ErrorView::parse(text).unwrap();
        assert_eq!(ReceivedError::reason(&view), Some("RATE_LIMITED"));
        assert_eq!(view.retry_after(), Some(Duration::from_millis(1500)));
        assert_eq!(view.data_value("n").read::<u32>(), Some(7));
        agrees(text, &["n", "absent", "domain", "reason"]);
    }

    #[test]
    fn escapes_duplicates_and_wrong_types_read_as_in_the_object() {
        for text in [
            // Escaped strings and keys.
            r#"{"code":-32001,"message":"a\"b\u00e9","data":[{"@type":"google.rpc.Error\u0049nfo","reas\u006fn":"TASK_\u004eOT_FOUND","metadata":{"task\u0049d":"t-\"1\"","n":"\u0037"}}]}"#,
            // A member sent twice keeps its last value.
            r#"{"code":-32001,"message":"m","data":[{"@type":"google.rpc.ErrorInfo","reason":"A","reason":"B","metadata":{"n":"1","n":"2"}}]}"#,
            // A reason that is not a string, metadata that is not an object.
            r#"{"code":-32001,"message":"m","data":[{"@type":"google.rpc.ErrorInfo","reason":5,"metadata":[1]}]}"#,
            r#"{"code":-32001,"message":"m","data":[{"@type":7,"reason":"R"}]}"#,
            // Metadata values that are not strings (some SDKs send them).
            r#"{"code":-32001,"message":"m","data":[{"@type":"google.rpc.ErrorInfo","metadata":{"n":7,"taskId":null,"o":{"a":1}}}]}"#,
            // A RetryInfo without a delay; one with a bad delay.
            r#"{"code":-32052,"message":"m","data":[{"@type":"google.rpc.RetryInfo"},{"@type":"google.rpc.RetryInfo","retryDelay":"3s"}]}"#,
            r#"{"code":-32052,"message":"m","data":[{"@type":"google.rpc.RetryInfo","retryDelay":"-3s"}]}"#,
            // No data, null data, empty array.
            r#"{"code":-32603,"message":"m"}"#,
            r#"{"code":-32603,"message":"m","data":null}"#,
            r#"{"code":-32603,"data":[]}"#,
            // The legacy profile and other shapes are read in full.
            r#"{"code":-32052,"message":"m","data":{"reason":"RATE_LIMITED","retryAfter":4,"n":7,"taskId":"t"}}"#,
            r#"{"code":-32603,"message":"m","data":"text"}"#,
            r#"{"code":-32603,"message":"m","data":12}"#,
            r#"{"code":-32603,"message":"m","data":true}"#,
        ] {
            agrees(
                text,
                &["n", "taskId", "o", "absent", "reason", "retryAfter"],
            );
        }
    }

    #[test]
    fn refuses_what_the_object_refuses() {
        for text in [
            "",
            "[]",
            r#"{"message":"no code"}"#,
            r#"{"code":"1","message":"m"}"#,
            r#"{"code":1,"message":null}"#,
            r#"{"code":1,"message":"m","data":[{"@type":"x"}"#,
            r#"{"code":1,"code":2,"message":"m"}"#,
        ] {
            assert!(serde_json::from_str::<ErrorObject>(text).is_err(), "{text}");
            assert!(ErrorView::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_long_array_is_scanned_without_growing() {
        // 100,000 details before the ErrorInfo: read, skipped, none kept.
        let mut text = String::from(r#"{"code":-32001,"message":"m","data":["#);
        for _ in 0..100_000 {
            text.push_str(r#"{"@type":"google.rpc.Help","links":[]},"#);
        }
        text.push_str(r#"{"@type":"google.rpc.ErrorInfo","reason":"LAST"}]}"#);
        let view = ErrorView::parse(&text).unwrap();
        assert_eq!(ReceivedError::reason(&view), Some("LAST"));
        assert!(std::mem::size_of_val(&view) < 256);
    }
}
