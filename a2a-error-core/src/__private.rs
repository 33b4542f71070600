//! What `#[derive(A2aError)]` generates code against, of this floor (the runtime's
//! `__private` adds the server's, the bridge's and gRPC's). Not public API: it may change in
//! any release without notice. Generated code names everything through
//! `::a2a_error::__private::…` so the crates can change their internals freely.

use std::sync::OnceLock;

pub use core::clone::Clone;
pub use core::cmp::{Eq, PartialEq};
pub use core::convert::From;
pub use core::default::Default;
pub use core::fmt::Debug;
pub use core::hash::Hash;
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
pub fn data_field<T: DataField>() -> DataFieldFns<T> {
    DataFieldFns {
        write: T::write,
        read: T::read,
    }
}

/// `format!`, re-exported for interpolated public messages.
pub use std::format;

/// The encoding of a variant whose wire form never changes apart from its data fields (its
/// message is not interpolated, its delay not a field), made once per profile: an error of a
/// variant with no data fields is that copy ([`write`](Self::write)), one with data fields
/// has them written in between ([`write_around`](Self::write_around)).
pub struct EncodedCache([OnceLock<Encoded>; 2]);

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
        EncodedCache([OnceLock::new(), OnceLock::new()])
    }

    /// Appends the bytes of `err`, whose variant has no data fields, in `profile`.
    pub fn write<E: A2aError + ?Sized>(&self, err: &E, profile: WireProfile, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.encoded(err, profile).bytes);
    }

    /// Appends `err`'s bytes in `profile`: its variant's, with its data fields in between.
    pub fn write_around<E: A2aError + ?Sized>(
        &self,
        err: &E,
        profile: WireProfile,
        out: &mut Vec<u8>,
    ) {
        let encoded = self.encoded(err, profile);
        match encoded.data {
            Some((split, at)) => {
                out.extend_from_slice(&encoded.bytes[..split]);
                err.write_data(&mut at.sink(out));
                out.extend_from_slice(&encoded.bytes[split..]);
            }
            None => out.extend_from_slice(&encoded.bytes),
        }
    }

    /// The variant's bytes in `profile`, encoded from `err` with no data fields on first use.
    fn encoded<E: A2aError + ?Sized>(&self, err: &E, profile: WireProfile) -> &Encoded {
        let slot = match profile {
            WireProfile::A2a => &self.0[0],
            WireProfile::Legacy => &self.0[1],
        };
        slot.get_or_init(|| {
            let mut bytes = Vec::with_capacity(192);
            let mut data = None;
            crate::error::write_error_object_around(err, profile, &mut bytes, |out, at| {
                data = Some((out.len(), at));
            });
            Encoded {
                bytes: bytes.into_boxed_slice(),
                data,
            }
        })
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
