//! The A2A methods: one table with each method's 1.0 name, its 0.3 alias, its HTTP+JSON route
//! and what each layer needs to know of it. Read by the retry policy (safe to repeat), hedging
//! (only reads), the REST client (routes) and metrics (a closed set of label values).

/// An HTTP verb of the HTTP+JSON binding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Delete,
}

/// One A2A method.
#[derive(Copy, Clone, Debug)]
pub struct Method {
    /// The A2A 1.0 name (`SendMessage`).
    pub name: &'static str,
    /// The A2A 0.3 name (`message/send`).
    pub alias: &'static str,
    /// Repeating it does no harm: reads, cancels, deletes, and `SendMessage`, whose every
    /// attempt carries the same `messageId` for the server to deduplicate.
    pub safe: bool,
    /// It only reads, so two attempts at once cost nothing but the work (hedged by default).
    /// `SendMessage` is safe to *retry* but not a read: two attempts in flight at once cost a
    /// server without dedup twice the work.
    pub read: bool,
    /// The HTTP+JSON verb.
    pub verb: Verb,
    /// The HTTP+JSON path below the agent's URL; `{field}` is that string field of the
    /// params (A2A 1.0 names: `id` is a task's id, `taskId` and `id` a push config's).
    pub path: &'static str,
}

impl Method {
    /// Whether the params travel as the body (else only in the path).
    pub fn has_body(&self) -> bool {
        self.verb == Verb::Post
    }

    /// The name as `given` spells it: the 1.0 name or the 0.3 alias, as a `'static` string.
    pub fn spelled(&self, given: &str) -> &'static str {
        if given == self.alias {
            self.alias
        } else {
            self.name
        }
    }
}

const fn method(
    name: &'static str,
    alias: &'static str,
    (safe, read): (bool, bool),
    verb: Verb,
    path: &'static str,
) -> Method {
    Method {
        name,
        alias,
        safe,
        read,
        verb,
        path,
    }
}

/// Safe to repeat, and only reads.
const READ: (bool, bool) = (true, true);
/// Safe to repeat, but does work.
const SAFE: (bool, bool) = (true, false);
/// Repeating it may do the work twice.
const UNSAFE: (bool, bool) = (false, false);

/// Every A2A method.
#[rustfmt::skip]
pub const METHODS: [Method; 11] = [
    method("SendMessage", "message/send", SAFE, Verb::Post, "message:send"),
    method("SendStreamingMessage", "message/stream", SAFE, Verb::Post, "message:stream"),
    method("GetTask", "tasks/get", READ, Verb::Get, "tasks/{id}"),
    method("ListTasks", "tasks/list", READ, Verb::Get, "tasks"),
    method("CancelTask", "tasks/cancel", SAFE, Verb::Post, "tasks/{id}:cancel"),
    method("SubscribeToTask", "tasks/resubscribe", SAFE, Verb::Get, "tasks/{id}:subscribe"),
    method("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set", UNSAFE,
        Verb::Post, "tasks/{taskId}/pushNotificationConfigs"),
    method("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get", READ,
        Verb::Get, "tasks/{taskId}/pushNotificationConfigs/{id}"),
    method("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list", READ,
        Verb::Get, "tasks/{taskId}/pushNotificationConfigs"),
    method("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete", SAFE,
        Verb::Delete, "tasks/{taskId}/pushNotificationConfigs/{id}"),
    method("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard", READ,
        Verb::Get, "extendedAgentCard"),
];

/// `SendMessage`: its row's name, for the code that serves or calls it.
pub const SEND_MESSAGE: &str = METHODS[0].name;
/// `SendStreamingMessage`: its row's name, for the code that serves or calls it.
pub const SEND_STREAMING_MESSAGE: &str = METHODS[1].name;
/// `GetTask`: its row's name, for the code that serves or calls it.
pub const GET_TASK: &str = METHODS[2].name;
/// `ListTasks`: its row's name, for the code that serves or calls it.
pub const LIST_TASKS: &str = METHODS[3].name;
/// `CancelTask`: its row's name, for the code that serves or calls it.
pub const CANCEL_TASK: &str = METHODS[4].name;
/// `SubscribeToTask`: its row's name, for the code that serves or calls it.
pub const SUBSCRIBE_TO_TASK: &str = METHODS[5].name;
/// `CreateTaskPushNotificationConfig`: its row's name, for the code that serves or calls it.
pub const CREATE_TASK_PUSH_NOTIFICATION_CONFIG: &str = METHODS[6].name;
/// `GetTaskPushNotificationConfig`: its row's name, for the code that serves or calls it.
pub const GET_TASK_PUSH_NOTIFICATION_CONFIG: &str = METHODS[7].name;
/// `ListTaskPushNotificationConfigs`: its row's name, for the code that serves or calls it.
pub const LIST_TASK_PUSH_NOTIFICATION_CONFIGS: &str = METHODS[8].name;
/// `DeleteTaskPushNotificationConfig`: its row's name, for the code that serves or calls it.
pub const DELETE_TASK_PUSH_NOTIFICATION_CONFIG: &str = METHODS[9].name;
/// `GetExtendedAgentCard`: its row's name, for the code that serves or calls it.
pub const GET_EXTENDED_AGENT_CARD: &str = METHODS[10].name;

/// The row of `name` (a 1.0 name or a 0.3 alias), if it is an A2A method.
pub fn lookup(name: &str) -> Option<&'static Method> {
    METHODS
        .iter()
        .find(|method| method.name == name || method.alias == name)
}

/// The method whose HTTP+JSON route `verb` and `path` (below the agent's URL, with or without
/// its leading `/`) are, if any: a route with a suffix after its field (`tasks/{id}:cancel`)
/// wins over one without (`tasks/{id}`).
pub fn for_route(verb: Verb, path: &str) -> Option<&'static Method> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let fits = |method: &Method| {
        let template: Vec<&str> = method.path.split('/').collect();
        template.len() == segments.len()
            && template
                .iter()
                .zip(&segments)
                .all(|(part, segment)| match part.split_once('{') {
                    None => part == segment,
                    Some((before, rest)) => {
                        let after = rest.split_once('}').map_or("", |(_, after)| after);
                        segment.len() > before.len() + after.len()
                            && segment.starts_with(before)
                            && segment.ends_with(after)
                    }
                })
    };
    METHODS
        .iter()
        .filter(|method| method.verb == verb && fits(method))
        .max_by_key(|method| method.path.contains("}:"))
}

/// The A2A 1.0 name of the method an HTTP+JSON request is (`"GET"`, `"/tasks/t-1"` →
/// `GetTask`), if any: for servers and test doubles that route REST requests by method.
pub fn method_of_route(verb: &str, path: &str) -> Option<&'static str> {
    let verb = match verb {
        "GET" => Verb::Get,
        "POST" => Verb::Post,
        "DELETE" => Verb::Delete,
        _ => return None,
    };
    for_route(verb, path).map(|method| method.name)
}

/// The A2A 1.0 name of `name` (a 1.0 name or a 0.3 alias), if it is an A2A method.
pub fn method_name(name: &str) -> Option<&'static str> {
    lookup(name).map(|method| method.name)
}

/// Every spelling of the methods `pick` selects: 1.0 names and 0.3 aliases.
pub fn names(pick: impl Fn(&Method) -> bool) -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(move |method| pick(method))
        .flat_map(|method| [method.name, method.alias])
}

/// The path segments of `method`'s route, each `{field}` filled from the string field of
/// `params`; the error names the field that is missing.
pub fn route_segments(method: &Method, params: &serde_json::Value) -> Result<Vec<String>, String> {
    method
        .path
        .split('/')
        .map(|segment| {
            let Some((before, rest)) = segment.split_once('{') else {
                return Ok(segment.to_owned());
            };
            let (field, after) = rest.split_once('}').unwrap_or((rest, ""));
            let value = params.get(field).and_then(serde_json::Value::as_str);
            match value {
                Some(value) => Ok(format!("{before}{value}{after}")),
                None => Err(format!(
                    "{} needs a string {field:?} in its params",
                    method.name
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_aliases_find_one_row_each() {
        for method in METHODS {
            assert_eq!(lookup(method.name).unwrap().name, method.name);
            assert_eq!(lookup(method.alias).unwrap().name, method.name);
            assert_eq!(method.spelled(method.alias), method.alias);
            // Every read is safe to repeat.
            assert!(!method.read || method.safe, "{}", method.name);
        }
        assert!(lookup("NoSuchMethod").is_none());
        assert_eq!(names(|m| m.read).count(), 2 * 5);
    }

    #[test]
    fn a_route_names_its_method() {
        let name = |verb, path| for_route(verb, path).map(|method| method.name);
        assert_eq!(name(Verb::Post, "/message:send"), Some("SendMessage"));
        assert_eq!(name(Verb::Get, "/tasks/t-1"), Some("GetTask"));
        assert_eq!(name(Verb::Post, "/tasks/t-1:cancel"), Some("CancelTask"));
        assert_eq!(
            name(Verb::Get, "/tasks/t-1:subscribe"),
            Some("SubscribeToTask")
        );
        assert_eq!(
            name(Verb::Delete, "/tasks/t/pushNotificationConfigs/c"),
            Some("DeleteTaskPushNotificationConfig")
        );
        assert_eq!(name(Verb::Get, "/tasks"), Some("ListTasks"));
        assert_eq!(name(Verb::Post, "/tasks/:cancel"), None);
        assert_eq!(name(Verb::Get, "/nothing/here"), None);
    }

    #[test]
    fn routes_fill_their_fields() {
        let get = lookup("GetTaskPushNotificationConfig").unwrap();
        let params = json!({"taskId": "t 1", "id": "c"});
        assert_eq!(
            route_segments(get, &params).unwrap(),
            ["tasks", "t 1", "pushNotificationConfigs", "c"]
        );
        let cancel = lookup("tasks/cancel").unwrap();
        assert_eq!(
            route_segments(cancel, &json!({"id": "t"})).unwrap(),
            ["tasks", "t:cancel"]
        );
        let error = route_segments(get, &json!({"taskId": "t"})).unwrap_err();
        assert!(error.contains("\"id\""), "{error}");
        assert!(
            !lookup("DeleteTaskPushNotificationConfig")
                .unwrap()
                .has_body()
        );
    }
}
