//! The `{Name}Kind` enum of an error enum and its `HasKind` impl. The fallback emits the same items, so code using them compiles while the real
//! mistake is reported.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use crate::ast::Input;

/// The kind enum; nothing for a struct. It stands outside the `const _` block the impls are
/// in, so users can name it.
pub fn kind_enum(input: &Input) -> TokenStream {
    if !input.is_enum {
        return TokenStream::new();
    }
    let p = input.private_path();
    let ident = input.ident;
    let vis = input.vis;
    let kind = input.kind_ident();
    let names = input.variants.iter().map(|variant| variant.ident);
    let doc = format!(
        "The variants of [`{ident}`] without their fields, for exhaustive `match`es on decoded \
         errors."
    );
    let variant_docs = input
        .variants
        .iter()
        .map(|variant| format!("[`{ident}::{}`]", variant.ident));
    quote! {
        #[doc = #doc]
        #[derive(#p::Copy, #p::Clone, #p::PartialEq, #p::Eq, #p::Hash)]
        #vis enum #kind {
            #(#[doc = #variant_docs] #names,)*
        }
    }
}

/// The kind enum's inherent impl and `Debug` (its name, from one array rather than a match).
pub fn kind_impl(input: &Input) -> TokenStream {
    if !input.is_enum {
        return TokenStream::new();
    }
    let p = input.private();
    let ident = input.ident;
    let kind = input.kind_ident();
    let names: Vec<&Ident> = input.variants.iter().map(|variant| variant.ident).collect();
    let name_strs = names.iter().map(|name| name.to_string());
    let from_error_object = if input.generics.params.is_empty() {
        quote! {
            /// The kind of error `obj` stands for (`HasKind::kind_of` of the error type).
            pub fn from_error_object(obj: &#p::ErrorObject) -> #p::Option<Self> {
                <#ident as #p::HasKind>::kind_of(obj)
            }
        }
    } else {
        TokenStream::new()
    };
    let name = if names.is_empty() {
        quote!(match self {})
    } else {
        quote!([#(#name_strs),*][self as usize])
    };
    quote! {
        #[automatically_derived]
        impl #kind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [Self] = &[#(Self::#names),*];

            /// The variant's name.
            pub const fn name(self) -> &'static str {
                #name
            }

            #from_error_object
        }

        #[automatically_derived]
        impl #p::Debug for #kind {
            #[inline]
            fn fmt(&self, f: &mut #p::Formatter<'_>) -> #p::FmtResult {
                f.write_str(self.name())
            }
        }
    }
}

/// The `HasKind` impl, given the bodies of `kind` and `kind_of`: reached through the trait
/// only, as every item this derive adds to the user's type (an inherent `kind()` would
/// collide with the idiom of `io::Error::kind`).
pub fn has_kind(
    input: &Input,
    kind_body: &TokenStream,
    kind_of_body: &TokenStream,
    kind_of_bounds: &[TokenStream],
) -> TokenStream {
    let p = input.private();
    let ident = input.ident;
    let kind = input.kind_ident();
    let (impl_generics, ty_generics, _) = input.generics.split_for_impl();
    let where_clause = crate::bounds::where_clause(input, kind_of_bounds);
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::HasKind for #ident #ty_generics #where_clause {
            type Kind = #kind;

            fn kind(&self) -> #kind {
                #kind_body
            }

            fn kind_of(__obj: &#p::ErrorObject) -> #p::Option<#kind> {
                #kind_of_body
            }
        }
    }
}
