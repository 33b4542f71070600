//! `#[derive(A2aError)]`. Use it through the `a2a-error` crate; the derive's own rustdoc is
//! the attribute reference (`src/attributes.md`).
//!
//! parse (`attr`, `ast`) → resolve table defaults (`wire`) → check (`valid`) → generate
//! (`expand`, with `bounds` and `kind`). Every attribute error is collected (`ctxt`) and
//! reported at once; on invalid input `fallback` still emits every item next to the
//! `compile_error!`s, so one mistake gives one error.

mod ast;
mod attr;
mod bounds;
mod case;
mod ctxt;
mod expand;
mod fallback;
mod kind;
mod template;
mod valid;
mod wire;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

#[doc = include_str!("attributes.md")]
#[proc_macro_derive(A2aError, attributes(a2a))]
pub fn derive_a2a_error(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
