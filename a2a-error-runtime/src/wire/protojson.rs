//! Protobuf messages written as the A2A JSON: the SDK bridge and the gRPC client write them as
//! the other bindings return them, and as the official SDK's routers do.
//!
//! The SDK converts a message to a `serde_json::Value` and writes that: members in key order
//! at every level (a `Value`'s objects are sorted maps), timestamps mended to end in `Z`.
//! [`to_vec`] writes the same bytes without the tree: serde_json's own writer, with a
//! [`Formatter`] that gathers each object's members and writes them sorted when the object
//! ends, and mends as it goes (a SendMessage reply through the bridge: ~36k instructions, was
//! ~45k through a `Value`, under callgrind). Protobuf's canonical JSON is written on top: an
//! integral double within ±2^53 (a `google.protobuf.Struct`'s number, such as a failed task's
//! `code`) as an integer, `-32603` rather than `-32603.0`, as a client that reads the code as
//! an integer needs.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// The largest magnitude a double holds exactly as an integer: 2^53.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// The members whose string value is a `google.protobuf.Timestamp` in `a2a.proto` (the SDK's
/// own list): written with `Z` where the timestamp type writes `+00:00`.
#[doc(hidden)]
pub const TIMESTAMP_MEMBERS: [&[u8]; 2] = [b"timestamp", b"statusTimestampAfter"];

/// `value`'s JSON, members sorted by key at every level (as a `serde_json::Value` writes
/// them), every integral double within ±2^53 as an integer and, with `timestamps`, every
/// timestamp member's `+00:00` as `Z` (as the SDK mends them).
#[doc(hidden)]
pub fn to_vec<T: Serialize + ?Sized>(value: &T, timestamps: bool) -> serde_json::Result<Vec<u8>> {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut state) => {
            let written = state.write(value, timestamps);
            if state.kept_bytes() > KEPT_BYTES {
                *state = State::default();
            }
            written
        }
        // A value whose `Serialize` writes another with this function: a scratch of its own.
        Err(_) => State::default().write(value, timestamps),
    })
}

/// JSON that [`to_vec`] wrote, as text: UTF-8 checked, not assumed.
pub(crate) fn text(json: Vec<u8>) -> serde_json::Result<String> {
    String::from_utf8(json)
        .map_err(|error| <serde_json::Error as serde::ser::Error>::custom(error.utf8_error()))
}

/// JSON that [`to_vec`] wrote, as a `RawValue` (to be written verbatim by serde_json): its
/// text is checked again in full, as a `RawValue` is made no other way.
#[doc(hidden)]
pub fn raw(json: Vec<u8>) -> serde_json::Result<Box<serde_json::value::RawValue>> {
    serde_json::value::RawValue::from_string(text(json)?)
}

thread_local! {
    /// This thread's scratch, kept between replies so that writing one allocates only its
    /// result (freed when it grew past [`KEPT_BYTES`]).
    static SCRATCH: RefCell<State> = RefCell::default();
}

/// The most scratch a thread keeps between replies: 256 KiB of the reply's bytes and of its
/// objects' members together (a larger reply's are freed once it is written).
const KEPT_BYTES: usize = 256 << 10;

/// A double that is integral and within ±2^53, as that integer.
#[doc(hidden)]
pub fn integral(double: f64) -> Option<i64> {
    (double.fract() == 0.0 && double.abs() <= EXACT).then_some(double as i64)
}

/// What the writer holds while it writes: the bytes so far, an open object's members at
/// their end (each its key then its value, without the `,` and `:` written when the object
/// is), where each member is, and where each open object starts.
#[derive(Default)]
struct State {
    timestamps: bool,
    bytes: Vec<u8>,
    members: Vec<Member>,
    /// Each open object, innermost last: where its members start in `bytes` and `members`.
    open: Vec<(usize, usize)>,
}

/// One member in the bytes: the key (with its quotes) from `start` to `key_end`, the value
/// from there to `end`.
#[derive(Clone, Copy)]
struct Member {
    start: usize,
    key_end: usize,
    end: usize,
    /// Whether the key has an escape: its text is then not its bytes (rare; see [`Member::key`]).
    escaped: bool,
}

impl Member {
    /// The key's bytes between its quotes.
    fn quoted_text(self, bytes: &[u8]) -> &[u8] {
        bytes
            .get(self.start + 1..self.key_end.saturating_sub(1))
            .unwrap_or_default()
    }

    /// The key's text, as a `Value`'s map orders it (unescaped).
    fn key(self, bytes: &[u8]) -> Cow<'_, [u8]> {
        if !self.escaped {
            return Cow::Borrowed(self.quoted_text(bytes));
        }
        match serde_json::from_slice::<String>(&bytes[self.start..self.key_end]) {
            Ok(text) => Cow::Owned(text.into_bytes()),
            Err(_) => Cow::Borrowed(self.quoted_text(bytes)),
        }
    }

    /// The order of two members' keys.
    fn order(self, other: Member, bytes: &[u8]) -> std::cmp::Ordering {
        if self.escaped || other.escaped {
            self.key(bytes).cmp(&other.key(bytes))
        } else {
            self.quoted_text(bytes).cmp(other.quoted_text(bytes))
        }
    }
}

impl State {
    /// The bytes the scratch holds on to.
    fn kept_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.members.capacity() * std::mem::size_of::<Member>()
            + self.open.capacity() * std::mem::size_of::<(usize, usize)>()
    }

    fn write<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
        timestamps: bool,
    ) -> serde_json::Result<Vec<u8>> {
        self.timestamps = timestamps;
        self.bytes.clear();
        self.members.clear();
        self.open.clear();
        let mut serializer = serde_json::Serializer::with_formatter(io::sink(), Sorted(self));
        value.serialize(&mut serializer)?;
        Ok(self.bytes.as_slice().to_vec())
    }

    /// Writes the innermost object, its members sorted, in place of its members.
    fn end_object(&mut self) {
        let Some((bytes_start, members_start)) = self.open.pop() else {
            return;
        };
        let Self { bytes, members, .. } = self;
        let object = members.get_mut(members_start..).unwrap_or_default();
        // An object's keys are distinct, so an unstable sort writes what a sorted map does.
        object.sort_unstable_by(|a, b| a.order(*b, bytes));
        let written = bytes.len();
        bytes.reserve(written - bytes_start + object.len() + 2);
        bytes.push(b'{');
        for (n, member) in object.iter().enumerate() {
            if n > 0 {
                bytes.push(b',');
            }
            bytes.extend_from_within(member.start..member.key_end);
            bytes.push(b':');
            bytes.extend_from_within(member.key_end..member.end);
        }
        bytes.push(b'}');
        bytes.copy_within(written.., bytes_start);
        bytes.truncate(bytes_start + (bytes.len() - written));
        members.truncate(members_start);
    }

    fn begin_member(&mut self) {
        if !self.open.is_empty() {
            let start = self.bytes.len();
            self.members.push(Member {
                start,
                key_end: start,
                end: start,
                escaped: false,
            });
        }
    }

    fn end_key(&mut self) {
        if let Some(member) = self.members.last_mut() {
            member.key_end = self.bytes.len();
            member.escaped = self.bytes[member.start..member.key_end].contains(&b'\\');
        }
    }

    /// The member is written; a timestamp's `+00:00` becomes `Z`.
    fn end_member(&mut self) {
        let Some(member) = self.members.last_mut() else {
            return;
        };
        let bytes = &mut self.bytes;
        if self.timestamps
            && !member.escaped
            && TIMESTAMP_MEMBERS.contains(&member.quoted_text(bytes))
            && bytes[member.key_end..].starts_with(b"\"")
            && bytes.ends_with(b"+00:00\"")
        {
            bytes.truncate(bytes.len() - b"+00:00\"".len());
            bytes.extend_from_slice(b"Z\"");
        }
        member.end = bytes.len();
    }
}

/// serde_json's compact formatter writing into [`State`] instead of the serializer's writer
/// (which is a sink): the members of an object are gathered and written when it ends.
struct Sorted<'a>(&'a mut State);

/// Each write of the compact formatter, into the state's current place.
macro_rules! compact {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $name<W: ?Sized + Write>(&mut self, _: &mut W $(, $arg: $ty)*) -> io::Result<()> {
                CompactFormatter.$name(&mut self.0.bytes $(, $arg)*)
            }
        )*
    };
}

impl Formatter for Sorted<'_> {
    compact! {
        write_null();
        write_bool(value: bool);
        write_i8(value: i8);
        write_i16(value: i16);
        write_i32(value: i32);
        write_i64(value: i64);
        write_i128(value: i128);
        write_u8(value: u8);
        write_u16(value: u16);
        write_u32(value: u32);
        write_u64(value: u64);
        write_u128(value: u128);
        write_number_str(value: &str);
        begin_string();
        end_string();
        write_string_fragment(fragment: &str);
        write_char_escape(char_escape: CharEscape);
        write_byte_array(value: &[u8]);
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        write_raw_fragment(fragment: &str);
    }

    // A `Value` holds an f32 as the f64 it is, and writes it so.
    fn write_f32<W: ?Sized + Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }

    fn write_f64<W: ?Sized + Write>(&mut self, _: &mut W, value: f64) -> io::Result<()> {
        match integral(value) {
            Some(integer) => CompactFormatter.write_i64(&mut self.0.bytes, integer),
            None => CompactFormatter.write_f64(&mut self.0.bytes, value),
        }
    }

    fn begin_object<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        let state = &mut *self.0;
        state.open.push((state.bytes.len(), state.members.len()));
        Ok(())
    }

    fn end_object<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.0.end_object();
        Ok(())
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, _: &mut W, _first: bool) -> io::Result<()> {
        self.0.begin_member();
        Ok(())
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.0.end_key();
        Ok(())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.0.end_member();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The reference: through a `Value`, mended as a walk of its own (the SDK's way, and this
    /// module's before it wrote directly).
    fn through_value<T: Serialize>(value: &T, timestamps: bool) -> String {
        fn mend(value: &mut Value, timestamps: bool) {
            match value {
                Value::Number(number) if number.is_f64() => {
                    if let Some(integer) = number.as_f64().and_then(integral) {
                        *value = Value::from(integer);
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(|item| mend(item, timestamps)),
                Value::Object(members) => {
                    for (key, member) in members.iter_mut() {
                        if timestamps
                            && TIMESTAMP_MEMBERS.contains(&key.as_bytes())
                            && let Value::String(text) = member
                            && let Some(prefix) = text.strip_suffix("+00:00")
                        {
                            *text = format!("{prefix}Z");
                        }
                        mend(member, timestamps);
                    }
                }
                _ => {}
            }
        }
        let mut value = serde_json::to_value(value).unwrap();
        mend(&mut value, timestamps);
        serde_json::to_string(&value).unwrap()
    }

    fn direct<T: Serialize>(value: &T, timestamps: bool) -> String {
        String::from_utf8(to_vec(value, timestamps).unwrap()).unwrap()
    }

    #[test]
    fn writes_what_a_value_writes_mended() {
        let value = json!({
            "code": -32603.0, "ratio": 0.5, "big": 1e300, "edge": 9007199254740992.0,
            "past": 9007199254740994.0, "int": 7, "list": [1.0, {"deep": -2.0, "a": []}, "3.0", null],
            "timestamp": "2026-11-27T10:00:00.5+00:00", "when": "2026-11-27T10:00:00+00:00",
            "nested": {"statusTimestampAfter": "x+00:00", "timestamp": 5, "z": {}, "b": true},
            "esc\"aped": "a\nb", "escaped": "\u{1}", "\u{7f}": "del", "é": "e", "": "empty",
        });
        for timestamps in [false, true] {
            assert_eq!(
                direct(&value, timestamps),
                through_value(&value, timestamps)
            );
        }
        let written = direct(&value, true);
        assert!(written.contains(r#""code":-32603,"#), "{written}");
        assert!(
            written.contains(r#""timestamp":"2026-11-27T10:00:00.5Z""#),
            "{written}"
        );
        assert!(
            written.contains(r#""when":"2026-11-27T10:00:00+00:00""#),
            "{written}"
        );
        assert!(direct(&value, false).contains(r#"10:00:00.5+00:00""#));
    }

    #[test]
    fn writes_structs_maps_and_enums_as_a_value_does() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Reply {
            zeta: u64,
            alpha: Vec<Part>,
            metadata: std::collections::HashMap<String, f64>,
            by_number: std::collections::HashMap<i32, f32>,
            timestamp: &'static str,
            nothing: Option<u8>,
            empty: Empty,
            bytes: serde_bytes_like::Bytes,
        }
        #[derive(Serialize)]
        enum Part {
            Text(String),
            Data { value: f64, kind: &'static str },
            Plain,
        }
        #[derive(Serialize)]
        struct Empty {}
        mod serde_bytes_like {
            pub struct Bytes(pub Vec<u8>);
            impl serde::Serialize for Bytes {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.serialize_bytes(&self.0)
                }
            }
        }
        let reply = Reply {
            zeta: u64::MAX,
            alpha: vec![
                Part::Text("hi".into()),
                Part::Data {
                    value: 3.0,
                    kind: "k",
                },
                Part::Plain,
            ],
            metadata: (0..20)
                .map(|n| (format!("key{n}"), f64::from(n) / 2.0))
                .collect(),
            by_number: (0..12).map(|n| (n * 7 - 30, n as f32 / 3.0)).collect(),
            timestamp: "2026-01-01T00:00:00+00:00",
            nothing: None,
            empty: Empty {},
            bytes: serde_bytes_like::Bytes(vec![0, 1, 255]),
        };
        for timestamps in [false, true] {
            assert_eq!(
                direct(&reply, timestamps),
                through_value(&reply, timestamps)
            );
        }
        assert_eq!(direct(&7u8, true), "7");
        // A reply past what a thread keeps leaves no more than that behind.
        let wide: std::collections::BTreeMap<String, u8> =
            (0..20_000).map(|n| (format!("k{n}"), 1)).collect();
        assert_eq!(direct(&wide, true), through_value(&wide, true));
        let deep = (0..300).fold(json!(1), |inner, _| json!([{"b": inner, "a": 2.0}]));
        assert_eq!(direct(&deep, true), through_value(&deep, true));
        SCRATCH.with(|kept| assert!(kept.borrow().kept_bytes() <= KEPT_BYTES));
        assert_eq!(direct(&[1.5f64, 2.0], true), "[1.5,2]");
        assert_eq!(direct(&f64::NAN, true), "null");
    }
}
