//! A thread's scratch for bytes whose size is known only once they are written (a reply, the
//! dedup's record of it): written there, then copied out into a block of their size. A `Vec`
//! grown as it is written would keep its spare room for as long as what it holds is kept.

use std::cell::RefCell;

/// The most a thread's scratch keeps between uses (a larger one is freed after).
const KEPT_BYTES: usize = 64 << 10;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `write` given this thread's scratch, empty: it writes there and copies out what it keeps.
/// A `write` that needs a scratch again while it writes (a value written inside another) is
/// given one of its own.
pub fn with<T>(write: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    SCRATCH.with(|scratch| {
        let mut own = Vec::new();
        let mut kept = scratch.try_borrow_mut();
        let out = match kept.as_deref_mut() {
            Ok(kept) => kept,
            Err(_) => &mut own,
        };
        out.clear();
        let written = write(out);
        if out.capacity() > KEPT_BYTES {
            *out = Vec::new();
        }
        written
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_use_starts_empty_and_a_nested_one_has_its_own() {
        let outer = with(|out| {
            out.extend_from_slice(b"outer");
            let inner = with(|inner| {
                inner.extend_from_slice(b"inner");
                inner.to_vec()
            });
            assert_eq!(inner, b"inner");
            out.to_vec()
        });
        assert_eq!(outer, b"outer");
        assert_eq!(with(|out| out.len()), 0);
        // A large one is not kept.
        with(|out| out.resize(KEPT_BYTES + 1, 0));
        SCRATCH.with(|kept| assert_eq!(kept.borrow().capacity(), 0));
    }
}
