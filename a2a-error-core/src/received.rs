//! `ReceivedError`: what the client mirror reads of a received error, whether the peer's text
//! was read into an owned [`ErrorObject`] or only viewed in place ([`ErrorView`]).
//!
//! The derive's mirror is written once against this trait (through `dyn`, so it is compiled
//! once per enum, not once per reader).
//!
//! [`ErrorView`]: crate::view::ErrorView

use std::borrow::Cow;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::de::Visitor;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;

use crate::object::ErrorObject;

/// A received error object, owned or borrowed: the few things the client mirror reads.
pub trait ReceivedError {
    /// The JSON-RPC code.
    fn code(&self) -> i32;
    /// The ErrorInfo reason (the legacy `data.reason`), if the peer sent one.
    fn reason(&self) -> Option<&str>;
    /// The retry delay the peer asked for (RetryInfo, else the legacy `retryAfter`).
    fn retry_after(&self) -> Option<Duration>;
    /// Published data field `key` as received (reserved names are never data fields).
    fn data_value(&self, key: &str) -> DataValue<'_>;
    /// The whole object, owned: borrowed when it already is one, read in full from a view.
    fn to_object(&self) -> Cow<'_, ErrorObject>;
}

/// One published data field as received.
#[derive(Copy, Clone, Debug)]
pub enum DataValue<'a> {
    /// The peer did not send the field (it reads like `null`, so `Option` fields are `None`).
    Absent,
    /// A value of an owned object.
    Value(&'a Value),
    /// The JSON text of a value, in the peer's bytes.
    Raw(&'a RawValue),
}

impl DataValue<'_> {
    /// Reads the value as `T`. ErrorInfo metadata is a string map, so a string is tried as `T`
    /// first and then as the JSON text of a `T` (`"7"` → `7u32`). `None` when it fits neither.
    pub fn read<T: DeserializeOwned>(self) -> Option<T> {
        match self {
            DataValue::Absent => T::deserialize(&Value::Null).ok(),
            DataValue::Value(value) => T::deserialize(value).ok().or_else(|| match value {
                Value::String(text) => serde_json::from_str(text).ok(),
                _ => None,
            }),
            DataValue::Raw(raw) => serde_json::from_str(raw.get()).ok().or_else(|| {
                // A string's own text, escapes undone, read as the JSON of a `T` (a value that
                // is not a string does not read as `Text`).
                let text: Text<'_> = serde_json::from_str(raw.get()).ok()?;
                serde_json::from_str(&text.0).ok()
            }),
        }
    }
}

impl ReceivedError for ErrorObject {
    fn code(&self) -> i32 {
        self.code
    }

    fn reason(&self) -> Option<&str> {
        ErrorObject::reason(self)
    }

    fn retry_after(&self) -> Option<Duration> {
        ErrorObject::retry_after(self)
    }

    fn data_value(&self, key: &str) -> DataValue<'_> {
        match self.metadata_value(key) {
            Some(value) => DataValue::Value(value),
            None => DataValue::Absent,
        }
    }

    fn to_object(&self) -> Cow<'_, ErrorObject> {
        Cow::Borrowed(self)
    }
}

/// Read here, beside [`ReceivedError`], which both received forms implement.
impl ErrorObject {
    /// Decodes data field `key` into `T`.
    ///
    /// ErrorInfo metadata is a string map, so a string is tried as `T` first and then as the
    /// JSON text of a `T` (`"7"` → `7u32`). An absent key decodes like `null`, so `Option`
    /// fields come back `None`. Returns `None` when the value does not fit `T`.
    pub fn data_field<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        ReceivedError::data_value(self, key).read()
    }
}

/// A JSON string, borrowed from the text unless it has escapes.
#[derive(Default)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}
