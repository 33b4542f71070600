// A handler must take the RequestContext last.
use a2a_error::StandardError;
use a2a_error::server::JsonRpc;

#[derive(serde::Deserialize)]
struct GetTask {
    id: String,
}

fn main() {
    let _ = JsonRpc::new().method("GetTask", |params: GetTask| async move {
        Err::<(), _>(StandardError::TaskNotFound {
            task_id: Some(params.id),
        })
    });
}
