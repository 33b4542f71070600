//! The A2A methods, 1.0 names and 0.3 aliases, with what each layer needs to know of them:
//! one table, read by the retry policy (safe to repeat), hedging (only reads) and metrics
//! (a closed set of label values).

/// One method name.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Method {
    /// The name on the wire.
    pub name: &'static str,
    /// Repeating it does no harm: reads, cancels, deletes, and `SendMessage`, whose every
    /// attempt carries the same `messageId` for the server to deduplicate.
    pub safe: bool,
    /// It only reads, so two attempts at once cost nothing but the work (hedged by default).
    /// `SendMessage` is safe to *retry* but not a read: two attempts in flight at once cost a
    /// server without dedup twice the work.
    pub read: bool,
}

const fn method(name: &'static str, safe: bool, read: bool) -> Method {
    Method { name, safe, read }
}

/// Every A2A method.
pub(crate) const METHODS: [Method; 22] = [
    method("SendMessage", true, false),
    method("SendStreamingMessage", true, false),
    method("GetTask", true, true),
    method("ListTasks", true, true),
    method("CancelTask", true, false),
    method("SubscribeToTask", true, false),
    method("CreateTaskPushNotificationConfig", false, false),
    method("GetTaskPushNotificationConfig", true, true),
    method("ListTaskPushNotificationConfigs", true, true),
    method("DeleteTaskPushNotificationConfig", true, false),
    method("GetExtendedAgentCard", true, true),
    method("message/send", true, false),
    method("message/stream", true, false),
    method("tasks/get", true, true),
    method("tasks/list", true, true),
    method("tasks/cancel", true, false),
    method("tasks/resubscribe", true, false),
    method("tasks/pushNotificationConfig/set", false, false),
    method("tasks/pushNotificationConfig/get", true, true),
    method("tasks/pushNotificationConfig/list", true, true),
    method("tasks/pushNotificationConfig/delete", true, false),
    method("agent/getAuthenticatedExtendedCard", true, true),
];

/// The row of `name`, if it is an A2A method.
pub(crate) fn lookup(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|method| method.name == name)
}
