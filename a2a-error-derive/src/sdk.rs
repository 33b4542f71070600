//! The conversions into the official SDK's `A2AError` and into `tonic::Status`, each emitted
//! only when the runtime has its feature; shared by `expand` and `fallback`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Input;

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
