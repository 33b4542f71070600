//! `StandardError`: every code in the table as one enum, written with the derive itself.

use std::time::Duration;

use a2a_error_derive::A2aError;

// The attribute below must say the same; the table test checks it.

/// Every JSON-RPC, A2A and project error code as one enum, for servers that need no errors of
/// their own and as a `transparent` member of an application's error enum.
///
/// The project's own codes (`AuthRequired` … `DownstreamFailed`) belong to the application's
/// domain on the wire; here that domain is `a2a-error` unless the enum wrapping this one says
/// otherwise.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, A2aError)]
#[a2a(domain = "a2a-error", crate = "crate", into_response = false)]
#[non_exhaustive]
pub enum StandardError {
    /// -32700: invalid JSON was received.
    #[error("parse error")]
    #[a2a(code = PARSE_ERROR)]
    ParseError,
    /// -32600: the JSON is not a valid request object.
    #[error("invalid request")]
    #[a2a(code = INVALID_REQUEST)]
    InvalidRequest,
    /// -32601: no such method.
    #[error("method not found")]
    #[a2a(code = METHOD_NOT_FOUND)]
    MethodNotFound,
    /// -32602: the parameters do not fit the method.
    #[error("invalid params")]
    #[a2a(code = INVALID_PARAMS)]
    InvalidParams,
    /// -32603: an internal error; nothing about it is published.
    #[error("internal error")]
    #[a2a(code = INTERNAL_ERROR)]
    Internal,
    /// -32001: no task with this id.
    #[error("task {task_id:?} not found")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        /// The id that was asked for.
        #[a2a(data)]
        task_id: Option<String>,
    },
    /// -32002: the task cannot be canceled in its state.
    #[error("task not cancelable")]
    #[a2a(code = TASK_NOT_CANCELABLE)]
    TaskNotCancelable,
    /// -32003: push notifications are not supported.
    #[error("push notifications not supported")]
    #[a2a(code = PUSH_NOTIFICATION_NOT_SUPPORTED)]
    PushNotificationNotSupported,
    /// -32004: the operation is not supported.
    #[error("unsupported operation")]
    #[a2a(code = UNSUPPORTED_OPERATION)]
    UnsupportedOperation,
    /// -32005: incompatible content types.
    #[error("content type not supported")]
    #[a2a(code = CONTENT_TYPE_NOT_SUPPORTED)]
    ContentTypeNotSupported,
    /// -32006: the agent produced an invalid response.
    #[error("invalid agent response")]
    #[a2a(code = INVALID_AGENT_RESPONSE)]
    InvalidAgentResponse,
    /// -32007: no extended agent card is configured.
    #[error("extended agent card not configured")]
    #[a2a(code = EXTENDED_AGENT_CARD_NOT_CONFIGURED)]
    ExtendedAgentCardNotConfigured,
    /// -32008: the client must support a required extension.
    #[error("extension support required")]
    #[a2a(code = EXTENSION_SUPPORT_REQUIRED)]
    ExtensionSupportRequired,
    /// -32009: the requested A2A version is not served.
    #[error("version not supported")]
    #[a2a(code = VERSION_NOT_SUPPORTED)]
    VersionNotSupported,
    /// -32050: authentication is required.
    #[error("authentication required")]
    #[a2a(code = AUTH_REQUIRED)]
    AuthRequired,
    /// -32051: the credentials lack a scope.
    #[error("insufficient scope")]
    #[a2a(code = INSUFFICIENT_SCOPE)]
    InsufficientScope,
    /// -32052: rate limited; retry after the delay when one is given.
    #[error("rate limited")]
    #[a2a(code = RATE_LIMITED)]
    RateLimited {
        /// How long to wait before retrying.
        #[a2a(retry_after)]
        retry_after: Option<Duration>,
    },
    /// -32053: the agent is temporarily unavailable.
    #[error("agent unavailable")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    AgentUnavailable {
        /// How long to wait before retrying.
        #[a2a(retry_after)]
        retry_after: Option<Duration>,
    },
    /// -32054: a deadline ran out.
    #[error("deadline exceeded")]
    #[a2a(code = DEADLINE_EXCEEDED)]
    DeadlineExceeded,
    /// -32055: the request body is too large.
    #[error("content too large")]
    #[a2a(code = CONTENT_TOO_LARGE)]
    ContentTooLarge,
    /// -32056: no such skill.
    #[error("skill not found")]
    #[a2a(code = SKILL_NOT_FOUND)]
    SkillNotFound,
    /// -32057: a downstream agent failed.
    #[error("downstream agent failed")]
    #[a2a(code = DOWNSTREAM_FAILED)]
    DownstreamFailed,
    /// -32058: the model provider the agent calls is unavailable; retry after the delay when
    /// one is given.
    #[error("model unavailable")]
    #[a2a(code = MODEL_UNAVAILABLE)]
    ModelUnavailable {
        /// How long to wait before retrying.
        #[a2a(retry_after)]
        retry_after: Option<Duration>,
    },
    /// -32059: the model provider refused the agent's request.
    #[error("model rejected the request")]
    #[a2a(code = MODEL_REJECTED)]
    ModelRejected,
    /// -32060: a dependency the agent calls is unavailable; retry after the delay when one is
    /// given.
    #[error("dependency unavailable")]
    #[a2a(code = DEPENDENCY_UNAVAILABLE)]
    DependencyUnavailable {
        /// How long to wait before retrying.
        #[a2a(retry_after)]
        retry_after: Option<Duration>,
    },
    /// -32061: a dependency the agent calls refused its request.
    #[error("dependency rejected the request")]
    #[a2a(code = DEPENDENCY_REJECTED)]
    DependencyRejected,
    /// -32062: a model's streamed answer stopped after part of it was delivered; what was
    /// delivered stands, and asking again starts a new answer.
    #[error("model stream interrupted")]
    #[a2a(code = MODEL_STREAM_INTERRUPTED)]
    ModelStreamInterrupted,
    /// -32063: the agent's quota with its model provider is spent (a billing or spend
    /// budget, a daily limit); retry after the delay when the time it is renewed is known,
    /// else not.
    #[error("model quota exhausted")]
    #[a2a(code = MODEL_QUOTA_EXHAUSTED)]
    ModelQuotaExhausted {
        /// How long until the quota is renewed, when the provider said.
        #[a2a(retry_after)]
        retry_after: Option<Duration>,
    },
}

impl StandardError {
    /// The variant for `code` with no data, if the table knows the code.
    pub fn from_code(code: i32) -> Option<Self> {
        use crate::wire::code::*;
        Some(match code {
            PARSE_ERROR => StandardError::ParseError,
            INVALID_REQUEST => StandardError::InvalidRequest,
            METHOD_NOT_FOUND => StandardError::MethodNotFound,
            INVALID_PARAMS => StandardError::InvalidParams,
            INTERNAL_ERROR => StandardError::Internal,
            TASK_NOT_FOUND => StandardError::TaskNotFound { task_id: None },
            TASK_NOT_CANCELABLE => StandardError::TaskNotCancelable,
            PUSH_NOTIFICATION_NOT_SUPPORTED => StandardError::PushNotificationNotSupported,
            UNSUPPORTED_OPERATION => StandardError::UnsupportedOperation,
            CONTENT_TYPE_NOT_SUPPORTED => StandardError::ContentTypeNotSupported,
            INVALID_AGENT_RESPONSE => StandardError::InvalidAgentResponse,
            EXTENDED_AGENT_CARD_NOT_CONFIGURED => StandardError::ExtendedAgentCardNotConfigured,
            EXTENSION_SUPPORT_REQUIRED => StandardError::ExtensionSupportRequired,
            VERSION_NOT_SUPPORTED => StandardError::VersionNotSupported,
            AUTH_REQUIRED => StandardError::AuthRequired,
            INSUFFICIENT_SCOPE => StandardError::InsufficientScope,
            RATE_LIMITED => StandardError::RateLimited { retry_after: None },
            AGENT_UNAVAILABLE => StandardError::AgentUnavailable { retry_after: None },
            DEADLINE_EXCEEDED => StandardError::DeadlineExceeded,
            CONTENT_TOO_LARGE => StandardError::ContentTooLarge,
            SKILL_NOT_FOUND => StandardError::SkillNotFound,
            DOWNSTREAM_FAILED => StandardError::DownstreamFailed,
            MODEL_UNAVAILABLE => StandardError::ModelUnavailable { retry_after: None },
            MODEL_REJECTED => StandardError::ModelRejected,
            DEPENDENCY_UNAVAILABLE => StandardError::DependencyUnavailable { retry_after: None },
            DEPENDENCY_REJECTED => StandardError::DependencyRejected,
            MODEL_STREAM_INTERRUPTED => StandardError::ModelStreamInterrupted,
            MODEL_QUOTA_EXHAUSTED => StandardError::ModelQuotaExhausted { retry_after: None },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::code;
    use crate::wire::error::{A2aError as _, FromErrorObject};
    use a2a_error_core::Catalog;

    #[test]
    fn covers_the_whole_table_with_table_values() {
        assert_eq!(StandardError::CATALOG.len(), code::TABLE.len());
        for row in code::TABLE {
            let error = StandardError::from_code(row.code).unwrap();
            assert_eq!(error.code(), row.code);
            assert_eq!(error.reason(), row.reason);
            assert_eq!(error.public_message(), row.message);
            assert_eq!(error.http_status(), row.http_status);
            assert_eq!(error.grpc_status(), row.grpc_status);
            assert_eq!(error.category(), row.category);
            let domain = if row.origin.is_spec() {
                code::SPEC_DOMAIN
            } else {
                a2a_error_codes::PROJECT_DOMAIN
            };
            assert_eq!(error.domain(), domain);
            let object = error.to_error_object();
            assert_eq!(StandardError::from_error_object(&object), Some(error));
        }
    }
}
