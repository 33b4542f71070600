//! Compile-time checks of `#[derive(A2aError)]`: each case in tests/ui must fail to build with
//! the message in its .stderr, pointing at the offending attribute; each in tests/ui-pass must
//! build warning-free. The .stderr files match the toolchain pinned in rust-toolchain.toml;
//! regenerate with `TRYBUILD=overwrite cargo test -p a2a-error-ui-tests`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui-pass/*.rs");
}
