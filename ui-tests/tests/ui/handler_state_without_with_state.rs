// A handler that takes State needs JsonRpc::with_state, not JsonRpc::new().
use a2a_error::StandardError;
use a2a_error::server::{JsonRpc, RequestContext};
use axum::extract::State;

#[derive(Clone)]
struct App;

#[derive(serde::Deserialize)]
struct GetTask {
    id: String,
}

async fn get_task(
    State(_app): State<App>,
    params: GetTask,
    _ctx: RequestContext,
) -> Result<(), StandardError> {
    Err(StandardError::TaskNotFound {
        task_id: Some(params.id),
    })
}

fn main() {
    let _ = JsonRpc::new().method("GetTask", get_task);
}
