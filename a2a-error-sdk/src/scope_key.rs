//! A caller's scope as the bridge keys what it owns (tasks, followers, streams).

/// A caller's scope as the index keeps it: a 128-bit hash of the scope's text, `0` for the
/// anonymous caller.
pub(crate) type ScopeKey = u128;

/// The key of `scope` (see [`ScopeKey`]).
pub(crate) fn key_of(scope: Option<&str>) -> ScopeKey {
    match scope {
        // Never 0: the anonymous key is not a hash of any text.
        Some(text) => xxhash_rust::xxh3::xxh3_128(text.as_bytes()).max(1),
        None => 0,
    }
}

/// `key` as 32 lowercase hex digits, as service params and the shared store carry it (without
/// the formatting machinery: it is written on every request).
pub(crate) fn hex(key: ScopeKey) -> String {
    a2a_error_runtime::wire::hex::string(&key.to_be_bytes())
}

/// The key [`hex`] wrote; `None` for any other text.
pub(crate) fn read(hex: &str) -> Option<ScopeKey> {
    a2a_error_runtime::wire::hex::read::<16>(hex.as_bytes()).map(u128::from_be_bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_the_keys_32_digits() {
        for key in [0, 1, 0xabc, u128::MAX, super::key_of(Some("t:alice"))] {
            assert_eq!(super::hex(key), format!("{key:032x}"));
            assert_eq!(u128::from_str_radix(&super::hex(key), 16), Ok(key));
            assert_eq!(super::read(&super::hex(key)), Some(key));
        }
    }
}
