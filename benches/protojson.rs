//! A SendMessage reply (a completed task with its history) written as the A2A JSON: as the
//! official SDK's routers write it (`protojson_conv::to_value`, then that value) against the
//! bridge's `ProtoJson` (the same bytes, written from the protobuf JSON type without the
//! `Value` in between).
//!
//! `cargo bench -p a2a-error-benches --bench protojson`

use std::hint::black_box;

use a2a_error::sdk::ProtoJson;
use criterion::{Criterion, criterion_group, criterion_main};

fn reply() -> a2a::SendMessageResponse {
    let task: ProtoJson<a2a::Task> = serde_json::from_value(serde_json::json!({
        "id": "0194f6a5-7c2a-7c1e-9b7e-2f5d3c1a0b9e",
        "contextId": "0194f6a5-7c2a-7c1e-9b7e-2f5d3c1a0b9f",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-27T10:00:00.123456Z",
                   "message": {"messageId": "m-2", "role": "ROLE_AGENT",
                               "taskId": "0194f6a5-7c2a-7c1e-9b7e-2f5d3c1a0b9e",
                               "contextId": "0194f6a5-7c2a-7c1e-9b7e-2f5d3c1a0b9f",
                               "parts": [{"text": "echo: hello"}]}},
        "history": [{"messageId": "m-1-123456789", "role": "ROLE_USER", "parts": [{"text": "hello"}],
                     "taskId": "0194f6a5-7c2a-7c1e-9b7e-2f5d3c1a0b9e",
                     "contextId": "0194f6a5-7c2a-7c1e-9b7e-2f5d3c1a0b9f"}],
    }))
    .expect("a valid task");
    a2a::SendMessageResponse::Task(task.0)
}

fn protojson(c: &mut Criterion) {
    let reply = reply();
    let sdk = || {
        let value = a2a_pb::protojson_conv::to_value(&reply).expect("converts");
        serde_json::to_vec(&value).expect("writes")
    };
    let ours = || serde_json::to_vec(&ProtoJson(reply.clone())).expect("writes");
    // The same JSON (the SDK's keeps a double's `.0`, which this reply has none of).
    assert_eq!(sdk(), ours());
    let mut group = c.benchmark_group("send_message_reply");
    group.bench_function("sdk_to_value_then_write", |b| b.iter(|| black_box(sdk())));
    group.bench_function("a2a_error_protojson", |b| {
        b.iter(|| black_box(serde_json::to_vec(&ProtoJson(black_box(&reply).clone()))))
    });
    group.bench_function("clone_alone", |b| {
        b.iter(|| black_box(black_box(&reply).clone()))
    });
    group.finish();
}

criterion_group!(benches, protojson);
criterion_main!(benches);
