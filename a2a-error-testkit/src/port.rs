//! Ports for processes a test starts, and ports nothing listens on.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where [`free_port`] starts and how many ports it walks: below Linux's default ephemeral
/// range (32768–60999), from which `bind(0)` and outgoing connections take theirs.
const FIRST: u32 = 20_000;
const SPAN: u32 = 12_000;

/// A port on 127.0.0.1 for a process the test starts (`--addr 127.0.0.1:PORT`), free when
/// asked. A port taken with `bind(0)` and released is no good for this: until the child
/// binds it, any `bind(0)` or connection beside it may be given the same port, and the test
/// then talks to someone else. These come from below the ephemeral range, and this process
/// never hands one out twice.
pub fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Test processes that run one after another start at different places.
    let start = std::process::id().wrapping_mul(7919);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(n < SPAN, "no free port left below the ephemeral range");
        let port = (FIRST + start.wrapping_add(n) % SPAN) as u16;
        if TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).is_ok() {
            return port;
        }
    }
}

/// A URL where nothing listens: a dependency that is down. Its port stays bound, never
/// listening, until the process exits, so that no server (of this test or another running
/// beside it) can be given it: a connection is refused, every time.
pub fn closed_url() -> String {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("a port on 127.0.0.1");
    let url = format!("http://{}", socket.local_addr().expect("its address"));
    // Held, not listening: one descriptor per call, for the life of the test process.
    std::mem::forget(socket);
    url
}
