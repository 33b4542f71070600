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
