//! `BadRequest`: invalid parameters, with the offending field paths in a
//! `google.rpc.BadRequest` detail.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::code::{INVALID_PARAMS, SPEC_DOMAIN};
use crate::data::write_str;
use crate::error::BAD_REQUEST_TYPE;
use crate::error::{A2aError, Category, RetryHint};

/// One invalid field: its path in the request (`message.parts[0].text`) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldViolation {
    /// The path of the field in the request parameters.
    pub field: String,
    /// What is wrong with it.
    pub description: String,
}

/// INVALID_PARAMS (-32602) with field violations. The violations describe the caller's own
/// request, so they are published (as a `google.rpc.BadRequest` detail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest {
    /// The invalid fields.
    pub violations: Vec<FieldViolation>,
}

impl BadRequest {
    /// A bad request with one violation.
    pub fn field(field: impl Into<String>, description: impl Into<String>) -> Self {
        BadRequest {
            violations: vec![FieldViolation {
                field: field.into(),
                description: description.into(),
            }],
        }
    }
}

impl fmt::Display for BadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid params")?;
        for (i, v) in self.violations.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}{}: {}", v.field, v.description)?;
        }
        Ok(())
    }
}

impl std::error::Error for BadRequest {}

impl A2aError for BadRequest {
    fn code(&self) -> i32 {
        INVALID_PARAMS
    }
    fn reason(&self) -> &str {
        "INVALID_PARAMS"
    }
    fn domain(&self) -> &str {
        SPEC_DOMAIN
    }
    fn public_message(&self) -> Cow<'_, str> {
        Cow::Borrowed("Invalid parameters")
    }
    fn retry_hint(&self) -> RetryHint {
        RetryHint::Never
    }
    fn category(&self) -> Category {
        Category::Validation
    }
    fn http_status(&self) -> u16 {
        400
    }
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b",{\"@type\":\"");
        out.extend_from_slice(BAD_REQUEST_TYPE.as_bytes());
        out.extend_from_slice(b"\",\"fieldViolations\":[");
        for (i, violation) in self.violations.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"field\":");
            write_str(out, &violation.field);
            out.extend_from_slice(b",\"description\":");
            write_str(out, &violation.description);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ErrorObject;
    use serde_json::json;

    #[test]
    fn violations_travel_as_a_bad_request_detail() {
        let err = BadRequest::field("message.parts[0]", "missing field `text`");
        let obj: ErrorObject = err.to_error_object();
        assert_eq!(obj.reason(), Some("INVALID_PARAMS"));
        let detail = obj.detail("google.rpc.BadRequest").unwrap();
        assert_eq!(
            detail["fieldViolations"],
            json!([{"field": "message.parts[0]", "description": "missing field `text`"}])
        );
    }
}
