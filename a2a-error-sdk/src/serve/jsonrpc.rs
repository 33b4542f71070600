//! The bridge over JSON-RPC: one function a method, each the SDK handler's method on the
//! SDK's types, registered on this crate's [`JsonRpc`] endpoint by the method table's names
//! (the 0.3 names as aliases).

use std::sync::Arc;

use a2a::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SubscribeToTaskRequest,
    TaskPushNotificationConfig,
};
use a2a_server::RequestHandler;
use axum::extract::State;

use crate::protojson::{ProtoJson, SendParams, SendReply};
use a2a_error_runtime::sdk_errors::public;
use a2a_error_runtime::server::{DedupError, JsonRpc, RequestContext};
use a2a_error_runtime::wire::method;
use a2a_error_runtime::wire::remote::RemoteError;

use super::Bridge;
use super::calls::Events;

impl<H: RequestHandler> Bridge<H> {
    /// The JSON-RPC endpoint, with the A2A 1.0 method names and the 0.3 ones as aliases.
    /// Configure it further (`max_concurrent`, `max_body_bytes`, …) and mount it with
    /// [`rest_router`](Self::rest_router), or take both from [`router`](Self::router).
    pub fn json_rpc(&self) -> JsonRpc<Self> {
        let rpc = JsonRpc::with_state(self.clone())
            .method(method::SEND_MESSAGE, rpc_send::<H>)
            .stream(method::SEND_STREAMING_MESSAGE, rpc_send_streaming::<H>)
            .method(method::GET_TASK, rpc_get_task::<H>)
            .method(method::LIST_TASKS, rpc_list_tasks::<H>)
            .method(method::CANCEL_TASK, rpc_cancel_task::<H>)
            .stream(method::SUBSCRIBE_TO_TASK, rpc_subscribe::<H>)
            .method(
                method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
                rpc_create_push::<H>,
            )
            .method(method::GET_TASK_PUSH_NOTIFICATION_CONFIG, rpc_get_push::<H>)
            .method(
                method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
                rpc_list_push::<H>,
            )
            .method(
                method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
                rpc_delete_push::<H>,
            )
            .method(method::GET_EXTENDED_AGENT_CARD, rpc_extended_card::<H>);
        let rpc = a2a_error_runtime::wire::method::METHODS
            .iter()
            .fold(rpc, |rpc, method| rpc.alias(method.alias, method.name));
        let rpc = match &self.admission {
            Some(admission) => rpc.admission(Arc::clone(admission)),
            None => rpc,
        };
        match self.timeout {
            Some(timeout) => rpc.timeout(timeout),
            None => rpc,
        }
    }
}

// JSON-RPC: one function per method, each the SDK handler's method on the SDK's types.

async fn rpc_send<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    request: SendParams,
    ctx: RequestContext,
) -> Result<SendReply, DedupError<RemoteError>> {
    bridge
        .send_message(&ctx.headers, ctx.deadline, request.0)
        .await
}

async fn rpc_send_streaming<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    request: SendParams,
    ctx: RequestContext,
) -> Result<Events, RemoteError> {
    bridge
        .send_streaming(&ctx.headers, ctx.deadline, *request.0)
        .await
}

async fn rpc_subscribe<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    request: ProtoJson<SubscribeToTaskRequest>,
    ctx: RequestContext,
) -> Result<Events, RemoteError> {
    bridge
        .subscribe(&ctx.headers, ctx.deadline, request.0)
        .await
}

/// A JSON-RPC function for a unary method of the SDK's `RequestHandler`.
macro_rules! rpc_unary {
    ($name:ident, $request:ty, $method:ident, $result:ty, $wrap:expr) => {
        async fn $name<H: RequestHandler>(
            State(bridge): State<Bridge<H>>,
            request: ProtoJson<$request>,
            ctx: RequestContext,
        ) -> Result<$result, RemoteError> {
            let params = bridge.service_params(&ctx.headers, ctx.deadline);
            bridge
                .handler
                .$method(&params, request.0)
                .await
                .map($wrap)
                .map_err(|error| public(&error))
        }
    };
}

rpc_unary!(
    rpc_get_task,
    GetTaskRequest,
    get_task,
    ProtoJson<a2a::Task>,
    ProtoJson
);
rpc_unary!(
    rpc_list_tasks,
    ListTasksRequest,
    list_tasks,
    ProtoJson<a2a::ListTasksResponse>,
    ProtoJson
);
rpc_unary!(
    rpc_cancel_task,
    CancelTaskRequest,
    cancel_task,
    ProtoJson<a2a::Task>,
    ProtoJson
);
rpc_unary!(
    rpc_create_push,
    TaskPushNotificationConfig,
    create_push_config,
    ProtoJson<TaskPushNotificationConfig>,
    ProtoJson
);
rpc_unary!(
    rpc_get_push,
    GetTaskPushNotificationConfigRequest,
    get_push_config,
    ProtoJson<TaskPushNotificationConfig>,
    ProtoJson
);
rpc_unary!(
    rpc_list_push,
    ListTaskPushNotificationConfigsRequest,
    list_push_configs,
    ProtoJson<a2a::ListTaskPushNotificationConfigsResponse>,
    ProtoJson
);
rpc_unary!(
    rpc_delete_push,
    DeleteTaskPushNotificationConfigRequest,
    delete_push_config,
    Option<()>,
    |()| None
);
rpc_unary!(
    rpc_extended_card,
    GetExtendedAgentCardRequest,
    get_extended_agent_card,
    ProtoJson<AgentCard>,
    ProtoJson
);
