//! Rust source the derive writes as text: the repetitive parts of the expansion made only of
//! literals and paths (catalog rows, `kind()` arms, the kind's arrays). The proc macro runs
//! unoptimized in a dev build, where `quote!` token by token was a quarter of its run; rustc
//! lexes a text in one call. The spans are the call site's, as `quote!` gives them.

/// `text` as tokens: lexed by rustc where the derive runs as a macro (proc_macro2's own parse
/// checks the text with its lexer first, unoptimized in a dev build), else by proc_macro2
/// (the derive's unit tests).
pub fn lex(text: &str) -> proc_macro2::TokenStream {
    if proc_macro::is_available() {
        let tokens: proc_macro::TokenStream = text.parse().expect("the derive writes Rust");
        tokens.into()
    } else {
        text.parse().expect("the derive writes Rust")
    }
}
