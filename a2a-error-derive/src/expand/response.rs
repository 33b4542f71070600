//! axum's `IntoResponse`: a derived error is a REST error response.

use proc_macro2::TokenStream;
use quote::quote;

use super::Expander;

impl Expander<'_> {
    /// The axum `IntoResponse` impl (a REST error response), unless opted out.
    pub(super) fn response_impl(&self, where_clause: &TokenStream) -> TokenStream {
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
}
