//! `DedupStore`: where remembered outcomes live, and the one record format every store keeps.
//!
//! A key holds one record: a claim by work in flight (`R`, the request's fingerprint and the
//! claim's token), or an outcome (`D`, the fingerprint, `O` or `E`, and the reply bytes).
//! Stores only move opaque bytes and compare them; the records are read here.

use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;

/// Why a store could not answer (unreachable, timed out, refused the command).
#[derive(Debug, thiserror::Error)]
#[error("dedup store: {0}")]
pub struct StoreError(pub String);

/// A place for remembered outcomes, shared by every replica that uses the same one.
///
/// Every operation is atomic per key. Implemented by [`MemoryStore`](super::MemoryStore) and,
/// with the `redis` feature, `RedisStore`.
pub trait DedupStore: Send + Sync + 'static {
    /// Stores `claim` at `key` for `ttl` unless the key holds a live record; returns that
    /// record, or `None` when the claim was stored.
    fn claim<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>>;

    /// Replaces `claim` at `key` by `outcome`, kept for `ttl`; does nothing when the key no
    /// longer holds this claim (it expired, and another claim may stand there now).
    fn finish<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
        outcome: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes `key` if it still holds `claim`, so the next attempt runs the work again.
    fn release<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The live record at `key`.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>>;
}

/// A record read back.
#[derive(Debug, PartialEq)]
pub(crate) enum Record {
    /// Work in flight for a request with this fingerprint.
    Running { fingerprint: u64 },
    /// A success: the reply's JSON.
    Succeeded { fingerprint: u64, reply: Bytes },
    /// A final error: its error object's JSON.
    Failed { fingerprint: u64, error: Bytes },
}

impl Record {
    /// The fingerprint of the request the record is of.
    pub(crate) fn fingerprint(&self) -> u64 {
        match self {
            Record::Running { fingerprint }
            | Record::Succeeded { fingerprint, .. }
            | Record::Failed { fingerprint, .. } => *fingerprint,
        }
    }
}

/// A claim's record: `R`, then the fingerprint and the claim's token in hex (in place: one
/// is made for every keyed SendMessage).
pub(crate) type Claim = [u8; 33];

pub(crate) fn claim_record(fingerprint: u64, token: u64) -> Claim {
    let mut out = [0u8; 33];
    out[0] = b'R';
    out[1..17].copy_from_slice(&hex(fingerprint));
    out[17..].copy_from_slice(&hex(token));
    out
}

/// `value` as 16 lowercase hex digits (`format!("{value:016x}")`, without the formatter's
/// machinery: this runs twice for every keyed SendMessage).
pub(crate) fn hex(value: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    crate::wire::hex::write(&value.to_be_bytes(), &mut out);
    out
}

/// The bytes of an outcome's record before its JSON: `D`, the fingerprint, `O` or `E`.
#[doc(hidden)]
pub const OUTCOME_HEAD: usize = 18;

/// The head of the record of an outcome of a request with `fingerprint`, `ok` or not.
#[doc(hidden)]
pub fn outcome_head(fingerprint: u64, ok: bool) -> [u8; OUTCOME_HEAD] {
    let mut head = [0u8; OUTCOME_HEAD];
    head[0] = b'D';
    head[1..17].copy_from_slice(&hex(fingerprint));
    head[17] = if ok { b'O' } else { b'E' };
    head
}

/// The record of `reply`, a success of a request with `fingerprint`: a reply
/// [`Prewritten`](crate::server::json::Prewritten) for that fingerprint already is its record
/// (shared, not copied: one block of its JSON a SendMessage instead of two); any other reply
/// is written as [`outcome_record`] writes it.
pub(crate) fn success_record<T: serde::Serialize + 'static>(
    fingerprint: u64,
    reply: &T,
) -> Option<Bytes> {
    if let Some(record) =
        crate::server::json::prewritten(reply).and_then(|reply| reply.record(fingerprint))
    {
        return Some(record);
    }
    outcome_record(fingerprint, true, |out| {
        crate::server::json::write_json(out, reply)
    })
}

/// The record of an outcome whose JSON `write` appends; `None` when it fails.
///
/// Written in this thread's scratch, then copied into a block of its size: a store keeps the
/// record for minutes, and a `Vec` grown as it is written, made `Bytes`, would keep its spare
/// room and a second block (`Bytes`' shared header) for as long.
pub(crate) fn outcome_record<W>(fingerprint: u64, ok: bool, write: W) -> Option<Bytes>
where
    W: FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
{
    crate::wire::scratch::with(|out| {
        out.extend_from_slice(&outcome_head(fingerprint, ok));
        write(out).ok().map(|()| Bytes::copy_from_slice(out))
    })
}

/// The record kept in place of an outcome heavier than a store keeps (`limit` bytes): a final
/// CONTENT_TOO_LARGE for the same request, so that a retry gets that error, truthfully,
/// instead of running the work a second time (dropping the record would drop the claim with
/// it). Bytes that are no record of this crate's are returned as they are.
pub(crate) fn too_large(outcome: Bytes, limit: u64) -> Bytes {
    use crate::wire::error::A2aError;
    let Some(fingerprint) = read_record(&outcome).map(|record| record.fingerprint()) else {
        return outcome;
    };
    tracing::warn!(
        bytes = outcome.len(),
        limit,
        "a reply too large to remember: a retry of it gets CONTENT_TOO_LARGE"
    );
    let error = crate::wire::standard::StandardError::ContentTooLarge.to_error_object();
    outcome_record(fingerprint, false, |out| serde_json::to_writer(out, &error)).unwrap_or(outcome)
}

/// Reads a record; `None` for bytes no store of this crate wrote.
pub(crate) fn read_record(bytes: &Bytes) -> Option<Record> {
    let fingerprint = u64::from_be_bytes(crate::wire::hex::read::<8>(bytes.get(1..17)?)?);
    match (bytes.first()?, bytes.get(17)?) {
        (b'R', _) => Some(Record::Running { fingerprint }),
        (b'D', b'O') => Some(Record::Succeeded {
            fingerprint,
            reply: bytes.slice(OUTCOME_HEAD..),
        }),
        (b'D', b'E') => Some(Record::Failed {
            fingerprint,
            error: bytes.slice(OUTCOME_HEAD..),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_sixteen_lowercase_digits() {
        for value in [0, 1, 0xabc, 0x0123_4567_89ab_cdef, u64::MAX] {
            assert_eq!(hex(value), *format!("{value:016x}").as_bytes());
        }
    }

    #[test]
    fn records_read_back() {
        let claim = Bytes::copy_from_slice(&claim_record(0xabc, 7));
        assert_eq!(
            read_record(&claim),
            Some(Record::Running { fingerprint: 0xabc })
        );
        let done = outcome_record(u64::MAX, true, |out| {
            out.extend_from_slice(b"{\"a\":1}");
            Ok(())
        })
        .unwrap();
        assert_eq!(
            read_record(&done),
            Some(Record::Succeeded {
                fingerprint: u64::MAX,
                reply: Bytes::from_static(b"{\"a\":1}")
            })
        );
        let failed = outcome_record(1, false, |out| {
            out.extend_from_slice(b"{}");
            Ok(())
        })
        .unwrap();
        assert!(matches!(
            read_record(&failed),
            Some(Record::Failed { fingerprint: 1, .. })
        ));
        for junk in [
            &b""[..],
            b"R12",
            b"Xzzzzzzzzzzzzzzzzz",
            b"D0000000000000001Q",
        ] {
            assert_eq!(read_record(&Bytes::copy_from_slice(junk)), None, "{junk:?}");
        }
    }
}
