//! Bound inference for generic inputs: a field whose type names a type parameter gets the
//! bound its use needs (`A2aError` for a transparent field, `DataField` for a data field,
//! `RetryDelayField` for a delay), on the impl that uses it only.

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use syn::{Ident, Type};

use crate::ast::{Field, Input};
use crate::wire::Shape;

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

/// Bounds on the field types that mention a type parameter, as `pick` asks for them.
pub fn field_bounds(
    input: &Input,
    shapes: &[Shape],
    pick: impl Fn(&Field, &Shape) -> Option<TokenStream>,
) -> Vec<TokenStream> {
    let params: Vec<&Ident> = input
        .generics
        .type_params()
        .map(|param| &param.ident)
        .collect();
    let mut bounds = Vec::new();
    for (variant, shape) in input.variants.iter().zip(shapes) {
        for field in &variant.fields {
            if mentions(field.ty, &params)
                && let Some(bound) = pick(field, shape)
            {
                let ty = field.ty;
                bounds.push(quote!(#ty: #bound));
            }
        }
    }
    bounds
}

/// `where` with the input's own predicates plus `extra`.
pub fn where_clause(input: &Input, extra: &[TokenStream]) -> TokenStream {
    let own = input
        .generics
        .where_clause
        .iter()
        .flat_map(|w| w.predicates.iter());
    quote!(where #(#own,)* #(#extra,)*)
}

/// The bound on every `A2aError` impl: the trait's supertrait, stated through a trait whose
/// message says where `Display` comes from. The binder keeps it from being a "trivial" bound,
/// so a type without `std::error::Error` gets one error, from [`error_check`], not a second
/// one at the impl.
pub fn error_bound(input: &Input) -> TokenStream {
    let p = input.private();
    quote!(for<'__a> Self: #p::IsStdError)
}

/// The one error for a type that is not `std::error::Error` (a missing
/// `#[derive(thiserror::Error)]`), with the hint; generic types are checked where used.
pub fn error_check(input: &Input) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let p = input.private();
    let ident = input.ident;
    quote! {
        const _: () = {
            let _ = #p::is_std_error::<#ident>;
        };
    }
}
