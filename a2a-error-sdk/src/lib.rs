//! The bridge to the official Rust A2A SDK (`a2a-error`'s feature `sdk`, its `a2a_error::sdk`): the `a2a-lf` crates of
//! a2aproject/a2a-rs (`a2a-lf` 0.4, `a2a-server-lf` 0.5, `a2a-client-lf` 0.2, pinned to those
//! minor versions). The SDK gives an agent the protocol (its types, task store,
//! `AgentExecutor`, streaming); this crate makes it safe.
//!
//! - **Errors, both ways** (the `error` functions here): a derived enum becomes an
//!   `a2a::A2AError` with `?` (the derive emits the `From`), keeping its code, public message,
//!   reason, domain, data fields, RetryInfo and BadRequest; an `A2AError` a client received
//!   decodes into your enum ([`decode`]) or a [`RemoteError`](a2a_error_runtime::RemoteError)
//!   ([`remote`]) with the retry classification of our own transport; a [`ClientError`]
//!   (a downstream failure inside an executor) becomes DOWNSTREAM_FAILED, translated, with
//!   `?`.
//! - **Serving** ([`Bridge`], [`Guarded`]): an SDK `RequestHandler` served by this crate's
//!   JSON-RPC endpoint and REST routes: spec-exact JSON-RPC, custom reasons and RetryInfo with
//!   the code table's HTTP status and `Retry-After`, no internal text on the wire, panics
//!   answered at once, the caller's deadline, dedup of SendMessage, SSE streams that end in
//!   one error event, and tasks that end FAILED.
//! - **Fleets** (feature `redis`, `RedisTaskStore`): the tasks in Redis, shared by the
//!   replicas (read, listed, cancelled and followed on any, by their owner only), each running
//!   task leased to its replica so that it ends FAILED, not WORKING forever, when that
//!   replica dies.
//! - **Over gRPC** (feature `grpc`, `Bridge::grpc`): the same handler served as the A2A 1.0
//!   service `lf.a2a.v1.A2AService`, with the same guarantees, and
//!   `TransportFactory::grpc()` for the card's `GRPC` interfaces.
//! - **Calling** ([`StackTransport`], [`TransportFactory`]): the SDK client's `Transport` backed by
//!   the typed [`Client`](a2a_error_runtime::Client): timeouts, retries with a budget and `Retry-After`,
//!   breaker, hedging, the deadline header, safe repeats and reply limits; what our
//!   [`ClientError`] knew is recovered from the `A2AError` with [`client_error`].
//!
//! What the SDK does not do, and the bridge does, is the point: its routers rebuild every
//! ErrorInfo from the code (a custom reason or domain is lost, RATE_LIMITED over REST is a
//! 500, no `Retry-After`), put an executor's own text on the wire, never answer a panicking
//! executor, leave a failed task SUBMITTED, and serve no notifications or batches; its client
//! turns every network failure into -32603 and never retries.
//!
//! An agent on the SDK, served by the bridge:
//!
//! ```no_run
//! use std::sync::Arc;
//! use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore};
//! use a2a_error::server::{Dedup, ServeLimits, serve};
//! use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext};
//!
//! struct Echo;
//! impl AgentExecutor for Echo {
//!     fn execute(&self, ctx: ExecutorContext)
//!         -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
//!         # unimplemented!()
//!     }
//!     fn cancel(&self, ctx: ExecutorContext)
//!         -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
//!         # unimplemented!()
//!     }
//! }
//!
//! # async fn run() {
//! let store = MemoryTaskStore::new(64 << 20);
//! let executor = Guarded::new(Echo, Arc::new(store.clone()));
//! let handler = DefaultRequestHandler::new(executor, store);
//! let router = Bridge::new(handler).dedup(Dedup::in_memory()).router();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.unwrap();
//! serve(listener, router, ServeLimits::default()).await.unwrap();
//! # }
//! ```
//!
//! What the SDK's API would not let the bridge do, and how it gets around it:
//!
//! - `A2AError` has no source and no field for a public message apart from the text: an
//!   error made for the wire is told from one made of an executor's own text by its
//!   ErrorInfo detail (see [`Guarded`]), and the transport keeps our `ClientError`'s facts in
//!   a detail of its own ([`CLIENT_FAILURE_TYPE`]).
//! - `DefaultRequestHandler` runs the executor in a task of its own, out of reach of the
//!   request's task-local deadline and of its panic guard, and writes nothing when an
//!   executor fails: [`Guarded`] carries the deadline in a service param, catches panics
//!   where the stream is polled, and writes the FAILED status itself.
//! - The SDK's serde forms of its types are not the wire's (it converts through protobuf):
//!   [`ProtoJson`] reads and writes them as its routers do.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod appends;
mod call;
mod executor;
mod failed;
mod fingerprint;
mod forward;
#[cfg(feature = "grpc")]
mod grpc;
mod lease;
mod link;
mod listing;
mod owned;
mod owners;
mod protojson;
pub mod push;
mod scope_key;
mod scoped;
mod serve;
#[cfg(feature = "redis")]
mod shared;
mod store;
mod streams;
mod transport;
mod weight;

pub use a2a_error_runtime::sdk_errors::{
    CLIENT_FAILURE_TYPE, client_error, decode, error_object, remote, to_sdk,
};
pub use executor::Guarded;
pub use forward::{Forwarded, forward_stream, is_streaming};
#[cfg(feature = "grpc")]
pub use grpc::{GrpcLimits, GrpcService};
pub use lease::{LeaseError, LeaseLost, TaskLease, TaskLeases};
pub use owned::{OwnedTaskStore, Owner, creating_owner, owned_page};
pub use protojson::{ProtoJson, SendReply};
pub use push::{DeadLetter, PushDelivery};
pub use serve::{Bridge, SendDedup};
#[cfg(feature = "redis")]
pub use shared::{RedisPushConfigs, RedisTaskStore};
pub use store::MemoryTaskStore;
pub use transport::{StackTransport, TransportFactory};

// For the links of the module documentation.
#[allow(unused_imports)]
use a2a_error_runtime::client::ClientError;
