//! `HasKind`: the variant of a value, and of a received error object, as the kind enum.

use proc_macro2::TokenStream;
use quote::quote;

use super::*;

impl Expander<'_> {
    pub(super) fn has_kind(&self) -> TokenStream {
        let p = &self.p;
        let kind = self.input.kind_ident();
        let arms = self.rows.iter().map(|(variant, _)| {
            let pattern = variant.pattern_any();
            let name = variant.ident;
            quote!(#pattern => #kind::#name,)
        });
        let kind_match = self.match_self(arms);
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
