//! The code table: every JSON-RPC, A2A and project code with its reason, default public
//! message, HTTP and gRPC status, category and default retry.
//!
//! The consts are what `#[a2a(code = NAME)]` accepts. The table itself lives in the tiny
//! `a2a-error-codes` crate so the derive reads the very same rows at expansion time.

pub use a2a_error_codes::{
    AGENT_UNAVAILABLE, AUTH_REQUIRED, CONTENT_TOO_LARGE, CONTENT_TYPE_NOT_SUPPORTED, CodeRow,
    DEADLINE_EXCEEDED, DEPENDENCY_REJECTED, DEPENDENCY_UNAVAILABLE, DOWNSTREAM_FAILED,
    DefaultRetry, EXTENDED_AGENT_CARD_NOT_CONFIGURED, EXTENSION_SUPPORT_REQUIRED,
    INSUFFICIENT_SCOPE, INTERNAL_ERROR, INVALID_AGENT_RESPONSE, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND, MODEL_QUOTA_EXHAUSTED, MODEL_REJECTED, MODEL_STREAM_INTERRUPTED,
    MODEL_UNAVAILABLE, Origin, PARSE_ERROR, PUSH_NOTIFICATION_NOT_SUPPORTED, RATE_LIMITED,
    SERVER_DEFINED, SKILL_NOT_FOUND, SPEC_DOMAIN, TABLE, TASK_NOT_CANCELABLE, TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION, VERSION_NOT_SUPPORTED, code_for_http, lookup,
};

/// Which edition of the A2A HTTP/gRPC status mapping to speak.
///
/// v1.0.1 is the default everywhere. v1.0.0 mapped a few codes differently (409, 415, 502,
/// `UNIMPLEMENTED`); servers and clients that talk to old peers can select it. It is a setting
/// of a server or client, not of an error.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum StatusMapping {
    /// The A2A v1.0.1 mapping (current).
    #[default]
    V1_0_1,
    /// The A2A v1.0.0 mapping, for old peers.
    V1_0_0,
}

impl StatusMapping {
    /// The HTTP status to send for an error with `code` whose own status is `status`.
    ///
    /// Only a table code still at its v1.0.1 default is remapped; an explicit status wins.
    pub fn http_status(self, code: i32, status: u16) -> u16 {
        match (self, lookup(code)) {
            (StatusMapping::V1_0_0, Some(row)) if row.http_status == status => {
                row.http_status_v1_0_0
            }
            _ => status,
        }
    }

    /// The gRPC status name for an error with `code` and HTTP status `status`: the table's
    /// name for the code when `status` is the code's own status under this mapping (or under
    /// v1.0.1, whose status a v1.0.0 server keeps for codes it did not remap), else the name
    /// conventionally paired with `status`.
    pub fn grpc_status(self, code: i32, status: u16) -> &'static str {
        match (self, lookup(code)) {
            (StatusMapping::V1_0_1, Some(row)) if row.http_status == status => row.grpc_status,
            (StatusMapping::V1_0_0, Some(row))
                if row.http_status_v1_0_0 == status || row.http_status == status =>
            {
                row.grpc_status_v1_0_0
            }
            _ => a2a_error_codes::grpc_status_for_http(status),
        }
    }
}

/// The row of a code this crate names itself. Every such code is in the table; one outside
/// it, which only a bug here could pass, reads as INTERNAL_ERROR rather than panicking.
pub fn row(code: i32) -> &'static CodeRow {
    const INTERNAL: &CodeRow = match lookup(INTERNAL_ERROR) {
        Some(row) => row,
        None => panic!("INTERNAL_ERROR is in the table"),
    };
    lookup(code).unwrap_or(INTERNAL)
}

/// The reason a code's own errors carry (`"TASK_NOT_FOUND"`), if the table knows the code.
pub fn default_reason(code: i32) -> Option<&'static str> {
    lookup(code).map(|row| row.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_in_both_mappings() {
        for row in TABLE {
            let new = StatusMapping::V1_0_1;
            let old = StatusMapping::V1_0_0;
            assert_eq!(new.http_status(row.code, row.http_status), row.http_status);
            assert_eq!(
                new.grpc_status(row.code, row.http_status),
                row.grpc_status,
                "{}",
                row.name
            );
            let old_status = old.http_status(row.code, row.http_status);
            assert_eq!(old_status, row.http_status_v1_0_0, "{}", row.name);
            assert_eq!(
                old.grpc_status(row.code, old_status),
                row.grpc_status_v1_0_0,
                "{}",
                row.name
            );
        }
        // The rows the issue found wrong under v1.0.0.
        let old = StatusMapping::V1_0_0;
        assert_eq!(
            old.grpc_status(TASK_NOT_CANCELABLE, 409),
            "FAILED_PRECONDITION"
        );
        for code in [
            PUSH_NOTIFICATION_NOT_SUPPORTED,
            UNSUPPORTED_OPERATION,
            VERSION_NOT_SUPPORTED,
        ] {
            assert_eq!(old.grpc_status(code, 400), "UNIMPLEMENTED");
        }
        assert_eq!(old.grpc_status(INVALID_AGENT_RESPONSE, 502), "INTERNAL");
    }

    #[test]
    fn v1_0_0_remaps_only_table_defaults() {
        let old = StatusMapping::V1_0_0;
        assert_eq!(old.http_status(TASK_NOT_CANCELABLE, 400), 409);
        assert_eq!(old.http_status(CONTENT_TYPE_NOT_SUPPORTED, 400), 415);
        assert_eq!(old.http_status(INVALID_AGENT_RESPONSE, 500), 502);
        assert_eq!(old.grpc_status(UNSUPPORTED_OPERATION, 400), "UNIMPLEMENTED");
        // An explicit status is the application's choice and stays.
        assert_eq!(old.http_status(TASK_NOT_CANCELABLE, 422), 422);
        assert_eq!(
            StatusMapping::V1_0_1.http_status(TASK_NOT_CANCELABLE, 400),
            400
        );
        assert_eq!(
            StatusMapping::V1_0_1.grpc_status(-32010, 503),
            "UNAVAILABLE"
        );
    }
}
