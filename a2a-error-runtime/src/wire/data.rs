//! `DataSink`: where an error writes its `#[a2a(data)]` fields.
//!
//! The derive calls [`DataSink::field`] once per data field. The sink writes straight into the
//! output bytes (no intermediate `serde_json::Value`), in the shape the wire profile wants:
//! string-valued ErrorInfo metadata for A2A 1.0, plain JSON members for the legacy profile.

use serde::Serialize;
use serde_json::{Map, Value};

/// Receives an error's published data fields. Created by the encoder, filled by
/// [`A2aError::write_data`](crate::A2aError::write_data).
pub struct DataSink<'a> {
    target: Target<'a>,
}

enum Target<'a> {
    /// ErrorInfo `metadata`: a `map<string, string>`, so non-string values go as JSON text.
    Metadata { out: &'a mut Vec<u8>, first: bool },
    /// Members of the legacy `data` object, after its fixed members.
    Members { out: &'a mut Vec<u8> },
    /// Typed JSON values, for [`A2aError::metadata`](crate::A2aError::metadata).
    Map(&'a mut Map<String, Value>),
}

impl<'a> DataSink<'a> {
    /// A sink writing the members of an ErrorInfo `metadata` object (without braces).
    pub(crate) fn metadata(out: &'a mut Vec<u8>) -> Self {
        DataSink {
            target: Target::Metadata { out, first: true },
        }
    }

    /// A sink writing further members of an ErrorInfo `metadata` object that already has some.
    pub(crate) fn metadata_after(out: &'a mut Vec<u8>) -> Self {
        DataSink {
            target: Target::Metadata { out, first: false },
        }
    }

    /// A sink writing `,"key":value` members into an already-open JSON object.
    pub(crate) fn members(out: &'a mut Vec<u8>) -> Self {
        DataSink {
            target: Target::Members { out },
        }
    }

    /// A sink collecting typed JSON values into `map`.
    pub(crate) fn map(map: &'a mut Map<String, Value>) -> Self {
        DataSink {
            target: Target::Map(map),
        }
    }

    /// Whether the fields go into the legacy profile's `data` object (JSON values), rather than
    /// A2A 1.0 ErrorInfo metadata (strings) or a typed map.
    pub(crate) fn is_legacy(&self) -> bool {
        matches!(self.target, Target::Members { .. })
    }

    /// Publishes one data field. A value that serializes to `null` (a `None`) is omitted, and
    /// so is one whose `Serialize` impl fails: a broken field must not break the error reply.
    pub fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        match &mut self.target {
            Target::Metadata { out, first } => {
                let Some(value_start) = write_member(out, !*first, key, value) else {
                    return;
                };
                if out[value_start] != b'"' {
                    // map<string,string>: a number, list or object travels as its JSON text.
                    let text = out.split_off(value_start);
                    // The bytes came from serde_json, so they are UTF-8.
                    write_str(out, std::str::from_utf8(&text).unwrap_or_default());
                }
                *first = false;
            }
            Target::Members { out } => {
                let _ = write_member(out, true, key, value);
            }
            Target::Map(map) => {
                if let Ok(value) = serde_json::to_value(value)
                    && !value.is_null()
                {
                    map.insert(key.to_owned(), value);
                }
            }
        }
    }
}

/// Appends `"key":value` (after a comma when `comma`) and returns where the value starts;
/// appends nothing and returns `None` when the value is `null` or does not serialize.
fn write_member<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    comma: bool,
    key: &str,
    value: &T,
) -> Option<usize> {
    let start = out.len();
    if comma {
        out.push(b',');
    }
    write_str(out, key);
    out.push(b':');
    let value_start = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() || &out[value_start..] == b"null" {
        out.truncate(start);
        return None;
    }
    Some(value_start)
}

/// Appends `s` as a JSON string literal.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    // Most strings we write (codes' messages, reasons, domains, ids) need no escape: those
    // are copied between quotes in one go, without serde_json's writer (~150 instructions a
    // short string against ~180). A fold, not `any`: without an early exit it vectorizes.
    let escapes = s.bytes().fold(false, |seen, b| {
        seen | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if !escapes {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for s in [
            "",
            "Task not found",
            "a\"b",
            "back\\slash",
            "tab\t",
            "\u{1}",
            "ünï €",
            "\u{7f}",
        ] {
            let mut out = Vec::new();
            write_str(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn metadata_values_are_strings_and_none_is_omitted() {
        let mut out = Vec::new();
        let mut sink = DataSink::metadata(&mut out);
        sink.field("gone", &Option::<u32>::None);
        sink.field("taskId", "t-\"1\"");
        sink.field("index", &7u32);
        sink.field("tags", &["a", "b"]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""taskId":"t-\"1\"","index":"7","tags":"[\"a\",\"b\"]""#
        );
    }

    #[test]
    fn members_keep_json_types() {
        let mut out = b"{\"a\":1".to_vec();
        let mut sink = DataSink::members(&mut out);
        sink.field("index", &7u32);
        sink.field("none", &Option::<String>::None);
        out.push(b'}');
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value, serde_json::json!({"a": 1, "index": 7}));
    }

    #[test]
    fn failing_serialize_is_skipped_not_half_written() {
        use std::collections::BTreeMap;
        // A map with non-string keys cannot be JSON.
        let bad: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let mut out = Vec::new();
        let mut sink = DataSink::metadata(&mut out);
        sink.field("bad", &bad);
        sink.field("ok", "yes");
        assert_eq!(out, br#""ok":"yes""#);
    }
}
