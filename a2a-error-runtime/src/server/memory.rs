//! [`return_freed_memory`]: so that the memory bounds of this crate's stores hold in the
//! process's resident memory, not only in their accounting.
//!
//! glibc's `malloc` serves an allocation of 128 KiB or more as a mapping of its own, returned
//! to the system when freed, but raises that threshold (up to 32 MiB) each time such a block
//! is freed: after a few large requests, request bodies, replies and records come from its
//! heaps, which keep what is freed. Measured with the example agent and 40 messages of 4 MiB
//! kept by stores bounded at 128 MiB in all: 281 MB resident with the threshold moving,
//! 146 MB with it fixed.
//!
//! glibc also keeps freed small blocks (past each thread's cache of a few of every size) in
//! "fast bins", unmerged with their free neighbours, until an allocation of 1 KiB or more
//! merges them all at once. A server that frees many small blocks a request and makes a few
//! large ones (hyper's 8 KiB read buffer, the SDK's execution channel) paid that walk on every
//! request: on the SDK bridge's SendMessage, `malloc_consolidate` and the unmerged blocks it
//! left were 2.6 µs of ~95 µs (perf at once). With fast bins off, such a block is merged when
//! it is freed, so it does not pin its neighbours either: the bridge's success path read
//! 1.02× (0.99–1.04×) at once, the example agent's error path and the SDK's own agent level.

/// Fixes glibc's mmap threshold at 128 KiB (its default, which it would otherwise raise), so
/// that large blocks go back to the system when freed, and turns off its fast bins, so that a
/// freed small block is merged with its free neighbours at once (see the module's docs). Call
/// it once, first thing in `main`.
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
        /// glibc's `M_MXFAST`: the largest block a fast bin keeps (0: none).
        const M_MXFAST: i32 = 1;
        // SAFETY: `mallopt` is glibc's documented way to set these; it takes the allocator's
        // own lock and only changes where later allocations come from and how frees are kept.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
            mallopt(M_MXFAST, 0);
        }
    }
}
