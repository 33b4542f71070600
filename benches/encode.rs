//! A derived error → JSON-RPC error object bytes, against the baselines the core issue names:
//! (a) a hand-written `serde_json::json!` builder, as in the seed articles, and (b) copying
//! precomputed bytes (the floor). All three write into a reused buffer.
//!
//! `cargo bench -p a2a-error-benches --bench encode`

use std::hint::black_box;

use a2a_error::{A2aError, WireProfile};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error, a2a_error::A2aError)]
#[a2a(domain = "billing.example.com")]
enum AgentError {
    #[error("quota exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 10)]
    RateLimited,

    #[error("task {task_id} missing in shard {shard}")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
        shard: u32,
    },
}

/// Benches `err` through the derive, through a `json!` builder, and as precomputed bytes.
fn compare(
    c: &mut Criterion,
    name: &str,
    err: &AgentError,
    json_builder: fn(&AgentError) -> Value,
) {
    let mut precomputed = Vec::new();
    err.write_error_object(WireProfile::A2a, &mut precomputed);
    assert_eq!(
        serde_json::from_slice::<Value>(&precomputed).unwrap(),
        json_builder(err),
        "the baselines must produce the same object"
    );
    let mut group = c.benchmark_group(name);
    let mut out = Vec::with_capacity(512);
    group.bench_function("derive", |b| {
        b.iter(|| {
            out.clear();
            black_box(err).write_error_object(WireProfile::A2a, &mut out);
            black_box(&out);
        })
    });
    group.bench_function("json_builder", |b| {
        b.iter(|| {
            out.clear();
            serde_json::to_writer(&mut out, &json_builder(black_box(err))).unwrap();
            black_box(&out);
        })
    });
    group.bench_function("precomputed_floor", |b| {
        b.iter(|| {
            out.clear();
            out.extend_from_slice(black_box(&precomputed));
            black_box(&out);
        })
    });
    group.finish();
}

fn unit_variant(c: &mut Criterion) {
    compare(c, "encode/unit", &AgentError::RateLimited, |_| {
        json!({"code": -32052, "message": "Rate limited", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMITED",
             "domain": "billing.example.com", "metadata": {}},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "10s"}]})
    });
}

fn data_variant(c: &mut Criterion) {
    let err = AgentError::TaskNotFound {
        task_id: "task-7f3e2a9c-41d1-4b8e-9c55-1e2f3a4b5c6d".into(),
        shard: 3,
    };
    compare(c, "encode/data", &err, |err| {
        let AgentError::TaskNotFound { task_id, .. } = err else {
            unreachable!()
        };
        json!({"code": -32001, "message": "Task not found", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
             "domain": "a2a-protocol.org", "metadata": {"taskId": task_id}}]})
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = unit_variant, data_variant
}
criterion_main!(benches);
