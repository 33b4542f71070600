//! `DataSink`: where an error writes its `#[a2a(data)]` fields.
//!
//! The derive calls [`DataSink::field`] once per data field. The sink writes straight into the
//! output bytes (no intermediate `serde_json::Value`), in the shape the wire profile wants:
//! string-valued ErrorInfo metadata for A2A 1.0, plain JSON members for the legacy profile.

use serde::Serialize;
use serde_json::{Map, Value};

/// Receives an error's published data fields. Created by the encoder, filled by
/// [`A2aError::write_data`](crate::error::A2aError::write_data).
pub struct DataSink<'a> {
    target: Target<'a>,
}

enum Target<'a> {
    /// ErrorInfo `metadata`: a `map<string, string>`, so non-string values go as JSON text.
    Metadata { out: &'a mut Vec<u8>, first: bool },
    /// Members of the legacy `data` object, after its fixed members.
    Members { out: &'a mut Vec<u8> },
    /// Typed JSON values, for [`A2aError::metadata`](crate::error::A2aError::metadata).
    Map(&'a mut Map<String, Value>),
}

impl<'a> DataSink<'a> {
    /// A sink writing the members of an ErrorInfo `metadata` object (without braces).
    pub fn metadata(out: &'a mut Vec<u8>) -> Self {
        DataSink {
            target: Target::Metadata { out, first: true },
        }
    }

    /// A sink writing further members of an ErrorInfo `metadata` object that already has some.
    pub fn metadata_after(out: &'a mut Vec<u8>) -> Self {
        DataSink {
            target: Target::Metadata { out, first: false },
        }
    }

    /// A sink writing `,"key":value` members into an already-open JSON object.
    pub fn members(out: &'a mut Vec<u8>) -> Self {
        DataSink {
            target: Target::Members { out },
        }
    }

    /// A sink collecting typed JSON values into `map`.
    pub fn map(map: &'a mut Map<String, Value>) -> Self {
        DataSink {
            target: Target::Map(map),
        }
    }

    /// Whether the fields go into the legacy profile's `data` object (JSON values), rather than
    /// A2A 1.0 ErrorInfo metadata (strings) or a typed map.
    pub fn is_legacy(&self) -> bool {
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
    // Most data fields are strings (ids, names): written as `write_str` writes them, without
    // serde_json's writer. Anything else goes through serde_json.
    if value.serialize(StrOnly(out)).is_ok() {
        return Some(value_start);
    }
    if serde_json::to_writer(&mut *out, value).is_err() || &out[value_start..] == b"null" {
        out.truncate(start);
        return None;
    }
    Some(value_start)
}

/// Whether `bytes` hold a byte JSON escapes in a string (a control byte, `"` or `\\`). A
/// long text is checked with a fold, which vectorizes without an early exit; a short one (a
/// key, an id) eight bytes at a time in a `u64` (a byte loop took ~8 instructions a byte:
/// ~100 for a 12-byte id).
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let escaped = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    if bytes.len() > 32 {
        return bytes.iter().fold(false, |seen, &b| seen | escaped(b));
    }
    // A byte of `word` below `bound` (at most 0x80) sets the high bit of its byte here:
    // "hasless" of Bit Twiddling Hacks, exact as a whole; a bound of 1 finds a zero byte.
    let below = |word: u64, bound: u64| word.wrapping_sub(ONES * bound) & !word;
    // A byte below 0x20, or one equal to `"` or `\\` (a zero byte once xor-ed with it).
    let any = |word: u64| {
        let quote = word ^ (ONES * u64::from(b'"'));
        let slash = word ^ (ONES * u64::from(b'\\'));
        (below(word, 0x20) | below(quote, 1) | below(slash, 1)) & HIGHS != 0
    };
    let word_at = |at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    if bytes.len() < 8 {
        return bytes.iter().any(|&b| escaped(b));
    }
    let mut at = 0;
    while at + 8 <= bytes.len() {
        if any(word_at(at)) {
            return true;
        }
        at += 8;
    }
    // The last eight bytes, overlapping what was checked.
    at < bytes.len() && any(word_at(bytes.len() - 8))
}

/// A serializer that writes a string (or `Some` string) as [`write_str`] does and refuses
/// anything else, having written nothing.
struct StrOnly<'a>(&'a mut Vec<u8>);

/// What [`StrOnly`] refuses with: the value is not a string.
#[derive(Debug, thiserror::Error)]
#[error("not a string")]
struct NotStr;

impl serde::ser::Error for NotStr {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotStr
    }
}

/// The methods of [`StrOnly`] that refuse a value.
macro_rules! refuse {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), NotStr> { Err(NotStr) })*
    };
}

impl serde::Serializer for StrOnly<'_> {
    type Ok = ();
    type Error = NotStr;
    type SerializeSeq = serde::ser::Impossible<(), NotStr>;
    type SerializeTuple = serde::ser::Impossible<(), NotStr>;
    type SerializeTupleStruct = serde::ser::Impossible<(), NotStr>;
    type SerializeTupleVariant = serde::ser::Impossible<(), NotStr>;
    type SerializeMap = serde::ser::Impossible<(), NotStr>;
    type SerializeStruct = serde::ser::Impossible<(), NotStr>;
    type SerializeStructVariant = serde::ser::Impossible<(), NotStr>;

    fn serialize_str(self, value: &str) -> Result<(), NotStr> {
        write_str(self.0, value);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), NotStr> {
        value.serialize(self)
    }

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), NotStr> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotStr> {
        Err(NotStr)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotStr> {
        Err(NotStr)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotStr> {
        Err(NotStr)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotStr> {
        Err(NotStr)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotStr> {
        Err(NotStr)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotStr> {
        Err(NotStr)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotStr> {
        Err(NotStr)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotStr> {
        Err(NotStr)
    }
}

/// Appends `s` as a JSON string literal.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    // Most strings we write (codes' messages, reasons, domains, ids) need no escape: those
    // are copied between quotes in one go, without serde_json's writer.
    let escapes = needs_escape(s.as_bytes());
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
    fn every_byte_that_needs_an_escape_is_found_at_every_place_and_length() {
        for len in 0..=40 {
            for at in 0..len {
                for byte in 0u8..=255 {
                    // Around it, bytes next to the ones escaped (0x20, 0x21, 0x23, 0x5b,
                    // 0x5d) and high ones.
                    let around = [b'a', 0x20, 0xff, 0x21, 0x23, 0x5b, 0x5d, 0x80];
                    let mut bytes: Vec<u8> = (0..len).map(|i| around[i % around.len()]).collect();
                    bytes[at] = byte;
                    let expected = byte < 0x20 || byte == b'"' || byte == b'\\';
                    assert_eq!(needs_escape(&bytes), expected, "{byte:#x} at {at} of {len}");
                }
            }
            assert!(!needs_escape(&vec![0x7fu8; len]));
            assert!(!needs_escape(&vec![0xffu8; len]));
        }
    }

    #[test]
    fn string_fields_are_written_as_serde_json_writes_them() {
        #[derive(Serialize)]
        struct Name(String);
        let long = "x".repeat(40) + "\"" + &"y".repeat(40);
        for value in ["", "t-1", "a\"b", "tab\t", "\u{1}", "ünï €", long.as_str()] {
            let mut out = Vec::new();
            DataSink::members(&mut out).field("k", value);
            DataSink::members(&mut out).field("k", &Some(value.to_owned()));
            DataSink::members(&mut out).field("k", &Name(value.to_owned()));
            let json = serde_json::to_string(value).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!(",\"k\":{json}").repeat(3)
            );
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
