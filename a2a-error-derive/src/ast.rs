//! A typed view of the derive input, borrowing from syn. A struct is one variant whose
//! attributes stand on the struct itself.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Generics, Ident, Member, Type};

use crate::attr::{self, FieldAttrs, ItemAttrs, Position};
use crate::case::lower_camel;
use crate::ctxt::Ctxt;

pub struct Input<'a> {
    pub ident: &'a Ident,
    pub vis: &'a syn::Visibility,
    pub generics: &'a Generics,
    /// The enum's own attributes (`domain`, `kind`); for a struct, all of them.
    pub attrs: ItemAttrs,
    pub is_enum: bool,
    pub variants: Vec<Variant<'a>>,
}

pub struct Variant<'a> {
    pub ident: &'a Ident,
    /// The path that names this variant in patterns: `Self::Name`, or `Self` for a struct.
    pub path: TokenStream,
    /// `path` as text, for the parts of the expansion written as text (`lex`).
    pub path_text: String,
    pub fields: Vec<Field<'a>>,
    pub style: Style,
    /// Empty for a struct: its attributes are `Input::attrs`.
    pub attrs: ItemAttrs,
    pub span: Span,
}

#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Style {
    Named,
    Tuple,
    Unit,
}

pub struct Field<'a> {
    pub member: Member,
    pub ty: &'a Type,
    pub attrs: FieldAttrs,
    /// The local name a pattern binds this field to.
    pub binding: Ident,
}

impl Field<'_> {
    pub fn is_data(&self) -> bool {
        self.attrs.data.is_some()
    }

    /// The key this data field has on the wire, if it can have one.
    pub fn data_key(&self) -> Option<String> {
        let rename = self.attrs.data.as_ref()?;
        match (&rename.value, &self.member) {
            (Some(rename), _) => Some(rename.clone()),
            (None, Member::Named(ident)) => Some(lower_camel(&ident.to_string())),
            (None, Member::Unnamed(_)) => None,
        }
    }

    /// How a message template names this field: its name, or its tuple index.
    pub fn template_name(&self) -> String {
        match &self.member {
            Member::Named(ident) => ident.to_string().trim_start_matches("r#").to_owned(),
            Member::Unnamed(index) => index.index.to_string(),
        }
    }
}

impl<'a> Input<'a> {
    /// `None` only for input that cannot become an error at all (a union).
    pub fn from_syn(cx: &Ctxt, node: &'a DeriveInput) -> Option<Self> {
        match &node.data {
            Data::Enum(data) => {
                let attrs = attr::item(cx, &node.attrs, Position::Enum);
                let variants = data
                    .variants
                    .iter()
                    .map(|variant| {
                        let ident = &variant.ident;
                        Variant::new(
                            cx,
                            ident,
                            quote!(Self::#ident),
                            &variant.fields,
                            attr::item(cx, &variant.attrs, Position::Variant),
                        )
                    })
                    .collect();
                Some(Input {
                    ident: &node.ident,
                    vis: &node.vis,
                    generics: &node.generics,
                    attrs,
                    is_enum: true,
                    variants,
                })
            }
            Data::Struct(data) => {
                let attrs = attr::item(cx, &node.attrs, Position::Struct);
                let variant = Variant::new(
                    cx,
                    &node.ident,
                    quote!(Self),
                    &data.fields,
                    ItemAttrs::default(),
                );
                Some(Input {
                    ident: &node.ident,
                    vis: &node.vis,
                    generics: &node.generics,
                    attrs,
                    is_enum: false,
                    variants: vec![variant],
                })
            }
            Data::Union(_) => {
                cx.error(
                    node.ident.span(),
                    "#[derive(A2aError)] supports enums and structs, not unions: an error must be \
                     an enum of cases or a struct",
                );
                None
            }
        }
    }

    /// The attributes that describe variant `variant` on the wire.
    pub fn variant_attrs<'v>(&'v self, variant: &'v Variant) -> &'v ItemAttrs {
        if self.is_enum {
            &variant.attrs
        } else {
            &self.attrs
        }
    }

    /// What generated code names everything through: `__a2a`, the alias of
    /// [`private_path`](Self::private_path) that the one `const _` block around the impls
    /// declares (a path of one segment instead of three, in a few hundred places of a large
    /// enum's expansion: less for rustc to parse and resolve in the user's crate). The parts
    /// written as text (`lex`) spell the same `__a2a`.
    pub fn private(&self) -> TokenStream {
        quote!(__a2a)
    }

    /// `::a2a_error::__private`, or the `__private` of the crate given by
    /// `#[a2a(crate = "...")]`.
    pub fn private_path(&self) -> TokenStream {
        match &self.attrs.krate {
            Some(krate) => {
                let path = &krate.value;
                quote!(#path::__private)
            }
            None => quote!(::a2a_error::__private),
        }
    }

    /// Whether to emit the axum `IntoResponse` impl (`#[a2a(into_response = false)]` opts out).
    pub fn emits_into_response(&self) -> bool {
        self.attrs
            .into_response
            .as_ref()
            .is_none_or(|opt| opt.value)
    }

    /// The name of the generated kind enum.
    pub fn kind_ident(&self) -> Ident {
        match &self.attrs.kind {
            Some(kind) => kind.value.clone(),
            None => format_ident!("{}Kind", self.ident),
        }
    }
}

impl<'a> Variant<'a> {
    /// Whether any field is published as data (`#[a2a(data)]`).
    pub fn has_data(&self) -> bool {
        self.fields.iter().any(Field::is_data)
    }

    fn new(
        cx: &Ctxt,
        ident: &'a Ident,
        path: TokenStream,
        fields: &'a Fields,
        attrs: ItemAttrs,
    ) -> Self {
        let style = match fields {
            Fields::Named(_) => Style::Named,
            Fields::Unnamed(_) => Style::Tuple,
            Fields::Unit => Style::Unit,
        };
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, field)| Field {
                member: match &field.ident {
                    Some(ident) => Member::Named(ident.clone()),
                    None => Member::Unnamed(i.into()),
                },
                ty: &field.ty,
                attrs: attr::field(cx, &field.attrs),
                binding: format_ident!("__field{}", i),
            })
            .collect();
        let path_text = path.to_string();
        Variant {
            ident,
            path,
            path_text,
            fields,
            style,
            attrs,
            span: ident.span(),
        }
    }

    /// A pattern binding every field to its `binding`.
    pub fn pattern(&self) -> TokenStream {
        let path = &self.path;
        let members = self.fields.iter().map(|f| &f.member);
        let bindings = self.fields.iter().map(|f| &f.binding);
        match self.style {
            Style::Named => quote!(#path { #(#members: #bindings),* }),
            Style::Tuple => quote!(#path ( #(#bindings),* )),
            Style::Unit => quote!(#path),
        }
    }

    /// A pattern binding only the fields `bind` selects; the rest are ignored.
    pub fn pattern_binding(&self, bind: impl Fn(&Field) -> bool) -> TokenStream {
        let path = &self.path;
        match self.style {
            Style::Named => {
                let bound = self.fields.iter().filter(|f| bind(f)).map(|f| {
                    let (member, binding) = (&f.member, &f.binding);
                    quote!(#member: #binding)
                });
                quote!(#path { #(#bound,)* .. })
            }
            Style::Tuple => {
                let items = self.fields.iter().map(|f| {
                    if bind(f) {
                        let binding = &f.binding;
                        quote!(#binding)
                    } else {
                        quote!(_)
                    }
                });
                quote!(#path ( #(#items),* ))
            }
            Style::Unit => quote!(#path),
        }
    }

    /// [`pattern_any`](Self::pattern_any) as text (a braced pattern fits every style).
    pub fn pattern_any_text(&self) -> String {
        format!("{} {{ .. }}", self.path_text)
    }

    /// A pattern binding nothing.
    pub fn pattern_any(&self) -> TokenStream {
        let path = &self.path;
        match self.style {
            Style::Named => quote!(#path { .. }),
            Style::Tuple => quote!(#path (..)),
            Style::Unit => quote!(#path),
        }
    }

    /// The transparent variant's single field.
    pub fn transparent_field(&self) -> Option<&Field<'a>> {
        match self.fields.as_slice() {
            [field] => Some(field),
            _ => None,
        }
    }
}
