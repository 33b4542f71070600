//! `#[derive(A2aError)]`. Use it through the `a2a-error` crate; the derive's own rustdoc is
//! the attribute reference (`src/attributes.md`).
//!
//! parse (`attr`, `ast`) → resolve table defaults (`wire`) → check (`valid`) → generate
//! (`expand/`, one impl a file, with `bounds`, `kind` and `sdk`; `lex` for what is written as
//! text). Every attribute error is collected (`ctxt`) and reported at once; on invalid input
//! `fallback` still emits every item next to the `compile_error!`s, so one mistake gives one
//! error. [`derive`] is the one place that chooses between the two, so `expand` and
//! `fallback` never name each other.

mod ast;
mod attr;
mod bounds;
mod case;
mod ctxt;
mod expand;
mod fallback;
mod kind;
mod lex;
mod sdk;
mod template;
mod valid;
mod wire;

use quote::quote;
use syn::{DeriveInput, parse_macro_input};

use ctxt::Ctxt;
use wire::Shape;

#[doc = include_str!("attributes.md")]
#[proc_macro_derive(A2aError, attributes(a2a))]
pub fn derive_a2a_error(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive(&input).into()
}

/// The stages in order; on invalid input, the errors and the fallback's items.
fn derive(node: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = Ctxt::default();
    let Some(input) = ast::Input::from_syn(&cx, node) else {
        return cx.into_compile_errors();
    };
    let shapes: Vec<Shape> = input
        .variants
        .iter()
        .map(|variant| wire::resolve(&cx, &input, variant))
        .collect();
    valid::check(&cx, &input, &shapes);
    let kind = kind::kind_enum(&input);
    let path = input.private_path();
    // The impls in one `const _` block with the alias their paths go through
    // (`Input::private`); the kind enum outside it, where users can name it.
    let wrap = |impls: proc_macro2::TokenStream| quote!(#kind const _: () = { use #path as __a2a; #impls };);
    if cx.has_errors() {
        // Still emit the impls, so the one mistake is the only error the user sees.
        let fallback = wrap(fallback::expand(&input));
        let errors = cx.into_compile_errors();
        return quote!(#errors #fallback);
    }
    wrap(expand::Expander::new(&input, &shapes).all())
}
