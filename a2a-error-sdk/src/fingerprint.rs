//! A message's fingerprint: what makes two SendMessages with one `messageId` the same request
//! to the dedup and to a resumed stream. It is the hash of the message's protobuf encoding,
//! which is canonical (the SDK's metadata is a `HashMap`, whose JSON order is not; the
//! protobuf `Struct` sorts its keys), so a retry that builds its metadata in another order
//! has the same fingerprint, on every replica and across versions of this crate.
//!
//! The common message (no metadata, no `data` part) is encoded here, byte for byte as prost
//! encodes the SDK's conversion of it, straight into the thread's scratch: no copy of the
//! message, no allocation. Any other is converted and encoded by the SDK's crates.

use a2a::{Message, Part, PartContent};

/// The fingerprint of `message`.
pub(crate) fn of_message(message: &Message) -> u64 {
    a2a_error_runtime::wire::scratch::with(|out| {
        if !plain::write_message(message, out) {
            out.clear();
            let proto = a2a_pb::pbconv::to_proto_message(message);
            // A `Vec` grows as needed: encoding into it cannot fail.
            let _ = prost::Message::encode(&proto, out);
        }
        a2a_error_runtime::server::fingerprint(out)
    })
}

/// The protobuf encoding of messages without metadata or `data` parts, as prost writes it:
/// fields in tag order, a scalar or string field left out at its default, a part (and the
/// oneof's content, even empty) always written, each nested message after its length.
mod plain {
    use super::*;
    use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

    /// Writes `message`'s encoding to `out`; false (with `out` partly written) when it has
    /// something this encoder leaves to the SDK's conversion.
    pub(super) fn write_message(message: &Message, out: &mut Vec<u8>) -> bool {
        if message.metadata.is_some() || !message.parts.iter().all(is_plain) {
            return false;
        }
        string(out, 1, &message.message_id);
        string(out, 2, message.context_id.as_deref().unwrap_or(""));
        string(out, 3, message.task_id.as_deref().unwrap_or(""));
        let role = a2a_pb::pbconv::to_proto_role(&message.role);
        if role != 0 {
            encode_key(4, WireType::Varint, out);
            // An enum is an `int32`: a negative one takes ten bytes, as prost writes it.
            encode_varint(i64::from(role) as u64, out);
        }
        for part in &message.parts {
            encode_key(5, WireType::LengthDelimited, out);
            encode_varint(part_len(part) as u64, out);
            write_part(part, out);
        }
        for extension in message.extensions.iter().flatten() {
            repeated(out, 7, extension.as_bytes());
        }
        for task in message.reference_task_ids.iter().flatten() {
            repeated(out, 8, task.as_bytes());
        }
        true
    }

    fn is_plain(part: &Part) -> bool {
        part.metadata.is_none() && !matches!(part.content, PartContent::Data(_))
    }

    /// A part's content (its oneof, tags 1 to 3), then filename (6) and media type (7).
    fn content(part: &Part) -> (u32, &[u8]) {
        match &part.content {
            PartContent::Text(text) => (1, text.as_bytes()),
            PartContent::Raw(raw) => (2, raw),
            PartContent::Url(url) => (3, url.as_bytes()),
            // Not plain: never written here.
            PartContent::Data(_) => (0, &[]),
        }
    }

    fn part_len(part: &Part) -> usize {
        let (tag, bytes) = content(part);
        field_len(tag, bytes.len())
            + string_len(6, part.filename.as_deref().unwrap_or(""))
            + string_len(7, part.media_type.as_deref().unwrap_or(""))
    }

    fn write_part(part: &Part, out: &mut Vec<u8>) {
        let (tag, bytes) = content(part);
        repeated(out, tag, bytes);
        string(out, 6, part.filename.as_deref().unwrap_or(""));
        string(out, 7, part.media_type.as_deref().unwrap_or(""));
    }

    /// A string field: left out when empty.
    fn string(out: &mut Vec<u8>, tag: u32, value: &str) {
        if !value.is_empty() {
            repeated(out, tag, value.as_bytes());
        }
    }

    /// A length-delimited field, written even when empty (an element of a repeated field, a
    /// oneof's content).
    fn repeated(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
        encode_key(tag, WireType::LengthDelimited, out);
        encode_varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    fn string_len(tag: u32, value: &str) -> usize {
        if value.is_empty() {
            0
        } else {
            field_len(tag, value.len())
        }
    }

    /// The bytes of a length-delimited field of `len` bytes.
    fn field_len(tag: u32, len: usize) -> usize {
        key_len(tag) + encoded_len_varint(len as u64) + len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a::Role;
    use std::collections::HashMap;

    fn prost_bytes(message: &Message) -> Vec<u8> {
        prost::Message::encode_to_vec(&a2a_pb::pbconv::to_proto_message(message))
    }

    fn part(content: PartContent, filename: Option<&str>, media_type: Option<&str>) -> Part {
        Part {
            content,
            filename: filename.map(str::to_owned),
            media_type: media_type.map(str::to_owned),
            metadata: None,
        }
    }

    fn message(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m-1".to_owned(),
            context_id: None,
            task_id: None,
            role: Role::User,
            parts,
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        }
    }

    /// Messages of every shape the plain encoder takes, with lengths across a varint's byte
    /// boundaries: the same bytes as prost's encoding of the SDK's conversion.
    #[test]
    fn plain_messages_encode_as_prost_does() {
        let mut cases = Vec::new();
        for len in [0, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let text = "é".repeat(len / 2) + &"x".repeat(len % 2);
            cases.push(message(vec![part(PartContent::Text(text), None, None)]));
        }
        for role in [Role::Unspecified, Role::User, Role::Agent] {
            let mut full = message(vec![
                part(PartContent::Text(String::new()), Some(""), Some("")),
                part(
                    PartContent::Raw(vec![0, 255, 7]),
                    Some("a.bin"),
                    Some("application/octet-stream"),
                ),
                part(
                    PartContent::Url("https://x.test/f".into()),
                    None,
                    Some("text/plain"),
                ),
            ]);
            full.role = role;
            full.message_id = String::new();
            full.context_id = Some("ctx".into());
            full.task_id = Some("task".into());
            full.extensions = Some(vec!["https://ext.test/1".into(), String::new()]);
            full.reference_task_ids = Some(vec!["t1".into(), "t2".into()]);
            cases.push(full);
        }
        cases.push(message(Vec::new()));
        let mut empty_options = message(Vec::new());
        empty_options.context_id = Some(String::new());
        empty_options.extensions = Some(Vec::new());
        cases.push(empty_options);
        for case in &cases {
            let mut out = Vec::new();
            assert!(plain::write_message(case, &mut out), "{case:?}");
            assert_eq!(out, prost_bytes(case), "{case:?}");
            assert_eq!(
                of_message(case),
                a2a_error_runtime::server::fingerprint(&out)
            );
        }
    }

    /// Metadata and `data` parts go through the SDK's conversion; metadata in another order
    /// is the same fingerprint, another value another.
    #[test]
    fn other_messages_are_converted_and_metadata_order_does_not_count() {
        let mut out = Vec::new();
        let data = message(vec![part(
            PartContent::Data(serde_json::json!({"b": 1, "a": [true, null]})),
            None,
            None,
        )]);
        assert!(!plain::write_message(&data, &mut out));
        assert_eq!(
            of_message(&data),
            a2a_error_runtime::server::fingerprint(&prost_bytes(&data))
        );

        let with = |pairs: &[(&str, i64)]| {
            let mut with = message(vec![part(PartContent::Text("hi".into()), None, None)]);
            let mut metadata = HashMap::new();
            for (key, value) in pairs {
                metadata.insert((*key).to_owned(), serde_json::json!(value));
            }
            with.metadata = Some(metadata);
            with
        };
        let one = with(&[("a", 1), ("b", 2), ("c", 3), ("d", 4)]);
        let other_order = with(&[("d", 4), ("c", 3), ("b", 2), ("a", 1)]);
        assert_eq!(of_message(&one), of_message(&other_order));
        assert_ne!(of_message(&one), of_message(&with(&[("a", 1)])));
        assert_ne!(
            of_message(&one),
            of_message(&message(vec![part(
                PartContent::Text("hi".into()),
                None,
                None
            )]))
        );
    }
}
