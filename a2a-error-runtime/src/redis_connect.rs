//! How every Redis client of the crate is opened: with `TCP_NODELAY`.
//!
//! redis-rs leaves Nagle's algorithm on by default. Its connections are multiplexed: a
//! command sent while another is in flight (a call's read behind the previous call's write
//! on a task of its own, two requests' dedup records) then waits in the kernel until the first
//! is acknowledged, which on a real network comes with its reply: a second round trip
//! (measured by `benches/quota.rs` through a proxy adding 10 ms to each reply: half the calls
//! took two round trips; with `TCP_NODELAY`, one).

/// A client of the Redis at `url` whose connections send each command at once.
pub(crate) fn open(url: &str) -> redis::RedisResult<redis::Client> {
    use redis::IntoConnectionInfo;
    let info = url.into_connection_info()?;
    let tcp = info.tcp_settings().clone().set_nodelay(true);
    redis::Client::open(info.set_tcp_settings(tcp))
}
