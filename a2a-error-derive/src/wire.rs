//! What each variant looks like on the wire: the code table's defaults for its code, overridden
//! by its attributes.

use a2a_error_codes::{Category, DefaultRetry, SPEC_DOMAIN};
use proc_macro2::Span;

use crate::ast::{Field, Input, Variant};
use crate::attr::CodeValue;
use crate::case::upper_snake;
use crate::ctxt::Ctxt;
use crate::template::{self, Piece};

pub enum Domain {
    Literal(String),
    /// The user crate's package name, `env!("CARGO_PKG_NAME")`.
    Package,
}

#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Retry {
    Never,
    Backoff,
    After(u64),
}

pub struct Wire<'a> {
    pub code: i32,
    pub code_span: Span,
    pub reason: String,
    pub domain: Domain,
    /// The message as written (placeholders included), for the catalog.
    pub message: String,
    pub pieces: Vec<Piece>,
    /// The fixed retry; with a `retry_after` field, what applies when it holds no delay.
    pub retry: Retry,
    pub retry_field: Option<&'a Field<'a>>,
    pub category: Category,
    pub http: u16,
}

impl Wire<'_> {
    /// Whether the bytes of this variant never change apart from its data fields (its message
    /// is not interpolated, its delay is not a field), so they can be encoded once and its
    /// data fields written in between.
    pub fn is_fixed(&self) -> bool {
        self.retry_field.is_none()
            && self
                .pieces
                .iter()
                .all(|piece| matches!(piece, Piece::Text(_)))
    }
}

pub enum Shape<'a> {
    Coded(Box<Wire<'a>>),
    Transparent(&'a Field<'a>),
    /// No code and not transparent; reported by `valid`.
    Missing,
}

pub fn resolve<'a>(cx: &Ctxt, input: &Input, variant: &'a Variant<'a>) -> Shape<'a> {
    let attrs = input.variant_attrs(variant);
    if attrs.transparent.is_some() || attrs.downstream.is_some() {
        return match variant.transparent_field() {
            Some(field) => Shape::Transparent(field),
            None => Shape::Missing,
        };
    }
    let Some(code) = &attrs.code else {
        return Shape::Missing;
    };
    let row = match code.value {
        CodeValue::Named(row) => Some(row),
        CodeValue::Literal(code) => a2a_error_codes::lookup(code),
    };
    let reason = match (&attrs.reason, row) {
        (Some(reason), _) => reason.value.clone(),
        (None, Some(row)) => row.reason.to_owned(),
        (None, None) => upper_snake(&variant.ident.to_string()),
    };
    let domain = match (&attrs.domain, row, &input.attrs.domain) {
        (Some(domain), _, _) => Domain::Literal(domain.value.clone()),
        (None, Some(row), _) if row.origin.is_spec() && reason == row.reason => {
            Domain::Literal(SPEC_DOMAIN.to_owned())
        }
        (None, _, Some(domain)) => Domain::Literal(domain.value.clone()),
        (None, _, None) => Domain::Package,
    };
    let retry_field = variant
        .fields
        .iter()
        .find(|field| field.attrs.retry_after.is_some());
    let asks_retry = attrs.retryable.as_ref().is_some_and(|r| r.value)
        || attrs.retry_after.is_some()
        || retry_field.is_some();
    let category = match (&attrs.category, row) {
        (Some(category), _) => category.value,
        (None, Some(row)) => row.category,
        (None, None) if asks_retry => Category::Transient,
        (None, None) => Category::Unknown,
    };
    let retry = match (&attrs.retry_after, &attrs.retryable) {
        (Some(seconds), _) => Retry::After(seconds.value),
        (None, Some(retryable)) if retryable.value => Retry::Backoff,
        (None, Some(_)) => Retry::Never,
        // A delay field without one given: the code's own default (a code never retried
        // unless a delay is known stays never retried), else backoff.
        (None, None) if retry_field.is_some() => match row {
            Some(row) if row.retry == DefaultRetry::Never => Retry::Never,
            _ => Retry::Backoff,
        },
        (None, None) => match row {
            Some(row) if row.retry == DefaultRetry::Backoff => Retry::Backoff,
            Some(_) => Retry::Never,
            None if matches!(
                category,
                Category::Transient | Category::RateLimit | Category::Timeout
            ) =>
            {
                Retry::Backoff
            }
            None => Retry::Never,
        },
    };
    let http = match (&attrs.http, row) {
        (Some(http), _) => http.value,
        (None, Some(row)) => row.http_status,
        (None, None) => 500,
    };
    let message = match (&attrs.message, row) {
        (Some(message), _) => message.value.value(),
        (None, Some(row)) => row.message.to_owned(),
        (None, None) => category.default_message().to_owned(),
    };
    let pieces = match template::parse(&message) {
        Ok(pieces) => pieces,
        Err(error) => {
            let span = attrs
                .message
                .as_ref()
                .map_or(variant.span, |m| m.value.span());
            cx.error(span, error);
            Vec::new()
        }
    };
    Shape::Coded(Box::new(Wire {
        code: code.value.code(),
        code_span: code.span,
        reason,
        domain,
        message,
        pieces,
        retry,
        retry_field,
        category,
        http,
    }))
}
