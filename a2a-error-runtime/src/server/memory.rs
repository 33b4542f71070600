//! [`return_freed_memory`]: so that the memory bounds of this crate's stores hold in the
//! process's resident memory, not only in their accounting.
//!
//! glibc's `malloc` serves an allocation of 128 KiB or more as a mapping of its own, returned
//! to the system when freed, but raises that threshold (up to 32 MiB) each time such a block
//! is freed: after a few large requests, request bodies, replies and records come from its
//! heaps, which keep what is freed. Measured with the example agent and 40 messages of 4 MiB
//! kept by stores bounded at 128 MiB in all: 281 MB resident with the threshold moving,
//! 146 MB with it fixed.

/// Fixes glibc's mmap threshold at 128 KiB (its default, which it would otherwise raise), so
/// that large blocks go back to the system when freed. Call it once, first thing in `main`.
/// Does nothing on other platforms and C libraries (which do not move the threshold), or
/// under another global allocator than the system's.
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// fn main() {
///     a2a_error::server::return_freed_memory();
///     // … build the runtime and serve
/// }
/// ```
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        /// glibc's `M_MMAP_THRESHOLD`.
        const M_MMAP_THRESHOLD: i32 = -3;
        // SAFETY: `mallopt` is glibc's documented way to set this; it takes the allocator's
        // own lock and only changes where later allocations come from.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        }
    }
}
