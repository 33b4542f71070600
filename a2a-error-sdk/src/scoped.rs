//! [`Scoped`]: the SDK handler as the bridge serves it, with callers kept apart (see
//! [`Owners`]). Every binding (JSON-RPC, REST, gRPC) calls the handler through this.

use std::sync::Arc;

use a2a::{
    A2AError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use a2a_server::{RequestHandler, ServiceParams};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::owned::Owner;
use super::owners::{Ownership, ScopeKey};

/// The service param that carries a SendMessage's push config (JSON) from [`Scoped`], which
/// checked it, to [`Guarded`](crate::executor::Guarded), which saves it for the task once its id is
/// known, before its first event. A caller's header of the same name is removed first.
pub(crate) const PUSH_PARAM: &str = "a2a-error-push-config";

/// The SDK handler `H`, serving each caller only its own tasks.
pub(crate) struct Scoped<H> {
    pub(super) inner: Arc<H>,
    pub(super) owners: Ownership,
    /// Each caller's rate, when the bridge limits it.
    pub(super) rate: Option<a2a_error_runtime::server::RateLimiter>,
    /// The push notifications delivered, when the bridge serves them (the configs are then
    /// served from here, not by the SDK's handler).
    pub(super) push: Option<crate::push::PushDelivery>,
}

impl<H> Clone for Scoped<H> {
    fn clone(&self) -> Self {
        Scoped {
            inner: Arc::clone(&self.inner),
            owners: self.owners.clone(),
            rate: self.rate.clone(),
            push: self.push.clone(),
        }
    }
}

/// The scope key the bridge put in `params` (the anonymous caller's when there is none).
pub(super) fn scope_of(params: &ServiceParams) -> ScopeKey {
    super::call::read(params).scope
}

/// The id of the task an event or reply is about, if any.
pub(super) fn task_of_event(event: &StreamResponse) -> Option<&str> {
    match event {
        StreamResponse::Task(task) => Some(&task.id),
        StreamResponse::StatusUpdate(update) => Some(&update.task_id),
        StreamResponse::ArtifactUpdate(update) => Some(&update.task_id),
        StreamResponse::Message(message) => message.task_id.as_deref(),
    }
}

impl<H> Scoped<H> {
    /// Takes one request from the caller's allowance, or RATE_LIMITED with the time until
    /// the next (AGENT_UNAVAILABLE when the limits' store does not answer).
    async fn admit(&self, params: &ServiceParams) -> Result<(), A2AError> {
        let Some(rate) = &self.rate else {
            return Ok(());
        };
        // The scope's hash: a bounded key whatever the caller's credential.
        let caller = super::scope_key::hex(scope_of(params));
        // Boxed, as the push config's check below: the limiter's future is ~1 KB (its Redis
        // round trip), which every request's future would carry, and copy, without one.
        Box::pin(rate.admit(&caller))
            .await
            .map_err(|refused| a2a_error_runtime::sdk_errors::to_sdk(&refused))
    }

    /// A request about `task`: admitted at the caller's rate, and only to the task's owner.
    async fn admit_to(&self, params: &ServiceParams, task: &str) -> Result<(), A2AError> {
        self.admit(params).await?;
        self.check(params, task).await
    }

    /// `Ok` when `task` is the caller's; TASK_NOT_FOUND, as for a task that does not exist,
    /// when it is not.
    async fn check(&self, params: &ServiceParams, task: &str) -> Result<(), A2AError> {
        if self.owners.owns(scope_of(params), task).await? {
            Ok(())
        } else {
            Err(A2AError::task_not_found(task))
        }
    }

    /// Records the caller as the owner of the task the request's execution starts on, as it
    /// starts: the caller reads its task (GetTask, a push notification's receiver) while a
    /// SendMessage still runs it, not only once it is answered; and a task whose execution
    /// started is the caller's even when the call then fails (the task ended FAILED and is
    /// listed as such). The request's link (`call`'s, as the bridge told it), found once
    /// for the whole call.
    fn record_on_start(&self, call: &super::call::Call) -> Option<Arc<super::link::Watch>> {
        let scope = call.scope;
        let watch = call.link.and_then(super::link::find);
        if let (Some(watch), Ownership::Local(_)) = (&watch, &self.owners) {
            let owners = self.owners.clone();
            watch.on_start(move |task| owners.record(scope, task));
        }
        watch
    }

    /// Records `task` as `scope`'s, unless the execution's start already did
    /// ([`record_on_start`](Self::record_on_start)).
    fn record(&self, scope: ScopeKey, task: &str, watch: Option<&super::link::Watch>) {
        let recorded_on_start = matches!(self.owners, Ownership::Local(_))
            && watch.and_then(|watch| watch.task()) == Some(task);
        if !recorded_on_start {
            self.owners.record(scope, task);
        }
    }

    /// The params of a SendMessage: with the bridge delivering push notifications, its push
    /// config is taken out of the request (the SDK's handler has no store for it), checked
    /// (INVALID_PARAMS before anything runs) and handed to the guard in a param.
    async fn push_params(
        &self,
        params: &ServiceParams,
        request: &mut SendMessageRequest,
    ) -> Result<Option<ServiceParams>, A2AError> {
        let Some(push) = &self.push else {
            return Ok(None);
        };
        let Some(config) = request
            .configuration
            .as_mut()
            .and_then(|configuration| configuration.task_push_notification_config.take())
        else {
            return Ok(None);
        };
        Box::pin(push.check(&config)).await?;
        let json = serde_json::to_string(&config).map_err(|_| {
            a2a_error_runtime::sdk_errors::to_sdk(
                &a2a_error_runtime::wire::standard::StandardError::Internal,
            )
        })?;
        let mut params = params.clone();
        params.insert(PUSH_PARAM.to_owned(), vec![json]);
        Ok(Some(params))
    }

    /// A SendMessage that continues a task must continue the caller's own.
    async fn check_send(
        &self,
        params: &ServiceParams,
        request: &SendMessageRequest,
    ) -> Result<(), A2AError> {
        match &request.message.task_id {
            Some(task) => self.check(params, task).await,
            None => Ok(()),
        }
    }

    /// `call` of the inner handler, which may create tasks: with a shared store, inside the
    /// caller's scope, which the store writes as the owner of the tasks it creates.
    async fn creating<T>(&self, scope: ScopeKey, call: impl Future<Output = T>) -> T {
        match &self.owners {
            Ownership::Shared(_) => super::owned::creating(Owner(scope), call).await,
            Ownership::Local(_) => call.await,
        }
    }
}

impl<H: RequestHandler> Scoped<H> {
    /// Offers `page` the tasks this process records as `scope`'s, in id order, each read
    /// from the handler (so as many reads as the caller has tasks, for the total); a task
    /// the store no longer has is forgotten.
    async fn offer_own(
        &self,
        owners: &super::owners::Owners,
        scope: ScopeKey,
        params: &ServiceParams,
        req: &ListTasksRequest,
        page: &mut super::listing::KeysetPage<'_>,
    ) -> Result<(), A2AError> {
        for id in owners.tasks(scope, None) {
            let get = GetTaskRequest {
                id: id.to_string(),
                history_length: req.history_length,
                tenant: req.tenant.clone(),
            };
            match self.inner.get_task(params, get).await {
                Ok(task) => page.offer(task),
                Err(error) if error.code == a2a::error_code::TASK_NOT_FOUND => owners.forget(&id),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl<H: RequestHandler> RequestHandler for Scoped<H> {
    async fn send_message(
        &self,
        params: &ServiceParams,
        mut req: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        self.admit(params).await?;
        self.check_send(params, &req).await?;
        let pushed = self.push_params(params, &mut req).await?;
        let params = pushed.as_ref().unwrap_or(params);
        let call = super::call::read(params);
        let scope = call.scope;
        let watch = self.record_on_start(&call);
        let reply = self
            .creating(scope, self.inner.send_message(params, req))
            .await?;
        let task = match &reply {
            SendMessageResponse::Task(task) => Some(task.id.as_str()),
            SendMessageResponse::Message(message) => message.task_id.as_deref(),
        };
        if let Some(task) = task {
            self.record(scope, task, watch.as_deref());
        }
        Ok(reply)
    }

    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        mut req: SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.admit(params).await?;
        self.check_send(params, &req).await?;
        let pushed = self.push_params(params, &mut req).await?;
        let params = pushed.as_ref().unwrap_or(params);
        let call = super::call::read(params);
        let scope = call.scope;
        self.record_on_start(&call);
        let stream = self
            .creating(scope, self.inner.send_streaming_message(params, req))
            .await?;
        let owners = self.owners.clone();
        // Recorded before the event that hands out the task's id is sent on (a task whose
        // execution started was recorded then: see `record_on_start`).
        let mut recorded = false;
        Ok(stream
            .map(move |item| {
                if !recorded {
                    let task = item.as_ref().ok().and_then(task_of_event);
                    if let Some(task) = task {
                        owners.record(scope, task);
                    }
                    recorded = task.is_some() || item.is_err();
                }
                item
            })
            .boxed())
    }

    async fn get_task(
        &self,
        params: &ServiceParams,
        req: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        self.admit_to(params, &req.id).await?;
        self.inner.get_task(params, req).await
    }

    /// The caller's own tasks, in id order, filtered as the request asks and paged by the
    /// last id of the page before (the token).
    async fn list_tasks(
        &self,
        params: &ServiceParams,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        self.admit(params).await?;
        let scope = scope_of(params);
        // The SDK's own page sizes (50 when none is asked, 100 at most).
        let page_size = a2a_server::pagination::resolve_page_size(req.page_size);
        match &self.owners {
            Ownership::Local(owners) => {
                let mut page = super::listing::KeysetPage::new(&req, page_size);
                self.offer_own(owners, scope, params, &req, &mut page)
                    .await?;
                Ok(page.reply())
            }
            Ownership::Shared(store) => store.list_owned(Owner(scope), &req, page_size).await,
        }
    }

    async fn cancel_task(
        &self,
        params: &ServiceParams,
        req: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        self.admit_to(params, &req.id).await?;
        self.inner.cancel_task(params, req).await
    }

    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.admit_to(params, &req.id).await?;
        match &self.owners {
            // A task running on another replica is followed through the store.
            Ownership::Shared(store) => {
                let id = req.id.clone();
                match self.inner.subscribe_to_task(params, req).await {
                    Err(error) if error.code == a2a::error_code::TASK_NOT_FOUND => {
                        match store.follow(Owner(scope_of(params)), &id).await {
                            Some(followed) => followed,
                            None => Err(error),
                        }
                    }
                    other => other,
                }
            }
            Ownership::Local(_) => self.inner.subscribe_to_task(params, req).await,
        }
    }

    async fn create_push_config(
        &self,
        params: &ServiceParams,
        req: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.admit_to(params, &req.task_id).await?;
        match &self.push {
            Some(push) => push.set(req, scope_of(params)).await,
            None => self.inner.create_push_config(params, req).await,
        }
    }

    async fn get_push_config(
        &self,
        params: &ServiceParams,
        req: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.admit_to(params, &req.task_id).await?;
        match &self.push {
            Some(push) => push.configs().get(&req.task_id, &req.id).await,
            None => self.inner.get_push_config(params, req).await,
        }
    }

    async fn list_push_configs(
        &self,
        params: &ServiceParams,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.admit_to(params, &req.task_id).await?;
        let Some(push) = &self.push else {
            return self.inner.list_push_configs(params, req).await;
        };
        // Paged as the SDK's handler pages them: by config id, the token the next offset.
        let mut configs = push.configs().list(&req.task_id).await?;
        configs.sort_by(|left, right| left.id.cmp(&right.id));
        let page_size = a2a_server::pagination::resolve_page_size(req.page_size);
        let start = match &req.page_token {
            Some(token) => token
                .parse::<usize>()
                .map_err(|_| A2AError::invalid_params("invalid page token"))?,
            None => 0,
        }
        .min(configs.len());
        let end = start.saturating_add(page_size).min(configs.len());
        let next_page_token = (end < configs.len()).then(|| end.to_string());
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs[start..end].to_vec(),
            next_page_token,
        })
    }

    async fn delete_push_config(
        &self,
        params: &ServiceParams,
        req: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        self.admit_to(params, &req.task_id).await?;
        match &self.push {
            Some(push) => push.delete(&req.task_id, &req.id).await,
            None => self.inner.delete_push_config(params, req).await,
        }
    }

    async fn get_extended_agent_card(
        &self,
        params: &ServiceParams,
        req: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        self.admit(params).await?;
        self.inner.get_extended_agent_card(params, req).await
    }
}
