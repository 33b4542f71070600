//! `ErrorSpec`: one row of a derived error's [`Catalog`], for docs and agent cards.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::error::{Category, RetryHint};

/// Every variant of an error type as it looks on the wire: `#[derive(A2aError)]` implements it
/// with one row per variant that has a code (transparent variants are described by their
/// inner type's catalog).
///
/// ```
/// use a2a_error::{Catalog, StandardError};
///
/// let rows = StandardError::CATALOG;
/// assert!(rows.iter().any(|row| row.reason == "TASK_NOT_FOUND"));
/// ```
pub trait Catalog {
    /// One row per variant with a code: code, reason, public message, retry, HTTP status.
    const CATALOG: &'static [ErrorSpec];
}

/// What one variant of a derived error looks like on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ErrorSpec {
    /// The variant's (or struct's) Rust name.
    pub name: &'static str,
    /// The JSON-RPC error code.
    pub code: i32,
    /// The ErrorInfo reason.
    pub reason: &'static str,
    /// The ErrorInfo domain.
    pub domain: &'static str,
    /// The public message; `{field}` placeholders stand for data fields.
    pub message: &'static str,
    /// The retry advice (a per-value `retry_after` field may refine `Backoff`).
    pub retry: RetryHint,
    /// The failure category.
    pub category: Category,
    /// The HTTP status (A2A v1.0.1 mapping).
    pub http_status: u16,
}

impl Serialize for ErrorSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let retry_after = self.retry.delay().map(|d| d.as_secs_f64());
        let mut row = serializer.serialize_struct("ErrorSpec", 9)?;
        row.serialize_field("name", self.name)?;
        row.serialize_field("code", &self.code)?;
        row.serialize_field("reason", self.reason)?;
        row.serialize_field("domain", self.domain)?;
        row.serialize_field("message", self.message)?;
        row.serialize_field("retryable", &self.retry.is_retryable())?;
        row.serialize_field("retryAfter", &retry_after)?;
        row.serialize_field("category", self.category.as_str())?;
        row.serialize_field("httpStatus", &self.http_status)?;
        row.end()
    }
}
