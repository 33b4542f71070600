//! The main job: an agent's error enum, what it puts on the wire in both profiles, and the
//! client side decoding the same bytes back into the typed enum.
//!
//! `cargo run --example quickstart`

use std::time::Duration;

use a2a_error::{A2aError, ErrorObject, FromErrorObject, RemoteError, StandardError, WireProfile};

#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "billing.example.com")]
pub enum AgentError {
    #[error("task {task_id} missing in shard {shard}")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
        shard: u32,
    },

    #[error("LLM provider said {0}")]
    #[a2a(code = -32603, reason = "LLM_UNAVAILABLE", retryable)]
    Llm(String),

    #[error("quota exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 10)]
    RateLimited,

    #[error("bad part {index}")]
    #[a2a(code = -32602, message = "Invalid part {index}")]
    BadPart {
        #[a2a(data)]
        index: u32,
    },

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

fn main() {
    let errors = [
        AgentError::TaskNotFound {
            task_id: "t-42".into(),
            shard: 7,
        },
        AgentError::Llm("upstream said: db password=hunter2-secret".into()),
        AgentError::RateLimited,
        AgentError::BadPart { index: 3 },
        StandardError::AgentUnavailable {
            retry_after: Some(Duration::from_millis(2500)),
        }
        .into(),
    ];

    println!("== server side: what each error puts on the wire ==");
    for err in &errors {
        println!("\n{:?}  (Display, logs only: {err})", err.kind());
        println!(
            "  code {} · reason {} · domain {} · HTTP {} · gRPC {} · category {} · retry {:?}",
            err.code(),
            err.reason(),
            err.domain(),
            err.http_status(),
            err.grpc_status(),
            err.category().as_str(),
            err.retry_hint()
        );
        for profile in WireProfile::ALL {
            let mut bytes = Vec::new();
            err.write_error_object(profile, &mut bytes);
            println!("  {profile:?}: {}", String::from_utf8_lossy(&bytes));
        }
    }

    println!("\n== client side: the same bytes decoded back ==");
    for err in &errors {
        let object = err.to_error_object();
        let wire = serde_json::to_vec(&object).expect("an error object serializes");
        let received: ErrorObject = serde_json::from_slice(&wire).expect("and parses back");
        let kind = AgentError::kind_of(&received);
        match AgentError::from_error_object(&received) {
            Some(typed) => println!("{kind:?}: rebuilt {typed:?}"),
            None => {
                // Fields that never travel (Llm's String, TaskNotFound's shard) can't be
                // rebuilt; the kind is still known and nothing the peer sent is lost.
                let remote = RemoteError::from_object(received);
                println!(
                    "{kind:?}: not rebuildable; kept as RemoteError (reason {}, metadata {:?})",
                    remote.reason(),
                    remote.metadata_map()
                );
            }
        }
    }

    println!("\n== catalog (for docs and agent cards) ==");
    for row in AgentError::CATALOG {
        println!(
            "{:<13} {:>6}  {:<16} {:<22} HTTP {}",
            row.name, row.code, row.reason, row.message, row.http_status
        );
    }
}
