//! Code generation for valid input, one impl a file: `a2a_error` (the `A2aError` impl and its
//! encoded forms), `mirror` (`FromErrorObject`: the client mirror), `catalog` (the `Catalog`
//! trait), `has_kind` (`HasKind` over the kind enum of `crate::kind`), `response` (axum's
//! `IntoResponse`); the SDK and tonic conversions are `crate::sdk`. Every path goes through the
//! runtime's `__private` (see [`Input::private`]); bounds come from `crate::bounds`.

mod a2a_error;
mod catalog;
mod has_kind;
mod mirror;
mod response;

use a2a_error_codes::PROJECT_DOMAIN;
use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::spanned::Spanned as _;
use syn::{Ident, Type};

use crate::ast::{Field, Input, Variant};
use crate::bounds;
use crate::kind;
use crate::lex::lex;
use crate::wire::{Domain, Retry, Shape, Wire};

/// An integer expression for `code` (negative literals as `-N`).
pub(super) fn int(code: i32) -> TokenStream {
    let magnitude = Literal::i64_unsuffixed(i64::from(code).abs());
    if code < 0 {
        quote!(-#magnitude)
    } else {
        quote!(#magnitude)
    }
}

// A table category, retry advice and domain, each written once as text: the catalog rows
// are text (`lex`), and the other impls take the same text as tokens.

pub(super) fn category_text(category: a2a_error_codes::Category) -> String {
    format!("__a2a::Category::{category:?}")
}

pub(super) fn retry_text(retry: Retry) -> String {
    match retry {
        Retry::Never => "__a2a::RetryHint::Never".to_owned(),
        Retry::Backoff => "__a2a::RetryHint::Backoff".to_owned(),
        Retry::After(seconds) => format!("__a2a::after({seconds})"),
    }
}

pub(super) fn domain_text(domain: &Domain) -> String {
    match domain {
        Domain::Literal(domain) => format!("{domain:?}"),
        Domain::Package => "__a2a::env!(\"CARGO_PKG_NAME\")".to_owned(),
    }
}

pub(super) fn category_tokens(category: a2a_error_codes::Category) -> TokenStream {
    lex(&category_text(category))
}

pub(super) fn retry_tokens(retry: Retry) -> TokenStream {
    lex(&retry_text(retry))
}

pub(super) fn domain_tokens(domain: &Domain) -> TokenStream {
    lex(&domain_text(domain))
}

/// The domain the enum gives errors it wraps whose own domain is the project's placeholder:
/// its `domain` attribute, else the package name.
pub(super) fn container_domain(input: &Input) -> TokenStream {
    let domain = match &input.attrs.domain {
        Some(domain) => Domain::Literal(domain.value.clone()),
        None => Domain::Package,
    };
    domain_tokens(&domain)
}

pub(crate) struct Expander<'a> {
    input: &'a Input<'a>,
    shapes: &'a [Shape<'a>],
    rows: Vec<(&'a Variant<'a>, &'a Shape<'a>)>,
    p: TokenStream,
}

impl<'a> Expander<'a> {
    pub(crate) fn new(input: &'a Input<'a>, shapes: &'a [Shape<'a>]) -> Self {
        Expander {
            input,
            shapes,
            rows: input.variants.iter().zip(shapes).collect(),
            p: input.private(),
        }
    }

    pub(crate) fn all(&self) -> TokenStream {
        let a2a_error = self.a2a_error_impl();
        let mirror = self.mirror_impl();
        let catalog = self.catalog_impl();
        let kind = kind::kind_impl(self.input);
        let error_check = bounds::error_check(self.input);
        quote! {
            #error_check
            #a2a_error
            #mirror
            #catalog
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
}

/// `binding` with the span of the field's type, so errors about the type point at the field.
pub(super) fn at(binding: &Ident, ty: &Type) -> Ident {
    Ident::new(&binding.to_string(), ty.span())
}
