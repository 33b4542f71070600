//! What the W3C trace context costs a request: the server reads the caller's `traceparent`
//! (or starts a trace when there is none) and makes a span of its own; each call sent on
//! writes one header. Against the request itself (~25 µs on the JSON-RPC error path of
//! `benches/server.rs`), these are the whole per-request cost of the context.
//!
//! `cargo bench -p a2a-error-benches --bench trace`

use std::hint::black_box;

use a2a_error::trace::TraceContext;
use criterion::{Criterion, criterion_group, criterion_main};

const PARENT: &[u8] = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE: &[u8] = b"congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

fn context(c: &mut Criterion) {
    let mut group = c.benchmark_group("trace");
    group.bench_function("server_reads_a_traceparent", |b| {
        b.iter(|| {
            TraceContext::parse(black_box(PARENT), Some(black_box(STATE)))
                .map(|caller| caller.child())
        })
    });
    group.bench_function("server_starts_a_trace", |b| b.iter(TraceContext::root));
    let context = TraceContext::parse(PARENT, Some(STATE)).unwrap();
    group.bench_function("client_writes_a_traceparent", |b| {
        b.iter(|| black_box(&context).child().traceparent())
    });
    group.finish();
}

criterion_group!(benches, context);
criterion_main!(benches);
