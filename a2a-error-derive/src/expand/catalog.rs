//! `Catalog`: every coded variant as an `ErrorSpec`, for docs and agent cards.

use std::fmt::Write as _;

use proc_macro2::TokenStream;
use quote::quote;

use super::*;

impl Expander<'_> {
    pub(super) fn catalog_impl(&self) -> TokenStream {
        let p = &self.p;
        let ident = self.input.ident;
        let (impl_generics, ty_generics, where_clause) = self.input.generics.split_for_impl();
        // The rows as one text, lexed by rustc in one call: quote!'s token by token, in the
        // unoptimized proc macro of a dev build, was a quarter of the derive's own run for a
        // 64-variant enum. Only literals and `__a2a` paths, so the spans (all the call
        // site's, as quote! gives them) are the same.
        let mut text = String::new();
        for (variant, shape) in &self.rows {
            let Shape::Coded(wire) = shape else {
                continue;
            };
            let _ = write!(
                text,
                "__a2a::spec({:?}, {}, {:?}, {}, {:?}, {}, {}, {}),",
                variant.ident.to_string(),
                wire.code,
                wire.reason,
                domain_text(&wire.domain),
                wire.message,
                retry_text(wire.retry),
                category_text(wire.category),
                wire.http,
            );
        }
        let rows = lex(&text);
        let has_kind = if self.input.is_enum {
            self.has_kind()
        } else {
            TokenStream::new()
        };
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::Catalog for #ident #ty_generics #where_clause {
                const CATALOG: &'static [#p::ErrorSpec] = &[#rows];
            }
            #has_kind
        }
    }
}
