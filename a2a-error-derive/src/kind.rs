//! The `{Name}Kind` enum of an error enum and its `HasKind` impl. The fallback emits the same items, so code using them compiles while the real
//! mistake is reported.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Input;

/// The kind enum; nothing for a struct. It stands outside the `const _` block the impls are
/// in, so users can name it.
pub fn kind_enum(input: &Input) -> TokenStream {
    if !input.is_enum {
        return TokenStream::new();
    }
    let ident = input.ident;
    let vis = input.vis;
    let kind = input.kind_ident();
    let names = input.variants.iter().map(|variant| variant.ident);
    let doc = format!(
        "The variants of [`{ident}`] without their fields, each named as its variant there, for \
         exhaustive `match`es on decoded errors."
    );
    // No doc a variant: the enum's says what each is, and 64 doc attributes cost a crate of
    // errors 2% of its rebuild.
    quote! {
        #[doc = #doc]
        #[allow(missing_docs)]
        #vis enum #kind {
            #(#names,)*
        }
    }
}

/// The kind enum's inherent impl, `Debug` (its name, from one array rather than a match) and
/// the traits a `#[derive]` would give it (`Copy`, `Clone`, `PartialEq`, `Eq`, `Hash`), written
/// on its discriminant: rustc expands each built-in derive over the whole enum, 3% of a
/// 64-variant enum's touched rebuild. (What a derive adds beyond these, `StructuralPartialEq`,
/// only lets a `const` of the kind be a pattern; the variants themselves are patterns either
/// way.)
pub fn kind_impl(input: &Input) -> TokenStream {
    if !input.is_enum {
        return TokenStream::new();
    }
    let p = input.private();
    let ident = input.ident;
    let kind = input.kind_ident();
    let names: Vec<String> = input.variants.iter().map(|v| v.ident.to_string()).collect();
    // The two arrays as text (`lex`): a path and a string a variant.
    let all = crate::lex::lex(
        &names
            .iter()
            .map(|name| format!("Self::{name},"))
            .collect::<String>(),
    );
    let name_strs = crate::lex::lex(
        &names
            .iter()
            .map(|name| format!("{name:?},"))
            .collect::<String>(),
    );
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
    let (eq, hash) = if names.is_empty() {
        (quote!(match *self {}), quote!(match *self {}))
    } else {
        (
            quote!(*self as isize == *other as isize),
            quote!(#p::Hash::hash(&(*self as isize), state)),
        )
    };
    let name = if names.is_empty() {
        quote!(match self {})
    } else {
        quote!([#name_strs][self as usize])
    };
    quote! {
        impl #kind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [Self] = &[#all];

            /// The variant's name.
            pub const fn name(self) -> &'static str {
                #name
            }

            #from_error_object
        }

        #[automatically_derived]
        impl #p::Copy for #kind {}

        #[automatically_derived]
        impl #p::Clone for #kind {
            #[inline]
            fn clone(&self) -> Self {
                *self
            }
        }

        #[automatically_derived]
        impl #p::PartialEq for #kind {
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                #eq
            }
        }

        #[automatically_derived]
        impl #p::Eq for #kind {}

        #[automatically_derived]
        impl #p::Hash for #kind {
            fn hash<H: #p::Hasher>(&self, state: &mut H) {
                #hash
            }
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
