//! Code generation. Every path goes through `::a2a_error::__private`.

use proc_macro2::{Literal, Span, TokenStream, TokenTree};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{DeriveInput, Ident, Type};

use crate::ast::{Field, Input, Style, Variant};
use crate::ctxt::Ctxt;
use crate::template::Piece;
use crate::valid;
use crate::wire::{self, Domain, Retry, Shape, Wire};

pub fn derive(node: &DeriveInput) -> TokenStream {
    let cx = Ctxt::default();
    let Some(input) = Input::from_syn(&cx, node) else {
        return cx.into_compile_errors();
    };
    let shapes: Vec<Shape> = input
        .variants
        .iter()
        .map(|variant| wire::resolve(&cx, &input, variant))
        .collect();
    valid::check(&cx, &input, &shapes);
    if cx.has_errors() {
        // Still emit the impls, so the one mistake is the only error the user sees.
        let fallback = fallback(&input);
        let errors = cx.into_compile_errors();
        return quote!(#errors #fallback);
    }
    Expander::new(&input, &shapes).all()
}

fn private() -> TokenStream {
    quote!(::a2a_error::__private)
}

/// An integer expression for `code` (negative literals as `-N`).
fn int(code: i32) -> TokenStream {
    let magnitude = Literal::i64_unsuffixed(i64::from(code).abs());
    if code < 0 {
        quote!(-#magnitude)
    } else {
        quote!(#magnitude)
    }
}

fn category_tokens(category: a2a_error_codes::Category) -> TokenStream {
    let p = private();
    let name = Ident::new(&format!("{category:?}"), Span::call_site());
    quote!(#p::Category::#name)
}

fn retry_tokens(retry: Retry) -> TokenStream {
    let p = private();
    match retry {
        Retry::Never => quote!(#p::RetryHint::Never),
        Retry::Backoff => quote!(#p::RetryHint::Backoff),
        Retry::After(seconds) => {
            quote!(#p::RetryHint::After(::core::time::Duration::from_secs(#seconds)))
        }
    }
}

fn domain_tokens(domain: &Domain) -> TokenStream {
    match domain {
        Domain::Literal(domain) => quote!(#domain),
        Domain::Package => quote!(::core::env!("CARGO_PKG_NAME")),
    }
}

/// Whether `ty` names one of `params` anywhere inside it.
fn mentions(ty: &Type, params: &[&Ident]) -> bool {
    fn walk(tokens: TokenStream, params: &[&Ident]) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Ident(ident) => params.iter().any(|p| **p == ident),
            TokenTree::Group(group) => walk(group.stream(), params),
            _ => false,
        })
    }
    walk(quote!(#ty), params)
}

struct Expander<'a> {
    input: &'a Input<'a>,
    rows: Vec<(&'a Variant<'a>, &'a Shape<'a>)>,
    params: Vec<&'a Ident>,
}

impl<'a> Expander<'a> {
    fn new(input: &'a Input<'a>, shapes: &'a [Shape<'a>]) -> Self {
        let params = input
            .generics
            .type_params()
            .map(|param| &param.ident)
            .collect();
        Expander {
            input,
            rows: input.variants.iter().zip(shapes).collect(),
            params,
        }
    }

    fn all(&self) -> TokenStream {
        let a2a_error = self.a2a_error_impl();
        let mirror = self.mirror_impl();
        let inherent = self.inherent_impl();
        let kind = self.kind_enum();
        quote! {
            #a2a_error
            #mirror
            #inherent
            #kind
        }
    }

    /// `where` with the input's own predicates plus `extra`.
    fn where_clause(&self, extra: Vec<TokenStream>) -> TokenStream {
        let own = self
            .input
            .generics
            .where_clause
            .iter()
            .flat_map(|w| w.predicates.iter());
        quote!(where #(#own,)* #(#extra,)*)
    }

    /// Bounds on field types that mention generic parameters, selected by `pick`.
    fn field_bounds(
        &self,
        pick: impl Fn(&Field, &Shape) -> Option<TokenStream>,
    ) -> Vec<TokenStream> {
        let mut bounds = Vec::new();
        for (variant, shape) in &self.rows {
            for field in &variant.fields {
                if mentions(field.ty, &self.params)
                    && let Some(bound) = pick(field, shape)
                {
                    let ty = field.ty;
                    bounds.push(quote!(#ty: #bound));
                }
            }
        }
        bounds
    }

    fn is_generic(&self) -> bool {
        !self.input.generics.params.is_empty()
    }

    /// `match self { arms }`, or `match *self {}` for an enum without variants.
    fn match_self(&self, arms: impl Iterator<Item = TokenStream>) -> TokenStream {
        if self.rows.is_empty() {
            quote!(match *self {})
        } else {
            quote!(match self { #(#arms)* })
        }
    }

    /// One arm per variant: `coded` for variants with a code, `transparent` (given the inner
    /// field's binding and type) for transparent ones.
    fn per_variant(
        &self,
        coded: impl Fn(&Variant, &Wire) -> (TokenStream, TokenStream),
        transparent: impl Fn(&Ident, &Type) -> TokenStream,
    ) -> TokenStream {
        let arms = self.rows.iter().map(|(variant, shape)| match shape {
            Shape::Coded(wire) => {
                let (pattern, body) = coded(variant, wire);
                quote!(#pattern => #body,)
            }
            Shape::Transparent(field) => {
                let pattern = variant.pattern();
                let body = transparent(&field.binding, field.ty);
                quote!(#pattern => #body,)
            }
            Shape::Missing => unreachable!("reported by valid::check"),
        });
        self.match_self(arms)
    }

    fn a2a_error_impl(&self) -> TokenStream {
        let p = private();
        let ident = self.input.ident;
        let (impl_generics, ty_generics, _) = self.input.generics.split_for_impl();
        let mut extra = self.field_bounds(|field, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::A2aError)),
            Shape::Coded(_) if field.is_data() => Some(quote!(#p::Serialize)),
            Shape::Coded(_) if field.attrs.retry_after.is_some() => {
                Some(quote!(#p::RetryDelayField))
            }
            _ => None,
        });
        if self.is_generic() {
            extra.push(quote!(Self: ::std::error::Error));
        }
        let where_clause = self.where_clause(extra);
        let delegate = |method: TokenStream| {
            move |binding: &Ident, ty: &Type| {
                let p = private();
                let binding = at(binding, ty);
                quote_spanned!(ty.span()=> #p::A2aError::#method(#binding))
            }
        };

        let code = self.per_variant(
            |v, w| (v.pattern_any(), int(w.code)),
            delegate(quote!(code)),
        );
        let reason = self.per_variant(
            |v, w| {
                let reason = &w.reason;
                (v.pattern_any(), quote!(#reason))
            },
            delegate(quote!(reason)),
        );
        let domain = self.per_variant(
            |v, w| (v.pattern_any(), domain_tokens(&w.domain)),
            delegate(quote!(domain)),
        );
        let public_message = self.per_variant(public_message, delegate(quote!(public_message)));
        let retry_hint = self.per_variant(
            |v, w| match w.retry_field {
                None => (v.pattern_any(), retry_tokens(w.retry)),
                Some(field) => {
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
            },
            delegate(quote!(retry_hint)),
        );
        let category = self.per_variant(
            |v, w| (v.pattern_any(), category_tokens(w.category)),
            delegate(quote!(category)),
        );
        let http_status = self.per_variant(
            |v, w| {
                (
                    v.pattern_any(),
                    Literal::u16_unsuffixed(w.http).into_token_stream(),
                )
            },
            delegate(quote!(http_status)),
        );
        let write_data = self.per_variant(
            |v, _| {
                let pattern = v.pattern_binding(|f| f.is_data());
                let fields = v.fields.iter().filter(|f| f.is_data()).map(|f| {
                    let key = f.data_key().unwrap_or_default();
                    let binding = at(&f.binding, f.ty);
                    // Spanned at the field, so a type that is not Serialize is reported there.
                    quote_spanned!(f.ty.span()=> __sink.field(#key, #binding);)
                });
                (pattern, quote!({ #(#fields)* }))
            },
            |binding, ty| {
                let binding = at(binding, ty);
                quote_spanned!(ty.span()=> #p::A2aError::write_data(#binding, __sink))
            },
        );
        let write_error_object = self.write_error_object();
        let transparent_only = self.transparent_only();

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
            }

            #p::with_axum! {
                #[automatically_derived]
                impl #impl_generics #p::axum::response::IntoResponse for #ident #ty_generics
                #where_clause
                {
                    fn into_response(self) -> #p::axum::response::Response {
                        #p::rest_error_response(&self)
                    }
                }
            }
        }
    }

    /// The trait methods whose defaults are right for coded variants but must reach the inner
    /// error of a transparent one (its own gRPC name, its extra details such as a received
    /// BadRequest); emitted only when there is a transparent variant.
    fn transparent_only(&self) -> TokenStream {
        if !self
            .rows
            .iter()
            .any(|(_, shape)| matches!(shape, Shape::Transparent(_)))
        {
            return TokenStream::new();
        }
        let p = private();
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

    /// Variants whose bytes never change are encoded once; transparent ones delegate.
    fn write_error_object(&self) -> TokenStream {
        let p = private();
        let mut arms = Vec::new();
        let mut rest = false;
        for (variant, shape) in &self.rows {
            match shape {
                Shape::Coded(wire) if wire.is_static(variant) => {
                    let pattern = variant.pattern_any();
                    arms.push(quote! {
                        #pattern => {
                            static __CACHE: #p::EncodedCache = #p::EncodedCache::new();
                            __CACHE.write(self, __profile, __out)
                        }
                    });
                }
                Shape::Transparent(field) => {
                    let pattern = variant.pattern();
                    let binding = at(&field.binding, field.ty);
                    arms.push(quote_spanned! {field.ty.span()=>
                        #pattern => #p::A2aError::write_error_object(#binding, __profile, __out),
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

    /// The (code, reason) tests in matching order: direct variants, then (for peers that send
    /// no reason) direct variants by code alone, then transparent variants in order.
    fn decode_chain(&self, found: impl Fn(&Variant, TokenStream) -> TokenStream) -> TokenStream {
        let p = private();
        let mut exact = Vec::new();
        let mut by_code = Vec::new();
        let mut transparent = Vec::new();
        for (variant, shape) in &self.rows {
            match shape {
                Shape::Coded(wire) => {
                    let code = int(wire.code);
                    let reason = &wire.reason;
                    let build = found(variant, build_variant(variant));
                    exact.push(quote! {
                        if __code == #code && #p::reason_matches(__reason, __code, #reason) {
                            return #build;
                        }
                    });
                    // A peer that sends no reason with a table code means the table's
                    // reason (handled above); for other codes the code alone decides.
                    if a2a_error_codes::lookup(wire.code).is_none() {
                        by_code.push(quote! {
                            if __code == #code { return #build; }
                        });
                    }
                }
                Shape::Transparent(field) => {
                    let ty = field.ty;
                    let construct = construct(variant, &[quote!(__inner)]);
                    let build = found(variant, quote!(#p::Some(#construct)));
                    transparent.push(quote_spanned! {ty.span()=>
                        if let #p::Some(__inner) =
                            <#ty as #p::FromErrorObject>::from_error_object(__obj)
                        {
                            return #build;
                        }
                    });
                }
                Shape::Missing => {}
            }
        }
        quote! {
            let __code = __obj.code;
            let __reason = __obj.reason();
            #(#exact)*
            #(if __reason.is_none() { #by_code })*
            #(#transparent)*
        }
    }

    fn mirror_impl(&self) -> TokenStream {
        let p = private();
        let ident = self.input.ident;
        let (impl_generics, ty_generics, _) = self.input.generics.split_for_impl();
        let where_clause = self.where_clause(self.mirror_bounds());
        let chain = self.decode_chain(|_, build| build);
        let reasons = self.reason_chain();
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::FromErrorObject for #ident #ty_generics #where_clause {
                fn from_error_object(__obj: &#p::ErrorObject) -> #p::Option<Self> {
                    #chain
                    #p::None
                }

                fn code_for_reason(__reason: &str) -> #p::Option<i32> {
                    #reasons
                    #p::None
                }
            }
        }
    }

    /// Reason → code for direct variants, then each transparent variant's own table.
    fn reason_chain(&self) -> TokenStream {
        let p = private();
        let mut direct = Vec::new();
        let mut transparent = Vec::new();
        for (_, shape) in &self.rows {
            match shape {
                Shape::Coded(wire) => {
                    let (code, reason) = (int(wire.code), &wire.reason);
                    direct.push(quote! {
                        if __reason == #reason { return #p::Some(#code); }
                    });
                }
                Shape::Transparent(field) => {
                    let ty = field.ty;
                    transparent.push(quote_spanned! {ty.span()=>
                        if let #p::Some(__code) =
                            <#ty as #p::FromErrorObject>::code_for_reason(__reason)
                        {
                            return #p::Some(__code);
                        }
                    });
                }
                Shape::Missing => {}
            }
        }
        quote! { #(#direct)* #(#transparent)* }
    }

    fn mirror_bounds(&self) -> Vec<TokenStream> {
        let p = private();
        self.field_bounds(|field, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::FromErrorObject)),
            Shape::Coded(_) if field.is_data() => Some(quote!(#p::DeserializeOwned)),
            Shape::Coded(_) if field.attrs.retry_after.is_some() => {
                Some(quote!(#p::RetryDelayField))
            }
            _ => None,
        })
    }

    fn inherent_impl(&self) -> TokenStream {
        let p = private();
        let ident = self.input.ident;
        let (impl_generics, ty_generics, where_clause) = self.input.generics.split_for_impl();
        let rows = self.rows.iter().filter_map(|(variant, shape)| {
            let Shape::Coded(wire) = shape else {
                return None;
            };
            let name = variant.ident.to_string();
            let code = int(wire.code);
            let reason = &wire.reason;
            let domain = domain_tokens(&wire.domain);
            let message = &wire.message;
            let retry = retry_tokens(wire.retry);
            let category = category_tokens(wire.category);
            let http = wire.http;
            Some(quote! {
                #p::ErrorSpec {
                    name: #name,
                    code: #code,
                    reason: #reason,
                    domain: #domain,
                    message: #message,
                    retry: #retry,
                    category: #category,
                    http_status: #http,
                }
            })
        });
        let kind_methods = if self.input.is_enum {
            self.kind_methods()
        } else {
            TokenStream::new()
        };
        quote! {
            #[automatically_derived]
            impl #impl_generics #ident #ty_generics #where_clause {
                /// One row per variant with a code (transparent variants are described by their
                /// inner type's catalog): code, reason, public message, retry, HTTP status.
                pub const CATALOG: &'static [#p::ErrorSpec] = &[#(#rows),*];
                #kind_methods
            }
        }
    }

    fn kind_methods(&self) -> TokenStream {
        let p = private();
        let kind = self.input.kind_ident();
        let arms = self.rows.iter().map(|(variant, _)| {
            let pattern = variant.pattern_any();
            let name = variant.ident;
            quote!(#pattern => #kind::#name,)
        });
        let kind_match = self.match_self(arms);
        let chain = self.decode_chain(|variant, _| {
            let name = variant.ident;
            quote!(#p::Some(#kind::#name))
        });
        let bounds = self.field_bounds(|_, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::FromErrorObject)),
            _ => None,
        });
        quote! {
            /// Which variant this is, without its fields.
            pub fn kind(&self) -> #kind {
                #kind_match
            }

            /// The kind of error `obj` stands for, even when its variant cannot be rebuilt
            /// (it has fields that do not travel). Same matching order as the client mirror.
            pub fn kind_of(__obj: &#p::ErrorObject) -> #p::Option<#kind> where #(#bounds,)* {
                #chain
                #p::None
            }
        }
    }

    fn kind_enum(&self) -> TokenStream {
        if !self.input.is_enum {
            return TokenStream::new();
        }
        let p = private();
        let ident = self.input.ident;
        let vis = self.input.vis;
        let kind = self.input.kind_ident();
        let names: Vec<&Ident> = self.rows.iter().map(|(variant, _)| variant.ident).collect();
        let name_strs = names.iter().map(|name| name.to_string());
        let doc = format!(
            "The variants of [`{ident}`] without their fields, for exhaustive `match`es on \
             decoded errors."
        );
        let variant_docs = names.iter().map(|name| format!("[`{ident}::{name}`]"));
        let from_error_object = if self.is_generic() {
            TokenStream::new()
        } else {
            quote! {
                /// The kind of error `obj` stands for (see `kind_of` on the error type).
                pub fn from_error_object(obj: &#p::ErrorObject) -> #p::Option<Self> {
                    #ident::kind_of(obj)
                }
            }
        };
        let name_match = if names.is_empty() {
            quote!(match self {})
        } else {
            quote!(match self { #(Self::#names => #name_strs,)* })
        };
        quote! {
            #[doc = #doc]
            #[derive(
                ::core::marker::Copy,
                ::core::clone::Clone,
                ::core::cmp::PartialEq,
                ::core::cmp::Eq,
                ::core::hash::Hash,
                ::core::fmt::Debug
            )]
            #vis enum #kind {
                #(#[doc = #variant_docs] #names,)*
            }

            #[automatically_derived]
            impl #kind {
                /// Every kind, in declaration order.
                pub const ALL: &'static [Self] = &[#(Self::#names),*];

                /// The variant's name.
                pub const fn name(self) -> &'static str {
                    #name_match
                }

                #from_error_object
            }
        }
    }
}

/// `binding` with the span of the field's type, so errors about the type point at the field.
fn at(binding: &Ident, ty: &Type) -> Ident {
    Ident::new(&binding.to_string(), ty.span())
}

fn public_message(variant: &Variant, wire: &Wire) -> (TokenStream, TokenStream) {
    let p = private();
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

/// `Some(variant)` rebuilt from `__obj`, or `None` when a field does not travel.
fn build_variant(variant: &Variant) -> TokenStream {
    let p = private();
    let mut values = Vec::new();
    for field in &variant.fields {
        let ty = field.ty;
        if let Some(key) = field.data_key() {
            values.push(quote_spanned!(ty.span()=> __obj.data_field::<#ty>(#key)));
        } else if field.attrs.retry_after.is_some() {
            values.push(quote_spanned! {ty.span()=>
                <#ty as #p::RetryDelayField>::from_delay(__obj.retry_delay())
            });
        } else {
            // A field that is not on the wire cannot be rebuilt.
            return quote!(#p::None);
        }
    }
    if values.is_empty() {
        let construct = construct(variant, &[]);
        return quote!(#p::Some(#construct));
    }
    let bindings: Vec<TokenStream> = variant
        .fields
        .iter()
        .map(|f| f.binding.to_token_stream())
        .collect();
    let construct = construct(variant, &bindings);
    quote! {
        match (#(#values,)*) {
            (#(#p::Some(#bindings),)*) => #p::Some(#construct),
            _ => #p::None,
        }
    }
}

/// The variant built from `values`, one per field in order.
fn construct(variant: &Variant, values: &[TokenStream]) -> TokenStream {
    let path = &variant.path;
    match variant.style {
        Style::Named => {
            let members = variant.fields.iter().map(|f| &f.member);
            quote!(#path { #(#members: #values),* })
        }
        Style::Tuple => quote!(#path ( #(#values),* )),
        Style::Unit => quote!(#path),
    }
}

/// On invalid input: impls with the right signatures and no behaviour, so no second error
/// ("A2aError is not implemented", "no variant Kind::X") follows the real one.
fn fallback(input: &Input) -> TokenStream {
    let p = private();
    let ident = input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let own = where_clause.iter().flat_map(|w| w.predicates.iter());
    let own2 = own.clone();
    let error_bound = if input.generics.params.is_empty() {
        quote!()
    } else {
        quote!(Self: ::std::error::Error,)
    };
    let (kind_enum, kind_methods) = if input.is_enum {
        let vis = input.vis;
        let kind = input.kind_ident();
        let names = input.variants.iter().map(|v| v.ident);
        (
            quote! {
                #[allow(missing_docs)]
                #[derive(
                    ::core::marker::Copy,
                    ::core::clone::Clone,
                    ::core::cmp::PartialEq,
                    ::core::cmp::Eq,
                    ::core::hash::Hash,
                    ::core::fmt::Debug
                )]
                #vis enum #kind { #(#names,)* }
            },
            quote! {
                #[allow(missing_docs)]
                pub fn kind(&self) -> #kind { ::core::unreachable!() }
                #[allow(missing_docs)]
                pub fn kind_of(_: &#p::ErrorObject) -> #p::Option<#kind> { #p::None }
            },
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    quote! {
        #[allow(unused_variables)]
        impl #impl_generics #p::A2aError for #ident #ty_generics where #(#own,)* #error_bound {
            fn code(&self) -> i32 { ::core::unreachable!() }
            fn reason(&self) -> &str { ::core::unreachable!() }
            fn domain(&self) -> &str { ::core::unreachable!() }
            fn public_message(&self) -> #p::Cow<'_, str> { ::core::unreachable!() }
            fn retry_hint(&self) -> #p::RetryHint { ::core::unreachable!() }
            fn category(&self) -> #p::Category { ::core::unreachable!() }
            fn http_status(&self) -> u16 { ::core::unreachable!() }
        }
        impl #impl_generics #p::FromErrorObject for #ident #ty_generics #where_clause {
            fn from_error_object(_: &#p::ErrorObject) -> #p::Option<Self> { #p::None }
        }
        #p::with_axum! {
            impl #impl_generics #p::axum::response::IntoResponse for #ident #ty_generics
            where #(#own2,)* #error_bound
            {
                fn into_response(self) -> #p::axum::response::Response { ::core::unreachable!() }
            }
        }
        impl #impl_generics #ident #ty_generics #where_clause {
            #[allow(missing_docs)]
            pub const CATALOG: &'static [#p::ErrorSpec] = &[];
            #kind_methods
        }
        #kind_enum
    }
}
