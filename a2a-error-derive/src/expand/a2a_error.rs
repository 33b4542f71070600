//! The `A2aError` impl: codes, reasons, messages, retry, data, and the encoded error object.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{Ident, Type};

use super::*;
use crate::template::Piece;

impl Expander<'_> {
    pub(super) fn a2a_error_impl(&self) -> TokenStream {
        let p = &self.p;
        let ident = self.input.ident;
        let (impl_generics, ty_generics, _) = self.input.generics.split_for_impl();
        let mut extra = self.field_bounds(|field, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::A2aError)),
            Shape::Coded(_) if field.is_data() => Some(quote!(#p::DataField)),
            Shape::Coded(_) if field.attrs.retry_after.is_some() => {
                Some(quote!(#p::RetryDelayField))
            }
            _ => None,
        });
        extra.push(bounds::error_bound(self.input));
        let where_clause = bounds::where_clause(self.input, &extra);
        let delegate = |method: TokenStream| {
            move |binding: &Ident, ty: &Type| {
                let p = &self.p;
                let binding = at(binding, ty);
                quote_spanned!(ty.span()=> #p::A2aError::#method(#binding))
            }
        };

        let none = |_: &Variant, _: &Wire| None;
        let code = self.by_row_or_variant(
            |row| quote!(#row.code),
            none,
            |v, w| (v.pattern_any(), int(w.code)),
            delegate(quote!(code)),
        );
        let reason = self.by_row_or_variant(
            |row| quote!(#row.reason),
            none,
            |v, w| {
                let reason = &w.reason;
                (v.pattern_any(), quote!(#reason))
            },
            delegate(quote!(reason)),
        );
        // A wrapped error whose domain is the project's placeholder (StandardError's own
        // codes, a client's local failure) goes out in this enum's domain.
        let wrapper_domain = container_domain(self.input);
        let domain = self.by_row_or_variant(
            |row| quote!(#row.domain),
            none,
            |v, w| (v.pattern_any(), domain_tokens(&w.domain)),
            |binding, ty| {
                let binding = at(binding, ty);
                quote_spanned! {ty.span()=>
                    if #p::A2aError::has_placeholder_domain(#binding) {
                        #wrapper_domain
                    } else {
                        #p::A2aError::domain(#binding)
                    }
                }
            },
        );
        let public_message = self.by_row_or_variant(
            |row| quote!(#p::Cow::Borrowed(#row.message)),
            // The catalog has the message as written: the same text unless it interpolates
            // fields or escapes a brace.
            |v, w| {
                (static_text(w).as_deref() != Some(w.message.as_str()))
                    .then(|| public_message(p, v, w))
            },
            |v, w| public_message(p, v, w),
            delegate(quote!(public_message)),
        );
        let retry_hint = self.by_row_or_variant(
            |row| quote!(#row.retry),
            |v, w| w.retry_field.is_some().then(|| retry_hint(p, v, w)),
            |v, w| retry_hint(p, v, w),
            delegate(quote!(retry_hint)),
        );
        let category = self.by_row_or_variant(
            |row| quote!(#row.category),
            none,
            |v, w| (v.pattern_any(), category_tokens(w.category)),
            delegate(quote!(category)),
        );
        let http_status = self.by_row_or_variant(
            |row| quote!(#row.http_status),
            none,
            |v, w| {
                (
                    v.pattern_any(),
                    Literal::u16_unsuffixed(w.http).into_token_stream(),
                )
            },
            delegate(quote!(http_status)),
        );
        let write_data = self.write_data();
        let write_error_object = self.write_error_object();
        let transparent_only = self.transparent_only();
        let placeholder = self.placeholder_domain();
        let into_response = self.response_impl(&where_clause);
        let into_sdk = crate::sdk::sdk_impl(
            self.input,
            &where_clause,
            &quote!(#p::sdk_error(&error)),
            &quote!(#p::grpc_error(&error)),
        );

        quote! {
            #[automatically_derived]
            impl #impl_generics #p::A2aError for #ident #ty_generics #where_clause {
                fn code(&self) -> i32 { #code }
                fn reason(&self) -> &str { #reason }
                fn domain(&self) -> &str { #domain }
                fn public_message(&self) -> #p::Cow<'_, str> { #public_message }
                fn retry_hint(&self) -> #p::RetryHint { #retry_hint }
                fn category(&self) -> #p::Category { #category }
                fn http_status(&self) -> u16 { #http_status }
                fn write_data(&self, __sink: &mut #p::DataSink<'_>) { #write_data }
                #write_error_object
                #transparent_only
                #placeholder
            }

            #into_response
            #into_sdk
        }
    }

    /// The trait methods whose defaults are right for coded variants but must reach the inner
    /// error of a transparent one (its own gRPC name, its extra details such as a received
    /// BadRequest); emitted only when there is a transparent variant.
    pub(super) fn transparent_only(&self) -> TokenStream {
        if !self
            .rows
            .iter()
            .any(|(_, shape)| matches!(shape, Shape::Transparent(_)))
        {
            return TokenStream::new();
        }
        let p = &self.p;
        let grpc_status = self.per_variant(
            |v, _| (v.pattern_any(), quote!(#p::grpc_status(self))),
            |binding, ty| {
                let binding = at(binding, ty);
                quote_spanned!(ty.span()=> #p::A2aError::grpc_status(#binding))
            },
        );
        let write_extra_details = self.per_variant(
            |v, _| (v.pattern_any(), quote!({})),
            |binding, ty| {
                let binding = at(binding, ty);
                quote_spanned!(ty.span()=> #p::A2aError::write_extra_details(#binding, __out))
            },
        );
        quote! {
            fn grpc_status(&self) -> &'static str { #grpc_status }
            fn write_extra_details(&self, __out: &mut #p::Vec<u8>) { #write_extra_details }
        }
    }

    /// `has_placeholder_domain`, only for the runtime's own `StandardError`: its project
    /// codes say `a2a-error` until an application's enum wraps them.
    pub(super) fn placeholder_domain(&self) -> TokenStream {
        let placeholder: Vec<TokenStream> = self
            .rows
            .iter()
            .filter_map(|(variant, shape)| match shape {
                Shape::Coded(wire)
                    if matches!(&wire.domain, Domain::Literal(d) if d == PROJECT_DOMAIN) =>
                {
                    Some(variant.pattern_any())
                }
                _ => None,
            })
            .collect();
        if placeholder.is_empty() {
            return TokenStream::new();
        }
        let p = &self.p;
        quote! {
            fn has_placeholder_domain(&self) -> bool {
                #p::matches!(self, #(#placeholder)|*)
            }
        }
    }

    /// `write_data`: an arm for each variant with data fields and each transparent one.
    pub(super) fn write_data(&self) -> TokenStream {
        let p = &self.p;
        let arms: Vec<TokenStream> = self
            .rows
            .iter()
            .filter_map(|(v, shape)| match shape {
                Shape::Coded(_) if v.has_data() => {
                    let pattern = v.pattern_binding(|f| f.is_data());
                    let fields = v.fields.iter().filter(|f| f.is_data()).map(|f| {
                        let key = f.data_key().unwrap_or_default();
                        let binding = at(&f.binding, f.ty);
                        // Spanned at the field, so a type that is not Serialize is reported
                        // there.
                        let ty = f.ty;
                        quote_spanned!(ty.span()=> (#p::data_field::<#ty>().write)(__sink, #key, #binding);)
                    });
                    Some(quote!(#pattern => { #(#fields)* },))
                }
                Shape::Transparent(field) => {
                    let pattern = v.pattern();
                    let binding = at(&field.binding, field.ty);
                    Some(quote_spanned!(field.ty.span()=> #pattern => #p::A2aError::write_data(#binding, __sink),))
                }
                _ => None,
            })
            .collect();
        self.match_some(&arms, quote!({}))
    }

    /// Variants whose bytes never change apart from their data fields are encoded once;
    /// transparent ones delegate.
    pub(super) fn write_error_object(&self) -> TokenStream {
        if self.all_coded() {
            return self.write_error_object_by_row();
        }
        let p = &self.p;
        let mut arms = Vec::new();
        let mut rest = false;
        for (variant, shape) in &self.rows {
            match shape {
                Shape::Coded(wire) if wire.is_fixed() => {
                    let pattern = variant.pattern_any();
                    let write = match variant.has_data() {
                        false => quote!(write),
                        true => quote!(write_around),
                    };
                    arms.push(quote! {
                        #pattern => {
                            static __CACHE: #p::EncodedCache = #p::EncodedCache::new();
                            __CACHE.#write(self, __profile, __out)
                        }
                    });
                }
                Shape::Transparent(field) => {
                    // Sent as it is, unless this enum gives it its own domain: then through
                    // the encoder, which asks `self` for the domain.
                    let pattern = variant.pattern();
                    let binding = at(&field.binding, field.ty);
                    arms.push(quote_spanned! {field.ty.span()=>
                        #pattern => if #p::A2aError::has_placeholder_domain(#binding) {
                            #p::write_error_object(self, __profile, __out)
                        } else {
                            #p::A2aError::write_error_object(#binding, __profile, __out)
                        },
                    });
                }
                _ => rest = true,
            }
        }
        if arms.is_empty() {
            return TokenStream::new();
        }
        if rest {
            arms.push(quote!(_ => #p::write_error_object(self, __profile, __out),));
        }
        quote! {
            fn write_error_object(&self, __profile: #p::WireProfile, __out: &mut #p::Vec<u8>) {
                match self { #(#arms)* }
            }
        }
    }

    /// [`Self::write_error_object`] with every variant coded: one array of caches, indexed
    /// by kind, for the variants whose bytes never change apart from their data fields; a
    /// match only for those that do (an interpolated message, a delay in a field).
    pub(super) fn write_error_object_by_row(&self) -> TokenStream {
        let p = &self.p;
        // The cache is filled from the catalog row, whose message is the template as written:
        // a variant whose public message differs from it (an escaped brace) is encoded whole.
        // Those with data fields have them written in between; the rest are copied whole.
        let mut changing = Vec::new();
        let mut around = Vec::new();
        for (variant, shape) in &self.rows {
            match shape {
                Shape::Coded(wire)
                    if wire.is_fixed()
                        && static_text(wire).as_deref() == Some(wire.message.as_str()) =>
                {
                    if variant.has_data() {
                        around.push(variant.pattern_any());
                    }
                }
                _ => changing.push(variant.pattern_any()),
            }
        }
        let count = self.rows.len();
        if changing.len() == count {
            return TokenStream::new();
        }
        let whole = quote!(__CACHES[__row].write_row(__spec, __profile, __out));
        let filled = quote!(__CACHES[__row].write_row_around(__spec, self, __profile, __out));
        let cached = match (around.is_empty(), around.len() + changing.len() == count) {
            (true, _) => whole,
            (false, true) => filled,
            (false, false) => quote! {
                match self {
                    #(#around)|* => #filled,
                    _ => #whole,
                }
            },
        };
        let cached = quote! {{
            let __row = <Self as #p::HasKind>::kind(self) as usize;
            let __spec = &<Self as #p::Catalog>::CATALOG[__row];
            #cached
        }};
        let body = if changing.is_empty() {
            cached
        } else {
            quote! {
                match self {
                    #(#changing)|* => #p::write_error_object(self, __profile, __out),
                    _ => #cached,
                }
            }
        };
        quote! {
            fn write_error_object(&self, __profile: #p::WireProfile, __out: &mut #p::Vec<u8>) {
                static __CACHES: [#p::EncodedCache; #count] =
                    [const { #p::EncodedCache::new() }; #count];
                #body
            }
        }
    }
}

/// The public message of a variant that interpolates no field.
pub(super) fn static_text(wire: &Wire) -> Option<String> {
    wire.pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => Some(text.as_str()),
            Piece::Arg { .. } => None,
        })
        .collect()
}

/// The `retry_hint` arm of a coded variant: its fixed advice, or its `retry_after` field's.
pub(super) fn retry_hint(p: &TokenStream, v: &Variant, w: &Wire) -> (TokenStream, TokenStream) {
    let Some(field) = w.retry_field else {
        return (v.pattern_any(), retry_tokens(w.retry));
    };
    let binding = &field.binding;
    let fallback = retry_tokens(w.retry);
    let pattern = v.pattern_binding(|f| f.binding == *binding);
    let spanned = at(binding, field.ty);
    let to_delay = quote_spanned! {field.ty.span()=>
        #p::RetryDelayField::to_delay(#spanned)
    };
    let body = quote! {
        match #to_delay {
            #p::Some(__delay) => #p::RetryHint::After(__delay),
            #p::None => #fallback,
        }
    };
    (pattern, body)
}

pub(super) fn public_message(
    p: &TokenStream,
    variant: &Variant,
    wire: &Wire,
) -> (TokenStream, TokenStream) {
    let has_args = wire.pieces.iter().any(|p| matches!(p, Piece::Arg { .. }));
    if !has_args {
        let text: String = wire
            .pieces
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.as_str(),
                Piece::Arg { .. } => "",
            })
            .collect();
        return (variant.pattern_any(), quote!(#p::Cow::Borrowed(#text)));
    }
    let mut format = String::new();
    let mut args = Vec::new();
    let mut used = Vec::new();
    for piece in &wire.pieces {
        match piece {
            Piece::Text(text) => format.push_str(&text.replace('{', "{{").replace('}', "}}")),
            Piece::Arg { name, spec } => {
                let field = variant.fields.iter().find(|f| &f.template_name() == name);
                if let Some(field) = field {
                    let arg = format_ident!("__arg{}", args.len());
                    format.push_str(&format!("{{{arg}{spec}}}"));
                    let binding = &field.binding;
                    args.push(quote!(#arg = #binding));
                    used.push(field.binding.clone());
                }
            }
        }
    }
    let pattern = variant.pattern_binding(|f| used.contains(&f.binding));
    (
        pattern,
        quote!(#p::Cow::Owned(#p::format!(#format, #(#args),*))),
    )
}
