//! The listener of a `compare.sh` baseline: bound to the address given as the first argument,
//! or to `default`.

/// Binds the address of the first argument, else `default`.
pub async fn listener(default: &str) -> tokio::net::TcpListener {
    let addr = std::env::args().nth(1).unwrap_or_else(|| default.into());
    tokio::net::TcpListener::bind(&addr)
        .await
        .expect("a free port")
}
