//! `FromErrorObject`: the client-side mirror, an error object read back into the enum.

use std::fmt::Write as _;

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;

use super::*;
use crate::ast::Style;

impl Expander<'_> {
    /// The (code, reason) tests in matching order: direct variants, then (for peers that send
    /// no reason) direct variants by code alone, then transparent variants in order.
    pub(super) fn decode_chain(
        &self,
        found: impl Fn(&Variant, TokenStream) -> TokenStream,
    ) -> TokenStream {
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

    pub(super) fn mirror_impl(&self) -> TokenStream {
        let p = &self.p;
        let ident = self.input.ident;
        let (impl_generics, ty_generics, _) = self.input.generics.split_for_impl();
        let where_clause = bounds::where_clause(self.input, &self.mirror_bounds());
        let (chain, reasons) = if self.all_coded() {
            // The arms of variants without fields as one text (`lex`); those with
            // fields are quoted, their reads spanned at the field for its diagnostics.
            let mut units = String::new();
            let mut builds = Vec::new();
            for (i, (variant, _)) in self.rows.iter().enumerate() {
                if variant.fields.is_empty() {
                    let _ = write!(units, "{i} => __a2a::Some({}),", variant.path_text);
                } else {
                    let build = build_variant(p, variant);
                    builds.push(quote!(#i => #build,));
                }
            }
            let units = lex(&units);
            (
                quote! {
                    let __row = #p::find_coded(<Self as #p::Catalog>::CATALOG, __obj)?;
                    match __row { #units #(#builds)* _ => #p::None }
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
    pub(super) fn reason_chain(&self) -> TokenStream {
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

    pub(super) fn mirror_bounds(&self) -> Vec<TokenStream> {
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
}

/// `Some(variant)` rebuilt from `__obj`, or `None` when a field does not travel. Each field is
/// read in order, `?` returning `None` from the enclosing function (`from_received`, which
/// returns `Option<Self>`) for one that is missing or malformed.
pub(super) fn build_variant(p: &TokenStream, variant: &Variant) -> TokenStream {
    let mut values = Vec::new();
    for field in &variant.fields {
        let ty = field.ty;
        if let Some(key) = field.data_key() {
            values.push(quote_spanned!(ty.span()=> (#p::data_field::<#ty>().read)(#p::ReceivedError::data_value(__obj, #key))?));
        } else if field.attrs.retry_after.is_some() {
            values.push(quote_spanned! {ty.span()=>
                <#ty as #p::RetryDelayField>::from_delay(#p::ReceivedError::retry_after(__obj))?
            });
        } else if field.attrs.default.is_some() {
            values.push(quote_spanned!(ty.span()=> <#ty as #p::Default>::default()));
        } else {
            // A field that is not on the wire cannot be rebuilt.
            return quote!(#p::None);
        }
    }
    let construct = construct(variant, &values);
    quote!(#p::Some(#construct))
}

/// The variant built from `values`, one per field in order.
pub(super) fn construct(variant: &Variant, values: &[TokenStream]) -> TokenStream {
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
