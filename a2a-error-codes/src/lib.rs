//! The A2A error code table: one source of truth for every code this project knows.
//!
//! Both the derive (at expansion time, to resolve `code = TASK_NOT_FOUND`, default reasons and
//! the duplicate / reserved-range checks) and the runtime (to classify errors on the wire) read
//! this table, so the two can never disagree. It has no dependencies and no I/O.
//!
//! Users reach it as `a2a_error::code`.
#![no_std]
#![deny(missing_docs)]

/// What kind of failure an error is; drives retry decisions and metrics.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Category {
    /// A passing fault (an overloaded or restarting agent); retrying may help.
    Transient,
    /// The caller sent too much too fast; retry after the given delay.
    RateLimit,
    /// The request itself is wrong; retrying the same request cannot help.
    Validation,
    /// Missing or insufficient credentials.
    Auth,
    /// The named task, skill or method does not exist.
    NotFound,
    /// A deadline ran out before the work finished.
    Timeout,
    /// A bug or broken invariant on the serving side; retrying will not help.
    Fatal,
    /// Nothing more is known (foreign codes, unclassified errors).
    Unknown,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 8] = [
        Category::Transient,
        Category::RateLimit,
        Category::Validation,
        Category::Auth,
        Category::NotFound,
        Category::Timeout,
        Category::Fatal,
        Category::Unknown,
    ];

    /// The kebab-case name used in attributes, docs and metrics (`"rate-limit"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::Transient => "transient",
            Category::RateLimit => "rate-limit",
            Category::Validation => "validation",
            Category::Auth => "auth",
            Category::NotFound => "not-found",
            Category::Timeout => "timeout",
            Category::Fatal => "fatal",
            Category::Unknown => "unknown",
        }
    }

    /// Parses a name as written in `#[a2a(category = "...")]`; `-` and `_` are interchangeable.
    pub fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|category| {
            let canonical = category.as_str().as_bytes();
            name.len() == canonical.len()
                && name.bytes().zip(canonical).all(|(given, &want)| {
                    given.to_ascii_lowercase() == want || (given == b'_' && want == b'-')
                })
        })
    }

    /// Whether errors of this category are never worth retrying, whatever they say.
    pub const fn is_never_retried(self) -> bool {
        matches!(
            self,
            Category::Validation | Category::Auth | Category::NotFound | Category::Fatal
        )
    }

    /// The public message for a code outside the table, when the variant names none.
    pub const fn default_message(self) -> &'static str {
        match self {
            Category::Transient => "Temporary failure",
            Category::RateLimit => "Rate limited",
            Category::Validation => "Invalid request",
            Category::Auth => "Not authorized",
            Category::NotFound => "Not found",
            Category::Timeout => "Deadline exceeded",
            Category::Fatal | Category::Unknown => "Internal error",
        }
    }
}

/// How a code in the table is retried when the error gives no delay of its own.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DefaultRetry {
    /// Never retried.
    Never,
    /// Retried with exponential backoff (a server-given delay, when present, wins).
    Backoff,
}

/// When a server answers with a code, which says whether the peer may have run the request.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Decided {
    /// Only before any work: the request could not be read, was not allowed, or was refused
    /// for load. Such a reply proves the request did not run, so even a method that is unsafe
    /// to repeat may be sent again.
    BeforeWork,
    /// At any point, possibly after the work had started (internal errors, deadline exceeded
    /// after the handler was stopped, downstream failures).
    AnyTime,
}

/// Who defines a code, which decides the ErrorInfo `domain` of its spec-own reason.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// JSON-RPC 2.0 itself (-32700, -32600..-32603).
    JsonRpc,
    /// The A2A specification (-32001..-32009).
    A2a,
    /// This project (-32050..=-32063); the domain is the application's.
    Project,
}

impl Origin {
    /// Whether the code's own reason belongs to the `a2a-protocol.org` domain.
    pub const fn is_spec(self) -> bool {
        matches!(self, Origin::JsonRpc | Origin::A2a)
    }
}

/// One row of the table: everything the wire and the bindings say about one code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CodeRow {
    /// The const name in this module (`"TASK_NOT_FOUND"`).
    pub name: &'static str,
    /// The JSON-RPC error code.
    pub code: i32,
    /// The `google.rpc.ErrorInfo` reason, `UPPER_SNAKE_CASE`.
    pub reason: &'static str,
    /// The default public message.
    pub message: &'static str,
    /// HTTP status under the A2A v1.0.1 mapping.
    pub http_status: u16,
    /// gRPC status name under the A2A v1.0.1 mapping.
    pub grpc_status: &'static str,
    /// HTTP status under the A2A v1.0.0 mapping (old peers).
    pub http_status_v1_0_0: u16,
    /// gRPC status name under the A2A v1.0.0 mapping (old peers).
    pub grpc_status_v1_0_0: &'static str,
    /// The failure category.
    pub category: Category,
    /// The retry used when the error gives no delay.
    pub retry: DefaultRetry,
    /// Who defines the code.
    pub origin: Origin,
    /// When a server answers with it: only before any work, or at any point.
    pub decided: Decided,
}

impl CodeRow {
    /// Whether only a client's own mistake draws this code (the JSON-RPC protocol errors
    /// -32700, -32600, -32601, -32602): retrying the same request cannot help, whatever
    /// delay the reply names.
    pub const fn is_client_mistake(&self) -> bool {
        matches!(self.origin, Origin::JsonRpc) && matches!(self.category, Category::Validation)
    }
}

/// The legacy wire profile's own `data` member names; a data field may not use them.
pub const LEGACY_RESERVED_KEYS: [&str; 4] = ["reason", "domain", "retryable", "retryAfter"];

/// The domain of the spec's own reasons.
pub const SPEC_DOMAIN: &str = "a2a-protocol.org";

/// The domain of the project's own codes when no application names one (`StandardError`'s,
/// a client's local failures); an application's enum wrapping such an error replaces it.
pub const PROJECT_DOMAIN: &str = "a2a-error";

/// Invalid JSON was received (JSON-RPC 2.0).
pub const PARSE_ERROR: i32 = -32700;
/// The JSON sent is not a valid request object (JSON-RPC 2.0).
pub const INVALID_REQUEST: i32 = -32600;
/// The method does not exist or is not available (JSON-RPC 2.0).
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Invalid method parameters (JSON-RPC 2.0).
pub const INVALID_PARAMS: i32 = -32602;
/// Internal JSON-RPC error (JSON-RPC 2.0).
pub const INTERNAL_ERROR: i32 = -32603;
/// The task id does not name a task (A2A `TaskNotFoundError`).
pub const TASK_NOT_FOUND: i32 = -32001;
/// The task is in a state that cannot be canceled (A2A `TaskNotCancelableError`).
pub const TASK_NOT_CANCELABLE: i32 = -32002;
/// The agent does not support push notifications (A2A `PushNotificationNotSupportedError`).
pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i32 = -32003;
/// The operation is not supported (A2A `UnsupportedOperationError`).
pub const UNSUPPORTED_OPERATION: i32 = -32004;
/// Incompatible content types (A2A `ContentTypeNotSupportedError`).
pub const CONTENT_TYPE_NOT_SUPPORTED: i32 = -32005;
/// The agent produced an invalid response (A2A `InvalidAgentResponseError`).
pub const INVALID_AGENT_RESPONSE: i32 = -32006;
/// No extended agent card is configured (A2A `ExtendedAgentCardNotConfiguredError`).
pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i32 = -32007;
/// The client must support a required extension (A2A `ExtensionSupportRequiredError`).
pub const EXTENSION_SUPPORT_REQUIRED: i32 = -32008;
/// The requested A2A version is not served (A2A `VersionNotSupportedError`).
pub const VERSION_NOT_SUPPORTED: i32 = -32009;
/// Authentication is required (this project).
pub const AUTH_REQUIRED: i32 = -32050;
/// The credentials lack a required scope (this project).
pub const INSUFFICIENT_SCOPE: i32 = -32051;
/// The caller is rate limited (this project).
pub const RATE_LIMITED: i32 = -32052;
/// The agent is temporarily unavailable (this project).
pub const AGENT_UNAVAILABLE: i32 = -32053;
/// A deadline ran out (this project).
pub const DEADLINE_EXCEEDED: i32 = -32054;
/// The request body is too large (this project).
pub const CONTENT_TOO_LARGE: i32 = -32055;
/// The requested skill does not exist (this project).
pub const SKILL_NOT_FOUND: i32 = -32056;
/// A downstream agent failed (this project).
pub const DOWNSTREAM_FAILED: i32 = -32057;
/// The model provider the agent calls is unavailable: rate limited, down, too slow, or its
/// circuit open (this project).
pub const MODEL_UNAVAILABLE: i32 = -32058;
/// The model provider refused the agent's request (400, 401, 403, 404, 422): trying again
/// does not help (this project).
pub const MODEL_REJECTED: i32 = -32059;
/// A dependency the agent calls (a tool, a service) is unavailable (this project).
pub const DEPENDENCY_UNAVAILABLE: i32 = -32060;
/// A dependency the agent calls refused its request (this project).
pub const DEPENDENCY_REJECTED: i32 = -32061;
/// A model's streamed answer stopped after part of it had been delivered (the connection
/// closed, the model went silent, or it sent an error mid-stream): what was delivered stands;
/// asking again starts a new answer (this project).
pub const MODEL_STREAM_INTERRUPTED: i32 = -32062;
/// The agent's quota with the model provider it calls is spent (a billing or spend budget, a
/// daily limit): not retryable unless the time the quota is renewed is known (this project).
pub const MODEL_QUOTA_EXHAUSTED: i32 = -32063;

macro_rules! rows {
    ($( $name:ident: $reason:literal, $message:literal, $http:literal $grpc:literal,
        v1_0_0 $http0:literal $grpc0:literal, $category:ident, $retry:ident, $origin:ident,
        $decided:ident; )*) => {
        /// Every code this project knows, JSON-RPC's, A2A's and its own.
        pub const TABLE: &[CodeRow] = &[$(CodeRow {
            name: stringify!($name),
            code: $name,
            reason: $reason,
            message: $message,
            http_status: $http,
            grpc_status: $grpc,
            http_status_v1_0_0: $http0,
            grpc_status_v1_0_0: $grpc0,
            category: Category::$category,
            retry: DefaultRetry::$retry,
            origin: Origin::$origin,
            decided: Decided::$decided,
        }),*];
    };
}

rows! {
    PARSE_ERROR: "PARSE_ERROR", "Invalid JSON payload", 400 "INVALID_ARGUMENT",
        v1_0_0 400 "INVALID_ARGUMENT", Validation, Never, JsonRpc, BeforeWork;
    INVALID_REQUEST: "INVALID_REQUEST", "Request payload validation error", 400 "INVALID_ARGUMENT",
        v1_0_0 400 "INVALID_ARGUMENT", Validation, Never, JsonRpc, BeforeWork;
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND", "Method not found", 404 "NOT_FOUND",
        v1_0_0 404 "NOT_FOUND", Validation, Never, JsonRpc, BeforeWork;
    INVALID_PARAMS: "INVALID_PARAMS", "Invalid parameters", 400 "INVALID_ARGUMENT",
        v1_0_0 400 "INVALID_ARGUMENT", Validation, Never, JsonRpc, BeforeWork;
    INTERNAL_ERROR: "INTERNAL_ERROR", "Internal error", 500 "INTERNAL",
        v1_0_0 500 "INTERNAL", Transient, Backoff, JsonRpc, AnyTime;
    TASK_NOT_FOUND: "TASK_NOT_FOUND", "Task not found", 404 "NOT_FOUND",
        v1_0_0 404 "NOT_FOUND", NotFound, Never, A2a, AnyTime;
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE", "Task cannot be canceled", 400 "FAILED_PRECONDITION",
        v1_0_0 409 "FAILED_PRECONDITION", Validation, Never, A2a, AnyTime;
    PUSH_NOTIFICATION_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED", "Push Notification is not supported", 400 "FAILED_PRECONDITION",
        v1_0_0 400 "UNIMPLEMENTED", Validation, Never, A2a, AnyTime;
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION", "This operation is not supported", 400 "FAILED_PRECONDITION",
        v1_0_0 400 "UNIMPLEMENTED", Validation, Never, A2a, AnyTime;
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types", 400 "INVALID_ARGUMENT",
        v1_0_0 415 "INVALID_ARGUMENT", Validation, Never, A2a, BeforeWork;
    INVALID_AGENT_RESPONSE: "INVALID_AGENT_RESPONSE", "Invalid agent response", 500 "INTERNAL",
        v1_0_0 502 "INTERNAL", Fatal, Never, A2a, AnyTime;
    EXTENDED_AGENT_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "Extended Agent Card is not configured", 400 "FAILED_PRECONDITION",
        v1_0_0 400 "FAILED_PRECONDITION", Validation, Never, A2a, AnyTime;
    EXTENSION_SUPPORT_REQUIRED: "EXTENSION_SUPPORT_REQUIRED", "Extension support required", 400 "FAILED_PRECONDITION",
        v1_0_0 400 "FAILED_PRECONDITION", Validation, Never, A2a, BeforeWork;
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED", "Version not supported", 400 "FAILED_PRECONDITION",
        v1_0_0 400 "UNIMPLEMENTED", Validation, Never, A2a, BeforeWork;
    AUTH_REQUIRED: "AUTH_REQUIRED", "Authentication required", 401 "UNAUTHENTICATED",
        v1_0_0 401 "UNAUTHENTICATED", Auth, Never, Project, BeforeWork;
    INSUFFICIENT_SCOPE: "INSUFFICIENT_SCOPE", "Insufficient scope", 403 "PERMISSION_DENIED",
        v1_0_0 403 "PERMISSION_DENIED", Auth, Never, Project, BeforeWork;
    RATE_LIMITED: "RATE_LIMITED", "Rate limited", 429 "RESOURCE_EXHAUSTED",
        v1_0_0 429 "RESOURCE_EXHAUSTED", RateLimit, Backoff, Project, BeforeWork;
    AGENT_UNAVAILABLE: "AGENT_UNAVAILABLE", "Agent unavailable", 503 "UNAVAILABLE",
        v1_0_0 503 "UNAVAILABLE", Transient, Backoff, Project, AnyTime;
    DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED", "Deadline exceeded", 504 "DEADLINE_EXCEEDED",
        v1_0_0 504 "DEADLINE_EXCEEDED", Timeout, Backoff, Project, AnyTime;
    CONTENT_TOO_LARGE: "CONTENT_TOO_LARGE", "Content too large", 413 "INVALID_ARGUMENT",
        v1_0_0 413 "INVALID_ARGUMENT", Validation, Never, Project, BeforeWork;
    SKILL_NOT_FOUND: "SKILL_NOT_FOUND", "Skill not found", 404 "NOT_FOUND",
        v1_0_0 404 "NOT_FOUND", NotFound, Never, Project, AnyTime;
    DOWNSTREAM_FAILED: "DOWNSTREAM_FAILED", "Downstream agent failed", 502 "UNAVAILABLE",
        v1_0_0 502 "UNAVAILABLE", Transient, Backoff, Project, AnyTime;
    MODEL_UNAVAILABLE: "MODEL_UNAVAILABLE", "Model unavailable", 503 "UNAVAILABLE",
        v1_0_0 503 "UNAVAILABLE", Transient, Backoff, Project, AnyTime;
    MODEL_REJECTED: "MODEL_REJECTED", "Model rejected the request", 502 "INTERNAL",
        v1_0_0 502 "INTERNAL", Fatal, Never, Project, AnyTime;
    DEPENDENCY_UNAVAILABLE: "DEPENDENCY_UNAVAILABLE", "Dependency unavailable", 503 "UNAVAILABLE",
        v1_0_0 503 "UNAVAILABLE", Transient, Backoff, Project, AnyTime;
    DEPENDENCY_REJECTED: "DEPENDENCY_REJECTED", "Dependency rejected the request", 502 "INTERNAL",
        v1_0_0 502 "INTERNAL", Fatal, Never, Project, AnyTime;
    MODEL_STREAM_INTERRUPTED: "MODEL_STREAM_INTERRUPTED", "Model stream interrupted", 503 "UNAVAILABLE",
        v1_0_0 503 "UNAVAILABLE", Transient, Backoff, Project, AnyTime;
    MODEL_QUOTA_EXHAUSTED: "MODEL_QUOTA_EXHAUSTED", "Model quota exhausted", 503 "RESOURCE_EXHAUSTED",
        v1_0_0 503 "RESOURCE_EXHAUSTED", RateLimit, Never, Project, AnyTime;
}

/// The row for `code`, if the table has one.
pub const fn lookup(code: i32) -> Option<&'static CodeRow> {
    let mut i = 0;
    while i < TABLE.len() {
        if TABLE[i].code == code {
            return Some(&TABLE[i]);
        }
        i += 1;
    }
    None
}

/// The row whose const is called `name` (`"TASK_NOT_FOUND"`), if any.
pub fn by_name(name: &str) -> Option<&'static CodeRow> {
    TABLE.iter().find(|row| row.name == name)
}

/// The row whose ErrorInfo reason is `reason` (`"TASK_NOT_FOUND"`), if any.
pub fn by_reason(reason: &str) -> Option<&'static CodeRow> {
    TABLE.iter().find(|row| row.reason == reason)
}

/// The code a bare HTTP status stands for (with the `google.rpc.Status` gRPC name when a body
/// gives one): what a client reads from a reply that carries no ErrorInfo reason. This and
/// [`grpc_status_for_http`] are the reverse direction of the table's own statuses, kept here so
/// that every HTTP fact lives in one place.
///
/// The v1.0.0 statuses (409, 415) map to the spec errors that had them. Whatever is left is
/// INTERNAL_ERROR, which is retried with backoff and may have run: never a claim that the
/// caller made a mistake or that the peer did not act, which an unknown status does not prove.
pub fn code_for_http(status: u16, grpc: Option<&str>) -> i32 {
    match (grpc, status) {
        (Some("UNAUTHENTICATED"), _) | (None, 401) => AUTH_REQUIRED,
        (Some("PERMISSION_DENIED"), _) | (None, 403) => INSUFFICIENT_SCOPE,
        (Some("RESOURCE_EXHAUSTED"), _) | (None, 429) => RATE_LIMITED,
        (Some("DEADLINE_EXCEEDED"), _) | (None, 408 | 504) => DEADLINE_EXCEEDED,
        (Some("UNAVAILABLE"), 502) | (None, 502) => DOWNSTREAM_FAILED,
        (Some("UNAVAILABLE"), _) | (None, 503) => AGENT_UNAVAILABLE,
        // A REST route names a task; a route this peer lacks is METHOD_NOT_FOUND with an
        // ErrorInfo when the peer is A2A at all.
        (Some("NOT_FOUND"), _) | (None, 404) => TASK_NOT_FOUND,
        (Some("UNIMPLEMENTED"), _) | (None, 405 | 501) => UNSUPPORTED_OPERATION,
        (Some("FAILED_PRECONDITION") | None, 409) => TASK_NOT_CANCELABLE,
        (_, 413) => CONTENT_TOO_LARGE,
        (Some("INVALID_ARGUMENT") | None, 415) => CONTENT_TYPE_NOT_SUPPORTED,
        (Some("INVALID_ARGUMENT" | "OUT_OF_RANGE"), _) | (None, 400 | 422) => INVALID_PARAMS,
        // Not an error status at all (a redirect where an answer was due): not A2A.
        (None, 100..=399) => INVALID_AGENT_RESPONSE,
        _ => INTERNAL_ERROR,
    }
}

/// The gRPC status name conventionally paired with an HTTP status (the google.rpc mapping),
/// for an error sent with a status other than its code's own.
pub const fn grpc_status_for_http(status: u16) -> &'static str {
    match status {
        200..=299 => "OK",
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        408 | 504 => "DEADLINE_EXCEEDED",
        405 => "UNIMPLEMENTED",
        409 => "ABORTED",
        412 => "FAILED_PRECONDITION",
        413 | 415 | 422 => "INVALID_ARGUMENT",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        502 | 503 => "UNAVAILABLE",
        402..=499 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

/// The JSON-RPC reserved range, -32768..=-32000.
pub const RESERVED: core::ops::RangeInclusive<i32> = -32768..=-32000;
/// The part of the reserved range left to servers, -32099..=-32000.
pub const SERVER_DEFINED: core::ops::RangeInclusive<i32> = -32099..=-32000;

/// Whether `code` lies in the JSON-RPC reserved range but is neither defined by JSON-RPC nor
/// left to servers, so no application may use it.
pub const fn is_reserved_undefined(code: i32) -> bool {
    let reserved = code >= *RESERVED.start() && code <= *RESERVED.end();
    let server = code >= *SERVER_DEFINED.start() && code <= *SERVER_DEFINED.end();
    reserved && !server && lookup(code).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_statuses_read_as_table_codes() {
        assert_eq!(code_for_http(404, None), TASK_NOT_FOUND);
        assert_eq!(code_for_http(502, None), DOWNSTREAM_FAILED);
        assert_eq!(code_for_http(502, Some("UNAVAILABLE")), DOWNSTREAM_FAILED);
        assert_eq!(code_for_http(500, Some("UNAVAILABLE")), AGENT_UNAVAILABLE);
        assert_eq!(code_for_http(307, None), INVALID_AGENT_RESPONSE);
        assert_eq!(code_for_http(418, None), INTERNAL_ERROR);
        assert_eq!(grpc_status_for_http(429), "RESOURCE_EXHAUSTED");
        assert_eq!(grpc_status_for_http(451), "FAILED_PRECONDITION");
    }

    #[test]
    fn names_codes_and_reasons_are_unique() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                assert_ne!(a.code, b.code, "{} and {}", a.name, b.name);
                assert_ne!(a.name, b.name);
                assert_ne!(a.reason, b.reason);
            }
            // Unique, so each name and each reason finds its own row.
            assert_eq!(by_name(a.name).map(|row| row.code), Some(a.code));
            assert_eq!(by_reason(a.reason).map(|row| row.code), Some(a.code));
        }
        assert!(by_reason("NO_SUCH_REASON").is_none());
    }

    #[test]
    fn client_mistakes_are_the_protocol_errors_and_decided_before_work() {
        let mistakes: [i32; 4] = [
            PARSE_ERROR,
            INVALID_REQUEST,
            METHOD_NOT_FOUND,
            INVALID_PARAMS,
        ];
        for row in TABLE {
            assert_eq!(
                row.is_client_mistake(),
                mistakes.contains(&row.code),
                "{}",
                row.name
            );
            if row.is_client_mistake() {
                assert_eq!(row.decided, Decided::BeforeWork, "{}", row.name);
            }
        }
        // Errors that may come from work under way are never claimed as refusals.
        for code in [
            INTERNAL_ERROR,
            DEADLINE_EXCEEDED,
            DOWNSTREAM_FAILED,
            AGENT_UNAVAILABLE,
        ] {
            assert_eq!(lookup(code).unwrap().decided, Decided::AnyTime);
        }
    }

    #[test]
    fn spec_codes_sit_where_the_spec_puts_them() {
        for row in TABLE {
            match row.origin {
                Origin::JsonRpc => assert!(is_in(row.code, -32700..=-32600)),
                Origin::A2a => assert!(is_in(row.code, -32009..=-32001)),
                Origin::Project => assert!(is_in(row.code, -32063..=-32050)),
            }
            assert!(!is_reserved_undefined(row.code));
        }
        assert_eq!(TABLE.len(), 5 + 9 + 14);
    }

    fn is_in(code: i32, range: core::ops::RangeInclusive<i32>) -> bool {
        range.contains(&code)
    }

    #[test]
    fn reserved_range_edges() {
        assert!(is_reserved_undefined(-32768));
        assert!(is_reserved_undefined(-32100));
        assert!(is_reserved_undefined(-32604));
        assert!(!is_reserved_undefined(-32099));
        assert!(!is_reserved_undefined(-32000));
        assert!(!is_reserved_undefined(-31999));
        assert!(!is_reserved_undefined(-32769));
        assert!(!is_reserved_undefined(PARSE_ERROR));
    }

    #[test]
    fn category_names_parse_both_spellings() {
        for category in Category::ALL {
            assert_eq!(Category::from_name(category.as_str()), Some(category));
        }
        assert_eq!(Category::from_name("rate_limit"), Some(Category::RateLimit));
        assert_eq!(Category::from_name("Not-Found"), Some(Category::NotFound));
        assert_eq!(Category::from_name("ratelimit"), None);
    }

    #[test]
    fn never_retried_categories_have_never_retried_rows() {
        for row in TABLE {
            if row.category.is_never_retried() {
                assert_eq!(row.retry, DefaultRetry::Never, "{}", row.name);
            }
        }
    }
}
