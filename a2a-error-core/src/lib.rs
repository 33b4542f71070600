//! Floor 0, the wire model: an error value becomes an [`ErrorObject`] (or its JSON bytes), and
//! received bytes become an `ErrorObject`, a [`RemoteError`] or the user's own enum. No I/O,
//! no async, nothing about HTTP beyond the names and values of its headers.
//!
//! A crate of its own so that the compiler keeps the floor: nothing here can name the server,
//! the clients or the bridge above it. Use it through `a2a-error`, which re-exports every
//! public item at the same path; `#[derive(A2aError)]`'s output names it through
//! `a2a_error::__private`. The modules are the floors above's, hidden from the docs: only the
//! crate root's items are this crate's API.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

#[doc(hidden)]
pub mod __private;
#[doc(hidden)]
pub mod bad_request;
#[doc(hidden)]
pub mod chain;
pub mod code;
#[doc(hidden)]
pub mod data;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod headers;
#[doc(hidden)]
pub mod hex;
#[doc(hidden)]
pub mod jsonrpc;
#[doc(hidden)]
pub mod method;
#[doc(hidden)]
pub mod object;
#[doc(hidden)]
pub mod received;
#[doc(hidden)]
pub mod remote;
#[doc(hidden)]
pub mod scratch;
#[doc(hidden)]
pub mod spec;
#[doc(hidden)]
pub mod text;
#[doc(hidden)]
pub mod trace;
#[doc(hidden)]
pub mod view;

pub use bad_request::{BadRequest, FieldViolation};
pub use chain::Hop;
pub use data::DataSink;
pub use error::{A2aError, Category, FromErrorObject, HasKind, RetryHint};
pub use error::{BAD_REQUEST_TYPE, ERROR_INFO_TYPE, RETRY_INFO_TYPE};
pub use headers::{DEADLINE_HEADER, VERSION_HEADER};
pub use jsonrpc::Id;
pub use method::{method_name, method_of_route};
pub use object::{ErrorObject, MAX_DATA_NODES, WireProfile};
pub use received::{DataValue, ReceivedError};
pub use remote::RemoteError;
pub use spec::{Catalog, ErrorSpec};
pub use text::Shown;
pub use view::ErrorView;
