//! `#[a2a(...)]` parsing. Every value keeps its span so errors point at the attribute.

use a2a_error_codes::{CodeRow, TABLE};
use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned as _;
use syn::{Attribute, Expr, ExprLit, ExprUnary, Lit, LitStr, UnOp};

use crate::case::{is_upper_snake, nearest};
use crate::ctxt::Ctxt;

/// An attribute key, spelled once.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Symbol(pub &'static str);

pub const A2A: Symbol = Symbol("a2a");
// Container keys (on the enum, or on the struct).
pub const KIND: Symbol = Symbol("kind");
pub const CRATE: Symbol = Symbol("crate");
pub const INTO_RESPONSE: Symbol = Symbol("into_response");
// Variant keys (on a struct they go on the struct).
pub const CODE: Symbol = Symbol("code");
pub const MESSAGE: Symbol = Symbol("message");
pub const REASON: Symbol = Symbol("reason");
pub const DOMAIN: Symbol = Symbol("domain");
pub const RETRYABLE: Symbol = Symbol("retryable");
pub const RETRY_AFTER: Symbol = Symbol("retry_after");
pub const CATEGORY: Symbol = Symbol("category");
pub const HTTP: Symbol = Symbol("http");
pub const TRANSPARENT: Symbol = Symbol("transparent");
pub const DOWNSTREAM: Symbol = Symbol("downstream");
// Field keys.
pub const DATA: Symbol = Symbol("data");
pub const RENAME: Symbol = Symbol("rename");
pub const DEFAULT: Symbol = Symbol("default");

const ENUM_KEYS: &[Symbol] = &[DOMAIN, KIND, CRATE, INTO_RESPONSE];
/// What a struct takes besides the variant keys.
const STRUCT_KEYS: &[Symbol] = &[CRATE, INTO_RESPONSE];
const VARIANT_KEYS: &[Symbol] = &[
    CODE,
    MESSAGE,
    REASON,
    DOMAIN,
    RETRYABLE,
    RETRY_AFTER,
    CATEGORY,
    HTTP,
    TRANSPARENT,
    DOWNSTREAM,
];
const FIELD_KEYS: &[Symbol] = &[DATA, RETRY_AFTER, DEFAULT];

/// Where an `#[a2a(...)]` list stands, which decides the keys it may hold.
#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Position {
    Enum,
    Variant,
    Struct,
}

impl Position {
    fn keys(self) -> Vec<Symbol> {
        match self {
            Position::Enum => ENUM_KEYS.to_vec(),
            Position::Variant => VARIANT_KEYS.to_vec(),
            // A struct is one variant that is also the container.
            Position::Struct => [VARIANT_KEYS, STRUCT_KEYS].concat(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Position::Enum => "an enum",
            Position::Variant => "a variant",
            Position::Struct => "a struct",
        }
    }
}

/// A value and the span of the attribute that gave it.
#[derive(Clone)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

/// A code as written: an integer literal, or a name from `a2a_error::code`.
#[derive(Copy, Clone)]
pub enum CodeValue {
    Literal(i32),
    Named(&'static CodeRow),
}

impl CodeValue {
    pub fn code(self) -> i32 {
        match self {
            CodeValue::Literal(code) => code,
            CodeValue::Named(row) => row.code,
        }
    }
}

/// The attributes of an enum, a variant or a struct.
#[derive(Default)]
pub struct ItemAttrs {
    pub kind: Option<Spanned<syn::Ident>>,
    /// `crate = "..."`: the path of a renamed `a2a-error` dependency.
    pub krate: Option<Spanned<syn::Path>>,
    /// `into_response = false`: the user writes their own axum `IntoResponse`.
    pub into_response: Option<Spanned<bool>>,
    pub code: Option<Spanned<CodeValue>>,
    /// Set when `code` was written, even with a value that did not parse (already reported).
    pub code_written: bool,
    pub message: Option<Spanned<LitStr>>,
    pub reason: Option<Spanned<String>>,
    pub domain: Option<Spanned<String>>,
    pub retryable: Option<Spanned<bool>>,
    pub retry_after: Option<Spanned<u64>>,
    pub category: Option<Spanned<a2a_error_codes::Category>>,
    pub http: Option<Spanned<u16>>,
    pub transparent: Option<Span>,
    /// `downstream`: transparent over a client's error, decoded only from downstream failures.
    pub downstream: Option<Span>,
}

/// The attributes of a field.
#[derive(Default)]
pub struct FieldAttrs {
    /// `data`, with its `rename` if any.
    pub data: Option<Spanned<Option<String>>>,
    pub retry_after: Option<Span>,
    /// `default`: not on the wire; the client rebuilds it with `Default::default()`.
    pub default: Option<Span>,
}

fn set<T>(cx: &Ctxt, slot: &mut Option<Spanned<T>>, key: Symbol, span: Span, value: T) {
    if slot.is_some() {
        cx.error(span, format!("duplicate a2a attribute `{}`", key.0));
    } else {
        *slot = Some(Spanned { value, span });
    }
}

fn set_flag(cx: &Ctxt, slot: &mut Option<Span>, key: Symbol, span: Span) {
    if slot.is_some() {
        cx.error(span, format!("duplicate a2a attribute `{}`", key.0));
    } else {
        *slot = Some(span);
    }
}

fn is(meta: &ParseNestedMeta, key: Symbol) -> bool {
    meta.path.is_ident(key.0)
}

/// Parses the `#[a2a(...)]` lists of an enum, variant or struct.
pub fn item(cx: &Ctxt, attrs: &[Attribute], position: Position) -> ItemAttrs {
    let mut out = ItemAttrs::default();
    let allowed = position.keys();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident(A2A.0)) {
        let result = attr.parse_nested_meta(|meta| {
            let span = meta.path.span();
            let key = allowed.iter().copied().find(|key| is(&meta, *key));
            match key {
                Some(DOMAIN) => {
                    let lit: LitStr = meta.value()?.parse()?;
                    if lit.value().is_empty() {
                        cx.error(lit.span(), "`domain` must not be empty");
                    }
                    set(cx, &mut out.domain, DOMAIN, span, lit.value());
                }
                Some(KIND) => {
                    let lit: LitStr = meta.value()?.parse()?;
                    match syn::parse_str::<syn::Ident>(&lit.value()) {
                        Ok(ident) => {
                            let ident = syn::Ident::new(&ident.to_string(), lit.span());
                            set(cx, &mut out.kind, KIND, span, ident);
                        }
                        Err(_) => cx.error(
                            lit.span(),
                            "`kind` must be a Rust type name, e.g. kind = \"BillingErrorKind\"",
                        ),
                    }
                }
                Some(CRATE) => {
                    let lit: LitStr = meta.value()?.parse()?;
                    match lit.parse::<syn::Path>() {
                        Ok(path) => set(cx, &mut out.krate, CRATE, span, path),
                        Err(_) => cx.error(
                            lit.span(),
                            "`crate` must be a path, e.g. crate = \"::my_a2a_error\" for a \
                             dependency renamed in Cargo.toml",
                        ),
                    }
                }
                Some(INTO_RESPONSE) => {
                    let lit: syn::LitBool = meta.value().and_then(|v| v.parse()).map_err(|e| {
                        syn::Error::new(
                            e.span(),
                            "`into_response` takes a bool: into_response = false leaves the \
                             axum `IntoResponse` impl to you",
                        )
                    })?;
                    set(cx, &mut out.into_response, INTO_RESPONSE, span, lit.value);
                }
                Some(CODE) => {
                    out.code_written = true;
                    let expr: Expr = meta.value()?.parse()?;
                    if let Some(code) = parse_code(cx, &expr) {
                        set(cx, &mut out.code, CODE, span, code);
                    }
                }
                Some(MESSAGE) => {
                    let lit: LitStr = meta.value()?.parse()?;
                    set(cx, &mut out.message, MESSAGE, span, lit);
                }
                Some(REASON) => {
                    let lit: LitStr = meta.value()?.parse()?;
                    if !is_upper_snake(&lit.value()) {
                        cx.error(
                            lit.span(),
                            "`reason` must be UPPER_SNAKE_CASE (A-Z, 0-9, _; at most 63 \
                             characters), e.g. reason = \"LLM_UNAVAILABLE\"",
                        );
                    }
                    set(cx, &mut out.reason, REASON, span, lit.value());
                }
                Some(RETRYABLE) => {
                    let value = if meta.input.peek(syn::Token![=]) {
                        let lit: syn::LitBool = meta.value()?.parse()?;
                        lit.value
                    } else {
                        true
                    };
                    set(cx, &mut out.retryable, RETRYABLE, span, value);
                }
                Some(RETRY_AFTER) => {
                    let lit: syn::LitInt = meta.value().and_then(|v| v.parse()).map_err(|e| {
                        syn::Error::new(
                            e.span(),
                            "`retry_after` takes whole seconds, e.g. retry_after = 10; for a \
                             delay per value put #[a2a(retry_after)] on a Duration field",
                        )
                    })?;
                    let seconds = lit.base10_parse::<u64>()?;
                    set(cx, &mut out.retry_after, RETRY_AFTER, span, seconds);
                }
                Some(CATEGORY) => {
                    let lit: LitStr = meta.value()?.parse()?;
                    let names = a2a_error_codes::Category::ALL.map(|c| c.as_str());
                    match a2a_error_codes::Category::from_name(&lit.value()) {
                        Some(category) => set(cx, &mut out.category, CATEGORY, span, category),
                        None => cx.error(
                            lit.span(),
                            format!(
                                "unknown category `{}`{}; expected one of: {}",
                                lit.value(),
                                did_you_mean(nearest(&lit.value(), names)),
                                names.join(", ")
                            ),
                        ),
                    }
                }
                Some(HTTP) => {
                    let lit: syn::LitInt = meta.value()?.parse()?;
                    match lit.base10_parse::<u16>() {
                        Ok(status @ 100..=599) => set(cx, &mut out.http, HTTP, span, status),
                        _ => cx.error(lit.span(), "`http` must be an HTTP status, 100..=599"),
                    }
                }
                Some(TRANSPARENT) => set_flag(cx, &mut out.transparent, TRANSPARENT, span),
                Some(DOWNSTREAM) => set_flag(cx, &mut out.downstream, DOWNSTREAM, span),
                _ => {
                    // Report, skip its value and go on, so the keys after it still count.
                    cx.syn_error(unknown_key(&meta, position, &allowed));
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    out
}

/// Parses the `#[a2a(...)]` lists of a field.
pub fn field(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident(A2A.0)) {
        let result = attr.parse_nested_meta(|meta| {
            let span = meta.path.span();
            if is(&meta, DATA) {
                let mut rename = None;
                if meta.input.peek(syn::token::Paren) {
                    meta.parse_nested_meta(|inner| {
                        if inner.path.is_ident(RENAME.0) {
                            let lit: LitStr = inner.value()?.parse()?;
                            if lit.value().is_empty() {
                                cx.error(lit.span(), "`rename` must not be empty");
                            }
                            if rename.is_some() {
                                cx.error(inner.path.span(), "duplicate a2a attribute `rename`");
                            }
                            rename = Some(lit.value());
                            Ok(())
                        } else {
                            Err(inner.error(format!(
                                "unknown a2a attribute `{}` in `data(...)`; expected \
                                 `data(rename = \"...\")`",
                                path_name(&inner.path)
                            )))
                        }
                    })?;
                }
                set(cx, &mut out.data, DATA, span, rename);
            } else if is(&meta, RETRY_AFTER) {
                if meta.input.peek(syn::Token![=]) {
                    return Err(meta.error(
                        "on a field, `retry_after` takes no value: the field's value is the \
                         delay; for a fixed delay put `retry_after = SECS` on the variant",
                    ));
                }
                set_flag(cx, &mut out.retry_after, RETRY_AFTER, span);
            } else if is(&meta, DEFAULT) {
                if meta.input.peek(syn::Token![=]) {
                    return Err(meta.error(
                        "`default` takes no value: the field is rebuilt with \
                         `Default::default()` on the client",
                    ));
                }
                set_flag(cx, &mut out.default, DEFAULT, span);
            } else {
                cx.syn_error(unknown_field_key(&meta));
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    out
}

/// Consumes `= value` or `(...)` after an unknown key.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

fn parse_code(cx: &Ctxt, expr: &Expr) -> Option<CodeValue> {
    let int = |lit: &syn::LitInt, negative: bool| -> Option<i32> {
        let magnitude = lit.base10_parse::<i64>().ok()?;
        i32::try_from(if negative { -magnitude } else { magnitude }).ok()
    };
    let literal = match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => Some(int(lit, false)),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(lit), ..
            }) => Some(int(lit, true)),
            _ => None,
        },
        _ => None,
    };
    if let Some(code) = literal {
        return match code {
            Some(code) => Some(CodeValue::Literal(code)),
            None => {
                cx.error_spanned_by(
                    expr,
                    "`code` must fit in an i32 (JSON-RPC codes are integers)",
                );
                None
            }
        };
    }
    let Expr::Path(path) = expr else {
        cx.error_spanned_by(
            expr,
            "`code` must be an integer literal (code = -32010) or a name from a2a_error::code \
             (code = TASK_NOT_FOUND)",
        );
        return None;
    };
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let name = segments.last().map(String::as_str).unwrap_or_default();
    // `TASK_NOT_FOUND`, `code::TASK_NOT_FOUND`, `a2a_error::code::TASK_NOT_FOUND`.
    let names_table = segments.len() == 1 || segments[segments.len() - 2] == "code";
    match a2a_error_codes::by_name(name) {
        Some(row) if names_table => return Some(CodeValue::Named(row)),
        _ => {}
    }
    let suggestion = nearest(name, TABLE.iter().map(|row| row.name));
    let message = if names_table && suggestion.is_some() {
        format!(
            "no code named `{name}` in a2a_error::code{}",
            did_you_mean(suggestion)
        )
    } else {
        format!(
            "`{}` is not a name from a2a_error::code, and a path to your own const can't be \
             checked at expansion time (duplicates, reserved range); write the integer literal \
             instead, e.g. code = -32010{}",
            segments.join("::"),
            suggestion.map_or(String::new(), |s| format!(", or the table's `{s}`"))
        )
    };
    cx.error_spanned_by(expr, message);
    None
}

fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion.map_or(String::new(), |s| format!("; did you mean `{s}`?"))
}

fn unknown_key(meta: &ParseNestedMeta, position: Position, allowed: &[Symbol]) -> syn::Error {
    let name = path_name(&meta.path);
    let elsewhere = if FIELD_KEYS.iter().any(|k| k.0 == name) && name != RETRY_AFTER.0 {
        format!("; `{name}` goes on a field")
    } else if position == Position::Enum && VARIANT_KEYS.iter().any(|k| k.0 == name) {
        format!("; `{name}` goes on each variant")
    } else if position == Position::Variant && ENUM_KEYS.iter().any(|k| k.0 == name) {
        format!("; `{name}` goes on the enum")
    } else {
        did_you_mean(nearest(&name, allowed.iter().map(|k| k.0)))
    };
    let list: Vec<&str> = allowed.iter().map(|k| k.0).collect();
    meta.error(format!(
        "unknown a2a attribute `{name}` on {}{elsewhere}; expected one of: {}",
        position.name(),
        list.join(", ")
    ))
}

fn unknown_field_key(meta: &ParseNestedMeta) -> syn::Error {
    let name = path_name(&meta.path);
    let elsewhere = if VARIANT_KEYS.iter().any(|k| k.0 == name) {
        format!("; `{name}` goes on the variant (or the struct)")
    } else {
        did_you_mean(nearest(&name, FIELD_KEYS.iter().map(|k| k.0)))
    };
    meta.error(format!(
        "unknown a2a attribute `{name}` on a field{elsewhere}; expected one of: data, \
         data(rename = \"...\"), retry_after, default"
    ))
}
