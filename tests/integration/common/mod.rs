//! What the loopback test files share.

pub mod agent;
pub mod calling;
pub mod conformance;
pub mod proxy;
pub mod requests;

use axum::Router;

/// Serves `router` on a fresh 127.0.0.1 port with `a2a_error::server::serve` and its default
/// limits, as the example agent does; returns `http://127.0.0.1:PORT`.
pub async fn serve(router: Router) -> String {
    serve_with(router, a2a_error::server::ServeLimits::default()).await
}

/// Serves `router` within `limits`; returns `http://127.0.0.1:PORT`.
pub async fn serve_with(router: Router, limits: a2a_error::server::ServeLimits) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { a2a_error::server::serve(listener, router, limits).await });
    format!("http://{addr}")
}

/// The built example `name` (test binaries live in target/<profile>/deps, examples in
/// target/<profile>/examples; `cargo test --workspace` builds them).
pub fn example_exe(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        example.exists(),
        "{} is missing: run `cargo test --workspace`, which builds the examples",
        example.display()
    );
    example
}

/// An example's process, killed when dropped.
pub struct ExampleProcess(std::process::Child);

impl From<std::process::Child> for ExampleProcess {
    fn from(child: std::process::Child) -> Self {
        ExampleProcess(child)
    }
}

impl ExampleProcess {
    /// Kills the process with `kill -9` (no chance to clean up), now.
    pub fn kill_9(&self) {
        let status = std::process::Command::new("kill")
            .args(["-9", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Its resident memory now (`VmRSS`), in bytes (Linux).
    pub fn rss(&self) -> u64 {
        self.status_bytes("VmRSS:")
    }

    /// Its peak resident memory so far (`VmHWM`), in bytes (Linux).
    pub fn peak_rss(&self) -> u64 {
        self.status_bytes("VmHWM:")
    }

    /// A `kB` field of its `/proc/PID/status`, in bytes.
    fn status_bytes(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kib << 10
    }
}

impl Drop for ExampleProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts example `name` with `--addr 127.0.0.1:PORT` and `args`, waits until it accepts
/// connections, and returns it with `http://127.0.0.1:PORT`.
pub fn start_example(name: &str, args: &[&str]) -> (ExampleProcess, String) {
    start_example_with_env(name, args, &[])
}

/// [`start_example`] with `env` added to the process's environment.
pub fn start_example_with_env(
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (ExampleProcess, String) {
    use std::time::Duration;
    let port = a2a_error_testkit::free_port();
    let child = std::process::Command::new(example_exe(name))
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .args(args)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let process = ExampleProcess(child);
    wait_until_listening(
        port,
        Duration::from_secs(20),
        &format!("the {name} example"),
    );
    (process, format!("http://127.0.0.1:{port}"))
}

/// Returns once something accepts connections on 127.0.0.1:`port`; fails the test, naming
/// `what`, if nothing does `within` that long.
pub fn wait_until_listening(port: u16, within: std::time::Duration, what: &str) {
    let deadline = std::time::Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not start listening on port {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs example `name` with `args` to its end: its exit code and stdout.
pub fn run_example(name: &str, args: &[&str]) -> (i32, String) {
    let output = std::process::Command::new(example_exe(name))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// Starts the `sdk_agent` example serving gRPC too: it, its HTTP URL and its gRPC target
/// (`127.0.0.1:PORT`), once both accept connections.
pub fn start_grpc_agent() -> (ExampleProcess, String, String) {
    start_grpc_agent_with_env(&[])
}

/// [`start_grpc_agent`] with `env` added to the process's environment.
pub fn start_grpc_agent_with_env(env: &[(&str, &str)]) -> (ExampleProcess, String, String) {
    let port = a2a_error_testkit::free_port();
    let grpc = format!("127.0.0.1:{port}");
    let (process, url) = start_example_with_env("sdk_agent", &["--grpc", &grpc], env);
    let within = std::time::Duration::from_secs(20);
    wait_until_listening(port, within, "the sdk_agent's gRPC listener");
    (process, url, grpc)
}

/// The output contract of the example clients for `flaky:2`: two failed attempts, each with
/// its wait, then the third's reply, exit code 0.
pub fn assert_flaky_2_output(code: i32, out: &str) {
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(code, 0, "{out}");
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with("attempt 1: -32053 AGENT_UNAVAILABLE"),
        "{out}"
    );
    assert!(lines[0].contains("; retrying in "), "{out}");
    assert!(
        lines[1].starts_with("attempt 2: -32053 AGENT_UNAVAILABLE"),
        "{out}"
    );
    assert_eq!(lines[2], "attempt 3: ok", "{out}");
    assert_eq!(lines[3], "reply: echo: flaky:2", "{out}");
}

/// Reads a stream to its end: how many items were `Ok`, and the last error, if any.
pub async fn drain<T, E>(
    stream: impl futures_util::Stream<Item = Result<T, E>>,
) -> (usize, Option<E>) {
    use futures_util::StreamExt;
    let mut stream = std::pin::pin!(stream);
    let (mut seen, mut last) = (0, None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(_) => seen += 1,
            Err(error) => last = Some(error),
        }
    }
    (seen, last)
}

/// The W3C trace context of each call `agent` received, in order: its `traceparent` (which
/// every call must carry, valid) and its `tracestate`.
pub fn traces_sent(agent: &a2a_error_testkit::FaultAgent) -> Vec<a2a_error::trace::TraceContext> {
    agent
        .received()
        .iter()
        .map(|call| {
            let parent = call.traceparent.as_deref().expect("a traceparent");
            let state = call.headers.get("tracestate").map(|value| value.as_bytes());
            a2a_error::trace::TraceContext::parse(parent.as_bytes(), state)
                .unwrap_or_else(|| panic!("not a valid traceparent: {parent}"))
        })
        .collect()
}

/// An SDK executor that does nothing: for a bridge whose requests never reach one.
pub struct Nothing;

impl a2a_server::AgentExecutor for Nothing {
    fn execute(
        &self,
        _: a2a_server::ExecutorContext,
    ) -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
        Box::pin(futures_util::stream::empty())
    }

    fn cancel(
        &self,
        _: a2a_server::ExecutorContext,
    ) -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
        Box::pin(futures_util::stream::empty())
    }
}

/// A redis-server of the test's own, or `None` when skipped on purpose (`A2A_REDIS_SKIP=1`,
/// which prints `SKIPPED: {what}`); a test that needs one fails, saying how to install it,
/// when it cannot start.
pub fn redis_server(what: &str) -> Option<a2a_error_testkit::RedisServer> {
    if std::env::var_os("A2A_REDIS_SKIP").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: {what} (A2A_REDIS_SKIP=1)");
        return None;
    }
    match a2a_error_testkit::RedisServer::spawn() {
        Ok(server) => Some(server),
        Err(error) => panic!(
            "cannot start redis-server ({error}): install it (`apt-get install -y \
             redis-server`), or skip these tests on purpose with A2A_REDIS_SKIP=1"
        ),
    }
}
