//! An error object's text → the typed enum, against a hand-written serde struct and a match
//! on the code (the baseline), on the same bytes, in the same run.
//!
//! `cargo bench -p a2a-error-benches --bench decode`

use std::collections::HashMap;
use std::hint::black_box;

use a2a_error::{A2aError, ErrorObject, ErrorView, FromErrorObject};
use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;

#[derive(Debug, PartialEq, thiserror::Error, a2a_error::A2aError)]
#[a2a(domain = "billing.example.com")]
enum AgentError {
    #[error("quota exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 10)]
    RateLimited,

    #[error("task {task_id} missing")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
    },

    #[error("bad part {index}")]
    #[a2a(code = INVALID_PARAMS)]
    BadPart {
        #[a2a(data)]
        index: u32,
    },
}

/// The baseline: the A2A 1.0 shape as serde structs, read by hand.
#[derive(Deserialize)]
struct HandObject {
    code: i32,
    #[allow(dead_code)]
    message: String,
    #[serde(default)]
    data: Vec<HandDetail>,
}

#[derive(Deserialize)]
struct HandDetail {
    #[serde(rename = "@type")]
    kind: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

fn by_hand(text: &str) -> Option<AgentError> {
    let object: HandObject = serde_json::from_str(text).ok()?;
    let info = object
        .data
        .into_iter()
        .find(|detail| detail.kind.ends_with("google.rpc.ErrorInfo"))?;
    let mut metadata = info.metadata;
    match (object.code, info.reason.as_deref()) {
        (-32052, Some("RATE_LIMITED")) => Some(AgentError::RateLimited),
        (-32001, Some("TASK_NOT_FOUND")) => Some(AgentError::TaskNotFound {
            task_id: metadata.remove("taskId")?,
        }),
        (-32602, Some("INVALID_PARAMS")) => Some(AgentError::BadPart {
            index: metadata.get("index")?.parse().ok()?,
        }),
        _ => None,
    }
}

/// The mirror on a view of the text: what a client reading an error's text calls.
fn derived(text: &str) -> Option<AgentError> {
    AgentError::from_received(&ErrorView::parse(text).ok()?)
}

/// The mirror on an owned `ErrorObject` (the `serde_json::Value` of every detail built).
fn derived_object(text: &str) -> Option<AgentError> {
    let object: ErrorObject = serde_json::from_str(text).ok()?;
    AgentError::from_error_object(&object)
}

fn decode(c: &mut Criterion) {
    for (name, error) in [
        ("unit_variant", AgentError::RateLimited),
        (
            "data_variant",
            AgentError::TaskNotFound {
                task_id: "task-8c1f0e7a".into(),
            },
        ),
    ] {
        let text = serde_json::to_string(&error.to_error_object()).unwrap();
        assert_eq!(by_hand(&text).as_ref(), Some(&error), "{text}");
        assert_eq!(derived(&text).as_ref(), Some(&error), "{text}");
        assert_eq!(derived_object(&text).as_ref(), Some(&error), "{text}");
        let mut group = c.benchmark_group(format!("decode_{name}"));
        group.bench_function("derive", |b| b.iter(|| derived(black_box(&text))));
        group.bench_function("hand_serde", |b| b.iter(|| by_hand(black_box(&text))));
        group.bench_function("derive_object", |b| {
            b.iter(|| derived_object(black_box(&text)))
        });
        group.finish();
    }
}

criterion_group!(benches, decode);
criterion_main!(benches);
