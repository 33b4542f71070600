//! The benches' servers on loopback: each on a thread of its own, with a runtime of its own,
//! so that the thread being measured does the caller's work only.

/// Serves `app` on a free loopback port from a thread named `server` (so that a profile
/// tells its time from the caller's: `perf report --comm`); its base URL.
pub fn serve(app: axum::Router) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let thread = std::thread::Builder::new().name("server".into());
    thread
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await
            })
        })
        .unwrap();
    url
}
