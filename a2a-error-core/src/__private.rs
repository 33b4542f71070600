//! What `#[derive(A2aError)]` generates code against, of this floor (the runtime's
//! `__private` adds the server's, the bridge's and gRPC's). Not public API: it may change in
//! any release without notice. Generated code names everything through
//! `::a2a_error::__private::…` so the crates can change their internals freely.

use std::sync::atomic::{AtomicPtr, Ordering};

pub use core::clone::Clone;
pub use core::cmp::{Eq, PartialEq};
pub use core::convert::From;
pub use core::default::Default;
pub use core::fmt::{Debug, Formatter, Result as FmtResult};
pub use core::hash::{Hash, Hasher};
pub use core::marker::Copy;
pub use core::time::Duration;
pub use core::{env, matches, unreachable};
pub use std::borrow::Cow;
pub use std::error::Error as StdError;
pub use std::option::Option::{self, None, Some};
pub use std::vec::Vec;

pub use crate::data::DataSink;
pub use crate::error::{A2aError, Category, FromErrorObject, HasKind, RetryHint};
pub use crate::object::{ErrorObject, WireProfile};
pub use crate::received::{DataValue, ReceivedError};
pub use crate::spec::{Catalog, ErrorSpec};

/// A catalog row: [`ErrorSpec`] by position, so that each of a large enum's rows is a short
/// call in the expansion rather than a struct literal of named fields and paths.
#[allow(clippy::too_many_arguments)]
pub const fn spec(
    name: &'static str,
    code: i32,
    reason: &'static str,
    domain: &'static str,
    message: &'static str,
    retry: RetryHint,
    category: Category,
    http_status: u16,
) -> ErrorSpec {
    ErrorSpec {
        name,
        code,
        reason,
        domain,
        message,
        retry,
        category,
        http_status,
    }
}

/// [`RetryHint::After`] a whole number of seconds.
pub const fn after(seconds: u64) -> RetryHint {
    RetryHint::After(Duration::from_secs(seconds))
}

/// What `#[derive(A2aError)]` needs of the type: `std::error::Error`, whose `Display` is
/// the log text.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must implement `std::error::Error` to derive `A2aError`",
    label = "no `Display` and `std::error::Error` impl",
    note = "add `#[derive(thiserror::Error)]` and an `#[error(\"...\")]` on each variant: that \
            `Display` text goes to logs only, never to the wire"
)]
pub trait IsStdError: std::error::Error {}

impl<T: std::error::Error + ?Sized> IsStdError for T {}

/// Checks [`IsStdError`] where the derive is, for the one error with its hint.
pub fn is_std_error<T: IsStdError + ?Sized>() {}

/// A `#[a2a(data)]` field: published by the server, read back by the client. One trait (and
/// one function, [`data_field`]) for both directions, so a type that is not serde gets one
/// error at the field, not one per direction.
#[diagnostic::on_unimplemented(
    message = "`#[a2a(data)]` field type `{Self}` is not serde",
    label = "needs `serde::Serialize` and `serde::Deserialize`",
    note = "derive them (`#[derive(serde::Serialize, serde::Deserialize)]`), or publish a \
            field that is, or drop `#[a2a(data)]` to keep the field off the wire"
)]
pub trait DataField: Sized {
    /// Publishes `value` under `key`.
    fn write(sink: &mut DataSink<'_>, key: &str, value: &Self);
    /// Reads the field back from its value in a received object.
    fn read(value: DataValue<'_>) -> Option<Self>;
}

// `do_not_recommend`: a type that is not serde is reported as not a `DataField`, once, with
// the hint above, instead of once per serde trait with a list of unrelated implementors.
#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + serde::de::DeserializeOwned> DataField for T {
    fn write(sink: &mut DataSink<'_>, key: &str, value: &Self) {
        sink.field(key, value);
    }

    fn read(value: DataValue<'_>) -> Option<Self> {
        value.read()
    }
}

/// How a data field is written and read.
pub struct DataFieldFns<T> {
    /// Publishes the field under its key.
    pub write: fn(&mut DataSink<'_>, &str, &T),
    /// Reads the field back from a received object.
    pub read: fn(DataValue<'_>) -> Option<T>,
}

/// The functions for a data field of type `T`.
pub const fn data_field<T: DataField>() -> DataFieldFns<T> {
    DataFieldFns {
        write: T::write,
        read: T::read,
    }
}

// The common field types' functions made here once: in the dev profile rustc shares a
// dependency's generic instances (`-Z share-generics`), so a user's crate whose data fields
// are of these types reuses them instead of compiling its own copies on every rebuild (for a
// 64-variant enum with `String` fields, 2% of a touched rebuild).
#[doc(hidden)]
#[allow(clippy::type_complexity)]
pub static COMMON_FIELDS: (
    DataFieldFns<String>,
    DataFieldFns<Option<String>>,
    DataFieldFns<Vec<String>>,
    DataFieldFns<bool>,
    DataFieldFns<i32>,
    DataFieldFns<u32>,
    DataFieldFns<i64>,
    DataFieldFns<u64>,
    DataFieldFns<Option<i64>>,
    DataFieldFns<Option<u64>>,
    DataFieldFns<f64>,
) = (
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
    data_field(),
);

/// `format!`, re-exported for interpolated public messages.
pub use std::format;

/// The encoding of a variant whose wire form never changes apart from its data fields (its
/// message is not interpolated, its delay not a field), made once per profile: an error of a
/// variant with no data fields is that copy ([`write`](Self::write),
/// [`write_row`](Self::write_row)), one with data fields has them written in between
/// ([`write_around`](Self::write_around), [`write_row_around`](Self::write_row_around)). The
/// encoder runs on [`Parts`], so it is compiled once, here, not again in each user's crate.
///
/// It lives in a static of the derive's output, which never drops, so it has no drop glue: a
/// `OnceLock` there cost every user's crate about 9 million more instructions of rustc on each
/// rebuild (the glue of the static's type, compiled again in each crate). Each slot is set
/// once to an encoding that is never freed; a cache that is dropped leaks its two encodings.
pub struct EncodedCache([AtomicPtr<Encoded>; 2]);

/// A variant's bytes, and where in them its data fields go.
struct Encoded {
    bytes: Box<[u8]>,
    /// Where the data fields go, and as what; `None` when the encoder has no place for them.
    data: Option<(usize, crate::error::DataAt)>,
}

impl EncodedCache {
    /// An empty cache.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        EncodedCache([
            AtomicPtr::new(std::ptr::null_mut()),
            AtomicPtr::new(std::ptr::null_mut()),
        ])
    }

    /// Appends the bytes of `err`, whose variant has no data fields, in `profile`.
    pub fn write<E: A2aError>(&self, err: &E, profile: WireProfile, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.encoded(profile, || Parts::of(err)).bytes);
    }

    /// Appends `err`'s bytes in `profile`: its variant's, with its data fields in between.
    pub fn write_around<E: A2aError>(&self, err: &E, profile: WireProfile, out: &mut Vec<u8>) {
        self.encoded(profile, || Parts::of(err)).splice(err, out);
    }

    /// [`write`](Self::write) for a variant of an enum whose every variant has a code: its
    /// parts are its catalog `row` (whose message is the variant's public message). Not
    /// generic, so nothing of it is compiled again in the user's crate.
    pub fn write_row(&self, row: &ErrorSpec, profile: WireProfile, out: &mut Vec<u8>) {
        out.extend_from_slice(
            &self
                .encoded(profile, || Parts::of_row(row, &NoFields))
                .bytes,
        );
    }

    /// [`write_around`](Self::write_around) for a variant of an enum whose every variant has
    /// a code, encoded from its catalog `row`: generic only in the call that writes `err`'s
    /// data fields, so a server's reply calls them directly.
    pub fn write_row_around<E: A2aError>(
        &self,
        row: &ErrorSpec,
        err: &E,
        profile: WireProfile,
        out: &mut Vec<u8>,
    ) {
        self.encoded(profile, || Parts::of_row(row, err))
            .splice(err, out);
    }

    /// The variant's bytes in `profile`, encoded from `parts` on first use.
    #[inline]
    fn encoded<'p>(&self, profile: WireProfile, parts: impl FnOnce() -> Parts<'p>) -> &Encoded {
        let slot = match profile {
            WireProfile::A2a => &self.0[0],
            WireProfile::Legacy => &self.0[1],
        };
        let encoded = slot.load(Ordering::Acquire);
        if encoded.is_null() {
            return fill(slot, &parts(), profile);
        }
        // SAFETY: a slot holds null or a pointer from `Box::into_raw` in `fill`, stored with
        // Release and never freed or changed again.
        unsafe { &*encoded }
    }
}

impl Encoded {
    /// Appends these bytes with `err`'s data fields in between.
    fn splice<E: A2aError>(&self, err: &E, out: &mut Vec<u8>) {
        match self.data {
            Some((split, at)) => {
                out.extend_from_slice(&self.bytes[..split]);
                err.write_data(&mut at.sink(out));
                out.extend_from_slice(&self.bytes[split..]);
            }
            None => out.extend_from_slice(&self.bytes),
        }
    }
}

/// The fields of a variant that has none.
struct NoFields;

impl WritesFields for NoFields {
    fn write_data(&self, _: &mut DataSink<'_>) {}
    fn write_extra_details(&self, _: &mut Vec<u8>) {}
}

/// Encodes `parts` into `slot` (once: if another thread filled it first, that encoding is the
/// one kept and this one is freed).
#[cold]
fn fill<'s>(slot: &'s AtomicPtr<Encoded>, parts: &Parts<'_>, profile: WireProfile) -> &'s Encoded {
    let mut bytes = Vec::with_capacity(192);
    let mut data = None;
    crate::error::write_error_object_around(parts, profile, &mut bytes, |out, at| {
        data = Some((out.len(), at));
    });
    let ours = Box::into_raw(Box::new(Encoded {
        bytes: bytes.into_boxed_slice(),
        data,
    }));
    match slot.compare_exchange(
        std::ptr::null_mut(),
        ours,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: `ours` is now the slot's, never freed (above).
        Ok(_) => unsafe { &*ours },
        Err(theirs) => {
            // SAFETY: `ours` was never shared; `theirs` is the slot's (above).
            drop(unsafe { Box::from_raw(ours) });
            unsafe { &*theirs }
        }
    }
}

/// An error's wire parts, read once through its methods: what the derive's cache and REST
/// response encode. `Parts` is one type, so the encoder is compiled for it once, here;
/// generic over each derived type, it was compiled again in every user's crate (and a
/// `&dyn A2aError` would compile the type's whole vtable there, `Debug` included).
pub struct Parts<'a> {
    code: i32,
    reason: &'a str,
    domain: &'a str,
    message: Cow<'a, str>,
    retry: RetryHint,
    category: Category,
    http_status: u16,
    grpc_status: &'static str,
    placeholder: bool,
    fields: &'a dyn WritesFields,
}

/// The two methods of an error that [`Parts`] calls back: its data fields and its extra
/// details.
pub trait WritesFields {
    /// [`A2aError::write_data`].
    fn write_data(&self, sink: &mut DataSink<'_>);
    /// [`A2aError::write_extra_details`].
    fn write_extra_details(&self, out: &mut Vec<u8>);
}

impl<E: A2aError> WritesFields for E {
    fn write_data(&self, sink: &mut DataSink<'_>) {
        A2aError::write_data(self, sink)
    }
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        A2aError::write_extra_details(self, out)
    }
}

impl<'a> Parts<'a> {
    /// The parts of a variant whose catalog row says them all (its message is not
    /// interpolated, its delay not a field), with `fields`' data.
    pub fn of_row(row: &'a ErrorSpec, fields: &'a dyn WritesFields) -> Self {
        Parts {
            code: row.code,
            reason: row.reason,
            domain: row.domain,
            message: Cow::Borrowed(row.message),
            retry: row.retry,
            category: row.category,
            http_status: row.http_status,
            grpc_status: crate::code::StatusMapping::V1_0_1.grpc_status(row.code, row.http_status),
            placeholder: false,
            fields,
        }
    }

    /// `err`'s parts.
    pub fn of<E: A2aError>(err: &'a E) -> Self {
        Parts {
            code: err.code(),
            reason: err.reason(),
            domain: err.domain(),
            message: err.public_message(),
            retry: err.retry_hint(),
            category: err.category(),
            http_status: err.http_status(),
            grpc_status: err.grpc_status(),
            placeholder: err.has_placeholder_domain(),
            fields: err,
        }
    }
}

impl std::fmt::Debug for Parts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("code", &self.code)
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

/// Only the public message: the error's `Display` text stays with the error.
impl std::fmt::Display for Parts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Parts<'_> {}

impl A2aError for Parts<'_> {
    fn code(&self) -> i32 {
        self.code
    }
    fn reason(&self) -> &str {
        self.reason
    }
    fn domain(&self) -> &str {
        self.domain
    }
    fn public_message(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.message)
    }
    fn retry_hint(&self) -> RetryHint {
        self.retry
    }
    fn category(&self) -> Category {
        self.category
    }
    fn http_status(&self) -> u16 {
        self.http_status
    }
    fn grpc_status(&self) -> &'static str {
        self.grpc_status
    }
    fn write_data(&self, sink: &mut DataSink<'_>) {
        self.fields.write_data(sink)
    }
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        self.fields.write_extra_details(out)
    }
    fn has_placeholder_domain(&self) -> bool {
        self.placeholder
    }
}

/// The encoder, for variants that are not cached.
pub fn write_error_object<E: A2aError + ?Sized>(err: &E, profile: WireProfile, out: &mut Vec<u8>) {
    crate::error::write_error_object(err, profile, out);
}

/// The default gRPC status name of `err`, for the coded variants of an enum that also has
/// transparent ones.
pub fn grpc_status<E: A2aError + ?Sized>(err: &E) -> &'static str {
    crate::code::StatusMapping::V1_0_1.grpc_status(err.code(), err.http_status())
}

/// Whether a received object is a downstream failure passed on: DOWNSTREAM_FAILED, or any
/// code naming the agent below (a timeout or open circuit passed on), for `downstream`
/// variants.
pub fn is_downstream_failure(obj: &dyn ReceivedError) -> bool {
    obj.code() == crate::code::DOWNSTREAM_FAILED
        || !crate::chain::hops_of(&obj.to_object()).is_empty()
}

/// The row of a catalog (one per variant, in declaration order) a received error selects:
/// the first whose code and reason match, else, for a peer that sent no reason, the first
/// with its code when that code is not the table's. The decoder of an enum whose variants
/// all have codes: a loop here rather than a chain of tests in every user's crate.
pub fn find_coded(catalog: &[ErrorSpec], obj: &dyn ReceivedError) -> Option<usize> {
    let (code, reason) = (obj.code(), obj.reason());
    catalog
        .iter()
        .position(|row| row.code == code && reason_matches(reason, code, row.reason))
        .or_else(|| {
            (reason.is_none() && crate::code::lookup(code).is_none())
                .then(|| catalog.iter().position(|row| row.code == code))
                .flatten()
        })
}

/// The code of the catalog row with `reason`, if any.
pub fn code_for_reason(catalog: &[ErrorSpec], reason: &str) -> Option<i32> {
    catalog
        .iter()
        .find(|row| row.reason == reason)
        .map(|row| row.code)
}

/// Whether a received reason selects a variant whose reason is `expected`. A peer that sent
/// no reason is taken to mean the code's own table reason.
pub fn reason_matches(received: Option<&str>, code: i32, expected: &str) -> bool {
    match received {
        Some(reason) => reason == expected,
        None => crate::code::default_reason(code) == Some(expected),
    }
}

/// A `#[a2a(retry_after)]` field: a delay per value.
#[diagnostic::on_unimplemented(
    message = "`#[a2a(retry_after)]` field type `{Self}` is not a delay",
    label = "expected `Duration`, whole seconds (`u64`, `u32`) or an `Option` of one",
    note = "use `std::time::Duration`, an integer number of seconds, or an `Option` of either"
)]
pub trait RetryDelayField: Sized {
    /// The delay this value asks for (`None`: no delay known).
    fn to_delay(&self) -> Option<Duration>;
    /// The value for a received delay (`None` when the field cannot hold it).
    fn from_delay(delay: Option<Duration>) -> Option<Self>;
}

impl RetryDelayField for Duration {
    fn to_delay(&self) -> Option<Duration> {
        Some(*self)
    }
    fn from_delay(delay: Option<Duration>) -> Option<Self> {
        delay
    }
}

macro_rules! seconds_field {
    ($($int:ty),*) => {$(
        impl RetryDelayField for $int {
            fn to_delay(&self) -> Option<Duration> {
                Some(Duration::from_secs(u64::from(*self)))
            }
            fn from_delay(delay: Option<Duration>) -> Option<Self> {
                // Round up: waiting a little longer is safe, a little shorter is not.
                let delay = delay?;
                <$int>::try_from(crate::headers::whole_seconds_up(delay)).ok()
            }
        }
    )*};
}
seconds_field!(u64, u32, u16);

impl<T: RetryDelayField> RetryDelayField for Option<T> {
    fn to_delay(&self) -> Option<Duration> {
        self.as_ref().and_then(T::to_delay)
    }
    fn from_delay(delay: Option<Duration>) -> Option<Self> {
        Some(delay.and_then(|delay| T::from_delay(Some(delay))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::WireProfile;

    /// A cache filled by many threads at once keeps one encoding per profile, and every
    /// thread writes the same bytes the encoder writes uncached.
    #[test]
    fn a_cache_filled_at_once_by_many_threads_writes_what_the_encoder_writes() {
        static CACHE: EncodedCache = EncodedCache::new();
        let row = spec(
            "Busy",
            -32053,
            "AGENT_UNAVAILABLE",
            "example.com",
            "Agent unavailable",
            after(3),
            Category::Transient,
            503,
        );
        for profile in [WireProfile::A2a, WireProfile::Legacy] {
            let mut expected = Vec::new();
            crate::error::write_error_object(
                &Parts::of_row(&row, &NoFields),
                profile,
                &mut expected,
            );
            let start = std::sync::Barrier::new(8);
            let written: Vec<(Vec<u8>, usize)> = std::thread::scope(|scope| {
                let threads: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            start.wait();
                            let mut out = Vec::new();
                            CACHE.write_row(&row, profile, &mut out);
                            let at = CACHE.encoded(profile, || unreachable!("filled")) as *const _;
                            (out, at as usize)
                        })
                    })
                    .collect();
                threads.into_iter().map(|t| t.join().unwrap()).collect()
            });
            assert!(
                written.iter().all(|(out, _)| *out == expected),
                "{profile:?}"
            );
            assert!(
                written.iter().all(|(_, at)| *at == written[0].1),
                "one encoding kept"
            );
        }
    }
}
