//! On invalid input: every item the derive would emit, with the right signatures and no
//! behaviour, so no second error ("A2aError is not implemented", "no variant Kind::X", "no
//! function `kind_of`") follows the real one.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Input;
use crate::bounds;
use crate::kind;

pub fn expand(input: &Input) -> TokenStream {
    let p = input.private();
    let ident = input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let error_where = bounds::where_clause(input, &[bounds::error_bound(input)]);
    let error_check = bounds::error_check(input);
    let has_kind = if input.is_enum {
        kind::has_kind(input, &quote!(#p::unreachable!()), &quote!(#p::None), &[])
    } else {
        TokenStream::new()
    };
    let kind_enum = kind::kind_impl(input);
    let into_response = if input.emits_into_response() {
        quote! {
            #p::with_axum! {
                impl #impl_generics #p::axum::response::IntoResponse for #ident #ty_generics
                #error_where
                {
                    fn into_response(self) -> #p::axum::response::Response {
                        #p::unreachable!()
                    }
                }
            }
        }
    } else {
        TokenStream::new()
    };
    let unreachable = quote!({ let _ = error; #p::unreachable!() });
    let into_sdk = crate::sdk::sdk_impl(input, &error_where, &unreachable, &unreachable);
    quote! {
        #error_check
        #into_sdk
        #[allow(unused_variables)]
        impl #impl_generics #p::A2aError for #ident #ty_generics #error_where {
            fn code(&self) -> i32 { #p::unreachable!() }
            fn reason(&self) -> &str { #p::unreachable!() }
            fn domain(&self) -> &str { #p::unreachable!() }
            fn public_message(&self) -> #p::Cow<'_, str> { #p::unreachable!() }
            fn retry_hint(&self) -> #p::RetryHint { #p::unreachable!() }
            fn category(&self) -> #p::Category { #p::unreachable!() }
            fn http_status(&self) -> u16 { #p::unreachable!() }
        }
        impl #impl_generics #p::FromErrorObject for #ident #ty_generics #where_clause {
            fn from_error_object(_: &#p::ErrorObject) -> #p::Option<Self> { #p::None }
        }
        #into_response
        impl #impl_generics #p::Catalog for #ident #ty_generics #where_clause {
            const CATALOG: &'static [#p::ErrorSpec] = &[];
        }
        #has_kind
        #kind_enum
    }
}
