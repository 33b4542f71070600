//! Checks that span several attributes: missing codes, ambiguous (code, reason) pairs, the
//! reserved range, leaking messages, contradicting retry advice, malformed data fields.

use std::collections::HashMap;

use a2a_error_codes::{LEGACY_RESERVED_KEYS as LEGACY_KEYS, is_reserved_undefined};

use crate::ast::{Input, Variant};
use crate::ctxt::Ctxt;
use crate::template::Piece;
use crate::wire::{Retry, Shape};

pub fn check(cx: &Ctxt, input: &Input, shapes: &[Shape]) {
    let mut seen: HashMap<(i32, &str), &Variant> = HashMap::new();
    for (variant, shape) in input.variants.iter().zip(shapes) {
        check_fields(cx, variant);
        let attrs = input.variant_attrs(variant);
        match shape {
            Shape::Missing if attrs.downstream.is_some() && attrs.transparent.is_none() => cx
                .error(
                    attrs.downstream.unwrap_or(variant.span),
                    format!(
                        "#[a2a(downstream)] needs exactly one field (the client's error: \
                     a2a_error::client::ClientError<E> or Downstream<E>), but `{}` has {}",
                        variant.ident,
                        variant.fields.len()
                    ),
                ),
            Shape::Missing if attrs.transparent.is_some() => cx.error(
                attrs.transparent.unwrap_or(variant.span),
                format!(
                    "#[a2a(transparent)] needs exactly one field (the inner A2aError), but `{}` \
                     has {}",
                    variant.ident,
                    variant.fields.len()
                ),
            ),
            // A `code` that did not parse has been reported already.
            Shape::Missing if attrs.code_written => {}
            Shape::Missing => cx.error(
                variant.span,
                format!(
                    "`{}` has no A2A error code: add #[a2a(code = ...)] with a name from \
                     a2a_error::code (e.g. code = INTERNAL_ERROR) or an integer (e.g. code = \
                     -32010), or #[a2a(transparent)] to delegate to a single inner A2aError",
                    variant.ident
                ),
            ),
            Shape::Transparent(field) => {
                if let (Some(_), Some(span)) = (attrs.transparent, attrs.downstream) {
                    cx.error(
                        span,
                        "`downstream` is `transparent` for a client's error, decoded only from \
                         downstream failures: keep one of the two",
                    );
                }
                let others = [
                    attrs.code.as_ref().map(|a| ("code", a.span)),
                    attrs.message.as_ref().map(|a| ("message", a.span)),
                    attrs.reason.as_ref().map(|a| ("reason", a.span)),
                    attrs.domain.as_ref().map(|a| ("domain", a.span)),
                    attrs.retryable.as_ref().map(|a| ("retryable", a.span)),
                    attrs.retry_after.as_ref().map(|a| ("retry_after", a.span)),
                    attrs.category.as_ref().map(|a| ("category", a.span)),
                    attrs.http.as_ref().map(|a| ("http", a.span)),
                    field.attrs.data.as_ref().map(|a| ("data", a.span)),
                    field.attrs.retry_after.map(|span| ("retry_after", span)),
                ];
                for (name, span) in others.into_iter().flatten() {
                    cx.error(
                        span,
                        format!(
                            "`{name}` has no effect on a transparent variant: it takes \
                             everything from its inner error; remove `{name}` or remove \
                             `transparent`"
                        ),
                    );
                }
            }
            Shape::Coded(wire) => {
                if is_reserved_undefined(wire.code) {
                    cx.error(
                        wire.code_span,
                        format!(
                            "code {} is in the JSON-RPC reserved range -32768..=-32000 but is \
                             not a defined code; applications may use -32099..=-32000 (A2A \
                             uses -32001..=-32009) or any code outside the reserved range",
                            wire.code
                        ),
                    );
                }
                match seen.get(&(wire.code, wire.reason.as_str())) {
                    Some(first) => cx.error(
                        wire.code_span,
                        format!(
                            "`{}` and `{}` both have code {} with reason {}: the client \
                             mirror could not tell them apart; give one a distinct \
                             `reason = \"...\"`",
                            first.ident, variant.ident, wire.code, wire.reason
                        ),
                    ),
                    None => {
                        seen.insert((wire.code, wire.reason.as_str()), variant);
                    }
                }
                check_message(cx, input, variant, &wire.pieces);
                check_retry(cx, input, variant, wire.retry, wire.category);
            }
        }
    }
}

fn check_fields(cx: &Ctxt, variant: &Variant) {
    let mut keys: HashMap<String, ()> = HashMap::new();
    let mut retry_fields = 0;
    for field in &variant.fields {
        if let Some(span) = field.attrs.retry_after {
            retry_fields += 1;
            if retry_fields > 1 {
                cx.error(span, "only one field may be #[a2a(retry_after)]");
            }
        }
        if let Some(span) = field.attrs.default
            && (field.attrs.data.is_some() || field.attrs.retry_after.is_some())
        {
            cx.error(
                span,
                "`default` is for a field that does not travel; a `data` or `retry_after` \
                 field is rebuilt from the wire: remove one of the two",
            );
        }
        let Some(data) = &field.attrs.data else {
            continue;
        };
        match field.data_key() {
            None => cx.error(
                data.span,
                "a tuple field marked `data` needs a wire name: write \
                 #[a2a(data(rename = \"taskId\"))]",
            ),
            Some(key) if LEGACY_KEYS.contains(&key.as_str()) => cx.error(
                data.span,
                format!(
                    "data key `{key}` is reserved by the legacy wire profile (reason, domain, \
                     retryable, retryAfter); choose another with data(rename = \"...\")"
                ),
            ),
            Some(key) => {
                if keys.insert(key.clone(), ()).is_some() {
                    cx.error(
                        data.span,
                        format!(
                            "two data fields of `{}` have the wire key `{key}`; rename one with \
                             data(rename = \"...\")",
                            variant.ident
                        ),
                    );
                }
            }
        }
    }
}

fn check_message(cx: &Ctxt, input: &Input, variant: &Variant, pieces: &[Piece]) {
    let attrs = input.variant_attrs(variant);
    let Some(message) = &attrs.message else {
        return;
    };
    for piece in pieces {
        let Piece::Arg { name, .. } = piece else {
            continue;
        };
        let field = variant.fields.iter().find(|f| &f.template_name() == name);
        match field {
            None => cx.error(
                message.value.span(),
                format!(
                    "message refers to `{{{name}}}` but `{}` has no such field",
                    variant.ident
                ),
            ),
            Some(field) if !field.is_data() => cx.error(
                message.value.span(),
                format!(
                    "message interpolates `{name}`, which is not #[a2a(data)]: the public \
                     message may only show data fields, or internal detail would leak; mark \
                     the field #[a2a(data)] or take it out of the message"
                ),
            ),
            // A tuple data field without a rename is reported by check_fields.
            Some(_) => {}
        }
    }
}

fn check_retry(
    cx: &Ctxt,
    input: &Input,
    variant: &Variant,
    retry: Retry,
    category: a2a_error_codes::Category,
) {
    let attrs = input.variant_attrs(variant);
    let delay_span = attrs.retry_after.as_ref().map(|a| a.span).or_else(|| {
        variant
            .fields
            .iter()
            .find_map(|field| field.attrs.retry_after)
    });
    let retryable_false = attrs.retryable.as_ref().filter(|r| !r.value);
    if let (Some(span), Some(_)) = (delay_span, retryable_false) {
        cx.error(
            span,
            "`retry_after` contradicts `retryable = false`: a delay says retry later; remove \
             one of them",
        );
        return;
    }
    if retry != Retry::Never && category.is_never_retried() {
        let retryable = attrs.retryable.as_ref().map(|r| r.span);
        // Each fix named is one edit that compiles: no hint leads to a second error.
        let (span, what, fix) = match (delay_span, retryable) {
            (Some(span), _) => (span, "`retry_after`", "drop `retry_after`"),
            (None, Some(span)) => (span, "`retryable`", "drop `retryable`"),
            (None, None) => match &attrs.category {
                Some(c) => (
                    c.span,
                    "the code's default retry",
                    "add `retryable = false`",
                ),
                None => return,
            },
        };
        cx.error(
            span,
            format!(
                "{what} contradicts the `{cat}` category of `{name}`: {cat} errors are never \
                 retried; {fix}, or choose a retried category, e.g. category = \"transient\"",
                cat = category.as_str(),
                name = variant.ident,
            ),
        );
    }
}
