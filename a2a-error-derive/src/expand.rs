//! Code generation for valid input: the `A2aError` impl, the client mirror, the catalog and
//! the kind methods. Every path goes through the runtime's `__private` (see
//! [`Input::private`]); bounds come from `bounds`, the kind enum from `kind`, and invalid
//! input goes to `fallback`.

use a2a_error_codes::PROJECT_DOMAIN;
use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{DeriveInput, Ident, Type};

use crate::ast::{Field, Input, Style, Variant};
use crate::bounds;
use crate::ctxt::Ctxt;
use crate::fallback;
use crate::kind;
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
        let fallback = fallback::expand(&input);
        let errors = cx.into_compile_errors();
        return quote!(#errors #fallback);
    }
    Expander::new(&input, &shapes).all()
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

fn category_tokens(p: &TokenStream, category: a2a_error_codes::Category) -> TokenStream {
    let name = Ident::new(&format!("{category:?}"), Span::call_site());
    quote!(#p::Category::#name)
}

fn retry_tokens(p: &TokenStream, retry: Retry) -> TokenStream {
    match retry {
        Retry::Never => quote!(#p::RetryHint::Never),
        Retry::Backoff => quote!(#p::RetryHint::Backoff),
        Retry::After(seconds) => {
            quote!(#p::RetryHint::After(#p::Duration::from_secs(#seconds)))
        }
    }
}

fn domain_tokens(p: &TokenStream, domain: &Domain) -> TokenStream {
    match domain {
        Domain::Literal(domain) => quote!(#domain),
        Domain::Package => quote!(#p::env!("CARGO_PKG_NAME")),
    }
}

/// The domain the enum gives errors it wraps whose own domain is the project's placeholder:
/// its `domain` attribute, else the package name.
fn container_domain(input: &Input) -> TokenStream {
    let domain = match &input.attrs.domain {
        Some(domain) => Domain::Literal(domain.value.clone()),
        None => Domain::Package,
    };
    domain_tokens(&input.private(), &domain)
}

struct Expander<'a> {
    input: &'a Input<'a>,
    shapes: &'a [Shape<'a>],
    rows: Vec<(&'a Variant<'a>, &'a Shape<'a>)>,
    p: TokenStream,
}

impl<'a> Expander<'a> {
    fn new(input: &'a Input<'a>, shapes: &'a [Shape<'a>]) -> Self {
        Expander {
            input,
            shapes,
            rows: input.variants.iter().zip(shapes).collect(),
            p: input.private(),
        }
    }

    fn all(&self) -> TokenStream {
        let a2a_error = self.a2a_error_impl();
        let mirror = self.mirror_impl();
        let inherent = self.inherent_impl();
        let kind = kind::kind_enum(self.input);
        let error_check = bounds::error_check(self.input);
        quote! {
            #error_check
            #a2a_error
            #mirror
            #inherent
            #kind
        }
    }

    fn field_bounds(
        &self,
        pick: impl Fn(&Field, &Shape) -> Option<TokenStream>,
    ) -> Vec<TokenStream> {
        bounds::field_bounds(self.input, self.shapes, pick)
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

    /// Whether every variant of an enum has a code (none is transparent). Then each method
    /// reads the variant's catalog row, found by the one `HasKind::kind` match, instead of
    /// matching on its own: far less code for rustc to check and compile in the user's crate.
    fn all_coded(&self) -> bool {
        self.input.is_enum
            && !self.rows.is_empty()
            && self
                .rows
                .iter()
                .all(|(_, shape)| matches!(shape, Shape::Coded(_)))
    }

    /// A method's body read from the catalog row of `self` (see [`Self::all_coded`]):
    /// `special` variants keep an arm of their own, the rest go through `read` of their row.
    fn read_row(
        &self,
        read: impl Fn(TokenStream) -> TokenStream,
        special: impl Fn(&Variant, &Wire) -> Option<(TokenStream, TokenStream)>,
    ) -> TokenStream {
        let p = &self.p;
        let row = read(quote! {
            <Self as #p::Catalog>::CATALOG[<Self as #p::HasKind>::kind(self) as usize]
        });
        let arms: Vec<TokenStream> = self
            .rows
            .iter()
            .filter_map(|(variant, shape)| match shape {
                Shape::Coded(wire) => special(variant, wire),
                _ => None,
            })
            .map(|(pattern, body)| quote!(#pattern => #body,))
            .collect();
        self.match_some(&arms, row)
    }

    /// `match self` over `arms` (each ending in a comma) for some of the variants, `rest` for
    /// the others: no wildcard when the arms cover them all (it would be unreachable), no
    /// match when there are no arms.
    fn match_some(&self, arms: &[TokenStream], rest: TokenStream) -> TokenStream {
        if arms.is_empty() {
            rest
        } else if arms.len() == self.rows.len() {
            quote!(match self { #(#arms)* })
        } else {
            quote!(match self { #(#arms)* _ => #rest, })
        }
    }

    /// [`Self::read_row`] when every variant has a code, else a match on every variant.
    fn by_row_or_variant(
        &self,
        read: impl Fn(TokenStream) -> TokenStream,
        special: impl Fn(&Variant, &Wire) -> Option<(TokenStream, TokenStream)>,
        coded: impl Fn(&Variant, &Wire) -> (TokenStream, TokenStream),
        transparent: impl Fn(&Ident, &Type) -> TokenStream,
    ) -> TokenStream {
        if self.all_coded() {
            self.read_row(read, special)
        } else {
            self.per_variant(coded, transparent)
        }
    }

    fn a2a_error_impl(&self) -> TokenStream {
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
            |v, w| (v.pattern_any(), domain_tokens(p, &w.domain)),
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
            |v, w| (v.pattern_any(), category_tokens(p, w.category)),
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
        let into_sdk = sdk_impl(
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

    /// The axum `IntoResponse` impl (a REST error response), unless opted out.
    fn response_impl(&self, where_clause: &TokenStream) -> TokenStream {
        if !self.input.emits_into_response() {
            return TokenStream::new();
        }
        let p = &self.p;
        let ident = self.input.ident;
        let (impl_generics, ty_generics, _) = self.input.generics.split_for_impl();
        quote! {
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
    fn placeholder_domain(&self) -> TokenStream {
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
    fn write_data(&self) -> TokenStream {
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
    fn write_error_object(&self) -> TokenStream {
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
                    let write = cache_write(variant);
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
    /// by kind, for the variants whose bytes never change apart from their data fields.
    fn write_error_object_by_row(&self) -> TokenStream {
        let p = &self.p;
        // Two arms: the variants copied whole, and those with data fields to write in between.
        let mut whole = Vec::new();
        let mut around = Vec::new();
        for (variant, shape) in &self.rows {
            if let Shape::Coded(wire) = shape
                && wire.is_fixed()
            {
                match variant.has_data() {
                    false => whole.push(variant.pattern_any()),
                    true => around.push(variant.pattern_any()),
                }
            }
        }
        let cached = whole.len() + around.len();
        if cached == 0 {
            return TokenStream::new();
        }
        let count = self.rows.len();
        let cache = quote!(__CACHES[<Self as #p::HasKind>::kind(self) as usize]);
        let whole = (!whole.is_empty())
            .then(|| quote!(#(#whole)|* => #cache.write(self, __profile, __out),));
        let around = (!around.is_empty())
            .then(|| quote!(#(#around)|* => #cache.write_around(self, __profile, __out),));
        let rest =
            (cached < count).then(|| quote!(_ => #p::write_error_object(self, __profile, __out),));
        quote! {
            fn write_error_object(&self, __profile: #p::WireProfile, __out: &mut #p::Vec<u8>) {
                static __CACHES: [#p::EncodedCache; #count] =
                    [const { #p::EncodedCache::new() }; #count];
                match self {
                    #whole
                    #around
                    #rest
                }
            }
        }
    }

    /// The (code, reason) tests in matching order: direct variants, then (for peers that send
    /// no reason) direct variants by code alone, then transparent variants in order.
    fn decode_chain(&self, found: impl Fn(&Variant, TokenStream) -> TokenStream) -> TokenStream {
        let p = &self.p;
        let mut exact = Vec::new();
        let mut by_code = Vec::new();
        let mut transparent = Vec::new();
        for (variant, shape) in &self.rows {
            match shape {
                Shape::Coded(wire) => {
                    let code = int(wire.code);
                    let reason = &wire.reason;
                    let build = found(variant, build_variant(p, variant));
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
                    let decode = quote_spanned! {ty.span()=>
                        if let #p::Some(__inner) =
                            <#ty as #p::FromErrorObject>::from_received(__obj)
                        {
                            return #build;
                        }
                    };
                    // A `downstream` variant takes only what a downstream failure looks like.
                    transparent.push(if self.input.variant_attrs(variant).downstream.is_some() {
                        quote!(if #p::is_downstream_failure(__obj) { #decode })
                    } else {
                        decode
                    });
                }
                Shape::Missing => {}
            }
        }
        quote! {
            let __code = #p::ReceivedError::code(__obj);
            let __reason = #p::ReceivedError::reason(__obj);
            #(#exact)*
            #(if __reason.is_none() { #by_code })*
            #(#transparent)*
        }
    }

    fn mirror_impl(&self) -> TokenStream {
        let p = &self.p;
        let ident = self.input.ident;
        let (impl_generics, ty_generics, _) = self.input.generics.split_for_impl();
        let where_clause = bounds::where_clause(self.input, &self.mirror_bounds());
        let (chain, reasons) = if self.all_coded() {
            let builds = self.rows.iter().enumerate().map(|(i, (variant, _))| {
                let build = build_variant(p, variant);
                quote!(#i => #build,)
            });
            (
                quote! {
                    let __row = #p::find_coded(<Self as #p::Catalog>::CATALOG, __obj)?;
                    match __row { #(#builds)* _ => #p::None }
                },
                quote!(#p::code_for_reason(<Self as #p::Catalog>::CATALOG, __reason)),
            )
        } else {
            let chain = self.decode_chain(|_, build| build);
            let reasons = self.reason_chain();
            (quote!(#chain #p::None), quote!(#reasons #p::None))
        };
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::FromErrorObject for #ident #ty_generics #where_clause {
                fn from_error_object(__obj: &#p::ErrorObject) -> #p::Option<Self> {
                    <Self as #p::FromErrorObject>::from_received(__obj)
                }

                fn from_received(__obj: &dyn #p::ReceivedError) -> #p::Option<Self> {
                    #chain
                }

                fn code_for_reason(__reason: &str) -> #p::Option<i32> {
                    #reasons
                }
            }
        }
    }

    /// Reason → code for direct variants, then each transparent variant's own table.
    fn reason_chain(&self) -> TokenStream {
        let p = &self.p;
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
        let p = &self.p;
        self.field_bounds(|field, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::FromErrorObject)),
            Shape::Coded(_) if field.is_data() => Some(quote!(#p::DataField)),
            Shape::Coded(_) if field.attrs.default.is_some() => Some(quote!(#p::Default)),
            Shape::Coded(_) if field.attrs.retry_after.is_some() => {
                Some(quote!(#p::RetryDelayField))
            }
            _ => None,
        })
    }

    fn inherent_impl(&self) -> TokenStream {
        let p = &self.p;
        let ident = self.input.ident;
        let (impl_generics, ty_generics, where_clause) = self.input.generics.split_for_impl();
        let rows = self.rows.iter().filter_map(|(variant, shape)| {
            let Shape::Coded(wire) = shape else {
                return None;
            };
            let name = variant.ident.to_string();
            let code = int(wire.code);
            let reason = &wire.reason;
            let domain = domain_tokens(p, &wire.domain);
            let message = &wire.message;
            let retry = retry_tokens(p, wire.retry);
            let category = category_tokens(p, wire.category);
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
        let has_kind = if self.input.is_enum {
            self.has_kind()
        } else {
            TokenStream::new()
        };
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::Catalog for #ident #ty_generics #where_clause {
                const CATALOG: &'static [#p::ErrorSpec] = &[#(#rows),*];
            }
            #has_kind
        }
    }

    fn has_kind(&self) -> TokenStream {
        let p = &self.p;
        let kind = self.input.kind_ident();
        let arms = self.rows.iter().map(|(variant, _)| {
            let pattern = variant.pattern_any();
            let name = variant.ident;
            quote!(#pattern => #kind::#name,)
        });
        let kind_match = self.match_self(arms);
        let bounds = self.field_bounds(|_, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::FromErrorObject)),
            _ => None,
        });
        let body = if self.all_coded() {
            quote! {
                #p::find_coded(<Self as #p::Catalog>::CATALOG, __obj).map(|__row| #kind::ALL[__row])
            }
        } else {
            let chain = self.decode_chain(|variant, _| {
                let name = variant.ident;
                quote!(#p::Some(#kind::#name))
            });
            quote!(let __obj: &dyn #p::ReceivedError = __obj; #chain #p::None)
        };
        kind::has_kind(self.input, &kind_match, &body, &bounds)
    }
}

/// `binding` with the span of the field's type, so errors about the type point at the field.
fn at(binding: &Ident, ty: &Type) -> Ident {
    Ident::new(&binding.to_string(), ty.span())
}

/// The public message of a variant that interpolates no field.
fn static_text(wire: &Wire) -> Option<String> {
    wire.pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => Some(text.as_str()),
            Piece::Arg { .. } => None,
        })
        .collect()
}

/// The `retry_hint` arm of a coded variant: its fixed advice, or its `retry_after` field's.
fn retry_hint(p: &TokenStream, v: &Variant, w: &Wire) -> (TokenStream, TokenStream) {
    let Some(field) = w.retry_field else {
        return (v.pattern_any(), retry_tokens(p, w.retry));
    };
    let binding = &field.binding;
    let fallback = retry_tokens(p, w.retry);
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

fn public_message(p: &TokenStream, variant: &Variant, wire: &Wire) -> (TokenStream, TokenStream) {
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
fn build_variant(p: &TokenStream, variant: &Variant) -> TokenStream {
    let mut values = Vec::new();
    for field in &variant.fields {
        let ty = field.ty;
        if let Some(key) = field.data_key() {
            values.push(quote_spanned!(ty.span()=> (#p::data_field::<#ty>().read)(#p::ReceivedError::data_value(__obj, #key))));
        } else if field.attrs.retry_after.is_some() {
            values.push(quote_spanned! {ty.span()=>
                <#ty as #p::RetryDelayField>::from_delay(#p::ReceivedError::retry_after(__obj))
            });
        } else if field.attrs.default.is_some() {
            values.push(quote_spanned! {ty.span()=>
                #p::Some(<#ty as #p::Default>::default())
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

/// `From<Enum> for a2a::A2AError` (the official Rust SDK's error) and `From<Enum> for
/// tonic::Status`, each emitted only when the runtime has its feature (`sdk`, `grpc`): `?` in
/// an SDK executor or a tonic service then keeps the public message and details. `sdk` and
/// `grpc` convert `error`.
pub fn sdk_impl(
    input: &Input,
    where_clause: &TokenStream,
    sdk: &TokenStream,
    grpc: &TokenStream,
) -> TokenStream {
    let p = input.private();
    let ident = input.ident;
    let (impl_generics, ty_generics, _) = input.generics.split_for_impl();
    quote! {
        #p::with_sdk! {
            #[automatically_derived]
            impl #impl_generics #p::From<#ident #ty_generics> for #p::sdk_a2a::A2AError
            #where_clause
            {
                fn from(error: #ident #ty_generics) -> Self {
                    #sdk
                }
            }
        }
        #p::with_grpc! {
            #[automatically_derived]
            impl #impl_generics #p::From<#ident #ty_generics> for #p::grpc_tonic::Status
            #where_clause
            {
                fn from(error: #ident #ty_generics) -> Self {
                    #grpc
                }
            }
        }
    }
}

/// The `EncodedCache` method for a fixed variant: `write` copies its bytes whole, and
/// `write_around` writes its data fields in between.
fn cache_write(variant: &Variant) -> TokenStream {
    match variant.has_data() {
        false => quote!(write),
        true => quote!(write_around),
    }
}
