//! The bridge's limit on requests at once, over HTTP+JSON (JSON-RPC's endpoint and the gRPC
//! service apply the same [`Admission`] themselves).

use std::sync::Arc;

use a2a_error_runtime::server::endpoint::admission::Admission;
use a2a_error_runtime::server::rest::{self};

/// Admits a REST request under the bridge's limit, or refuses it as the JSON-RPC endpoint
/// does (AGENT_UNAVAILABLE, its status body and `Retry-After`).
pub(super) async fn admit_rest(
    axum::extract::State(admission): axum::extract::State<Option<Arc<Admission>>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let Some(admission) = admission else {
        return next.run(request).await;
    };
    match admission.admit_owned() {
        Ok(mut slot) => {
            let response = next.run(request).await;
            // A stream is answered once it is open, as over JSON-RPC.
            slot.answered();
            response
        }
        Err(refusal) => rest::error_response(&refusal),
    }
}
