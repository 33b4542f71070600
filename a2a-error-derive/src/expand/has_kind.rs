//! `HasKind`: the variant of a value, and of a received error object, as the kind enum.

use std::fmt::Write as _;

use proc_macro2::TokenStream;
use quote::quote;

use super::*;

impl Expander<'_> {
    pub(super) fn has_kind(&self) -> TokenStream {
        let p = &self.p;
        let kind = self.input.kind_ident();
        // As text (`lex`): one arm a variant, only paths.
        let kind_match = if self.rows.is_empty() {
            quote!(match *self {})
        } else {
            let mut text = String::from("match self {");
            for (variant, _) in &self.rows {
                let _ = write!(
                    text,
                    "{} => {kind}::{},",
                    variant.pattern_any_text(),
                    variant.ident
                );
            }
            text.push('}');
            lex(&text)
        };
        let bounds = self.field_bounds(|_, shape| match shape {
            Shape::Transparent(_) => Some(quote!(#p::FromErrorObject)),
            _ => None,
        });
        let body = if self.all_coded() {
            quote! {
                #p::find_coded(<Self as #p::Catalog>::CATALOG, __obj).map(|__row| #kind::ALL[__row])
            }
        } else {
            let chain = self.decode_chain(|variant, _| {
                let name = variant.ident;
                quote!(#p::Some(#kind::#name))
            });
            quote!(let __obj: &dyn #p::ReceivedError = __obj; #chain #p::None)
        };
        kind::has_kind(self.input, &kind_match, &body, &bounds)
    }
}
