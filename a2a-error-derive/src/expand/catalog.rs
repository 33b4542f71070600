//! `Catalog`: every coded variant as an `ErrorSpec`, for docs and agent cards.

use proc_macro2::TokenStream;
use quote::quote;

use super::*;

impl Expander<'_> {
    pub(super) fn catalog_impl(&self) -> TokenStream {
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
                #p::spec(#name, #code, #reason, #domain, #message, #retry, #category, #http)
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
}
