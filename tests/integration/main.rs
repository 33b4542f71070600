//! The integration tests, in one binary: what they share (the facade with every feature, the
//! test kit, tokio, axum, reqwest, tonic and the SDK) is compiled and linked once, not once
//! per file. Each file is a module named for what it tests (`cargo test --test integration
//! chains::`); `common` holds their shared setup.

mod common;

mod chains;
mod chaos;
mod client;
mod demo;
mod dependencies;
mod derive;
mod docs;
mod fleet;
mod grpc;
mod hostile;
mod hostile_bridge;
mod hostile_grpc;
mod js_interop;
mod llm_agent;
mod llm_mcp;
mod llm_mcp_revisions;
mod llm_quota;
mod llm_stream;
mod logging;
mod mcp;
mod mcp_revisions;
mod metrics;
mod otlp;
mod peers;
mod prometheus;
mod push;
mod python_interop;
mod rate_limit;
mod redis_dedup;
mod retry;
mod roundtrip;
mod sdk_agent;
mod sdk_bridge;
mod server;
mod server_limits;
mod streams;
mod tls;
