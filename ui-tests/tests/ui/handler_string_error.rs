// A handler's error must be an A2aError, not a String.
use a2a_error::server::{JsonRpc, RequestContext};

#[derive(serde::Deserialize)]
struct GetTask {
    id: String,
}

fn main() {
    let _ = JsonRpc::new().method("GetTask", |params: GetTask, _ctx: RequestContext| async move {
        Err::<(), String>(format!("no task {}", params.id))
    });
}
