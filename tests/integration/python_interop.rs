//! Interop with the official A2A Python SDK (a2a-sdk 1.3.0 from PyPI), both ways: its client
//! against the example agent, and our client against an agent its server serves, over JSON-RPC
//! and REST. The README's test command installs the SDK into `.venv`. Without it these tests
//! fail and say how to install it; `A2A_INTEROP_SKIP=1` skips them on purpose, and then each
//! says so on stderr (a skip never looks like a pass by accident).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python that can import `modules`.
fn python_with(modules: &str) -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("A2A_INTEROP_PYTHON").map(PathBuf::from),
        Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/.venv/bin/python"
        ))),
    ];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", &format!("import {modules}")])
            .current_dir(std::env::temp_dir())
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

/// The Python to run; `None` only when the caller opted out with `A2A_INTEROP_SKIP=1`.
pub(crate) fn python_or_skip(modules: &str) -> Option<PathBuf> {
    if std::env::var_os("A2A_INTEROP_SKIP").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: Python interop (A2A_INTEROP_SKIP=1)");
        return None;
    }
    let python = python_with(modules);
    assert!(
        python.is_some(),
        "a Python with {modules} (a2a-sdk[http-server,grpc]==1.3.0) is not installed: run \
         `python3 -m venv .venv && .venv/bin/pip install \"a2a-sdk[http-server,grpc]==1.3.0\" \
         uvicorn==0.54.0 standardwebhooks==1.1.0 mcp==2.3.0`, set A2A_INTEROP_PYTHON, or skip on purpose with A2A_INTEROP_SKIP=1"
    );
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_client_reads_our_errors() {
    let Some(python) = python_or_skip("a2a.client, a2a.utils.errors") else {
        return;
    };
    // The example agent as its own process: its card advertises the address it listens on,
    // and the Python client calls what the card advertises.
    let (_agent, url) = crate::common::start_example("agent", &[]);
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let report = run_python_client(&python, &url, binding, &[]).await;
        let seen = &report["seen"];
        assert_eq!(
            seen["get_unknown_task"]["class"], "TaskNotFoundError",
            "{binding}"
        );
        assert_eq!(
            seen["get_unknown_task"]["data"]["taskId"], "nope",
            "{binding}"
        );
        assert_eq!(
            seen["internal_error"]["class"], "InternalError",
            "{binding}"
        );
        assert!(!seen.to_string().contains("hunter2"), "{binding}: {seen}");
        assert_eq!(seen["send_hello"]["reply"], "echo: hello", "{binding}");
        assert_eq!(
            seen["cancel_completed"]["class"], "TaskNotCancelableError",
            "{binding}"
        );
    }
}

/// The official Python client against the agent written on the official Rust SDK and served
/// through the bridge (`examples/sdk_agent`), over both bindings: typed errors, no internal
/// text, and a stream that fails after its first event read as one error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_client_reads_the_sdk_agent_through_the_bridge() {
    let Some(python) = python_or_skip("a2a.client, a2a.utils.errors") else {
        return;
    };
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let report = run_python_client(&python, &url, binding, &["streaming"]).await;
        let seen = &report["seen"];
        assert_eq!(
            seen["get_unknown_task"]["class"], "TaskNotFoundError",
            "{binding}"
        );
        assert_eq!(
            seen["internal_error"]["class"], "InternalError",
            "{binding}"
        );
        assert_eq!(seen["send_hello"]["reply"], "echo: hello", "{binding}");
        assert!(!seen.to_string().contains("hunter2"), "{binding}: {seen}");
        let stream = &seen["stream_error_after_first_event"];
        assert_eq!(stream["events"], 1, "{binding}: {seen}");
        assert_eq!(stream["class"], "InternalError", "{binding}: {seen}");
        let limited = seen["rate_limited"]["text"].as_str().unwrap();
        assert!(
            limited.contains("-32052") || limited.contains("429"),
            "{binding}: {limited}"
        );
    }
}

/// The official Python client over gRPC (a2a-sdk[grpc]) against the SDK agent, found through
/// its card: the spec's errors as the SDK's own classes, and the agent's own errors with
/// their code, reason, domain, data and delay, read from the google.rpc.Status by the SDK's
/// own `status_from_call` (its client maps a reason to a class only in the spec's domain and
/// otherwise raises a generic `A2AClientError`, whose cause keeps the status).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_grpc_client_reads_the_sdk_agent() {
    let Some(python) = python_or_skip("a2a.client.transports.grpc, a2a.utils.grpc_status") else {
        return;
    };
    let (_agent, url, _grpc) = crate::common::start_grpc_agent();
    let report = run_script(&python, "python_grpc_client.py", &[&url]).await;
    let seen = &report["seen"];
    assert_eq!(
        seen["get_unknown_task"]["class"], "TaskNotFoundError",
        "{seen}"
    );
    assert_eq!(seen["get_unknown_task"]["status"]["grpc_code"], "NOT_FOUND");
    assert_eq!(seen["internal"]["class"], "InternalError", "{seen}");
    assert_eq!(seen["internal"]["status"]["message"], "Internal error");
    let limited = &seen["rate_limited"]["status"];
    assert_eq!(limited["grpc_code"], "RESOURCE_EXHAUSTED", "{seen}");
    assert_eq!(limited["reason"], "RATE_LIMITED");
    assert_eq!(limited["domain"], "a2a-error");
    assert_eq!(limited["retry_delay_s"], 2.0);
    assert_eq!(limited["pushback_ms"], "2000");
    let unavailable = &seen["unavailable"]["status"];
    assert_eq!(unavailable["grpc_code"], "UNAVAILABLE", "{seen}");
    assert_eq!(unavailable["reason"], "AGENT_UNAVAILABLE");
    assert_eq!(unavailable["metadata"]["attempt"], "1");
    assert_eq!(seen["send_hello"]["reply"], "echo: hello", "{seen}");
    assert!(!seen.to_string().contains("hunter2"), "{seen}");
}

/// Runs `tests/interop/python_client.py URL BINDING EXTRA…` (the official Python client) and
/// returns its report; the script failing fails the test.
async fn run_python_client(
    python: &Path,
    url: &str,
    binding: &str,
    extra: &[&str],
) -> serde_json::Value {
    let mut args = vec![url, binding];
    args.extend_from_slice(extra);
    run_script(python, "python_client.py", &args).await
}

/// Runs `tests/interop/SCRIPT ARGS…` with `python` (from a directory of its own) and returns
/// the JSON report it prints; the script failing fails the test, with its output and its
/// arguments.
pub(crate) async fn run_script(python: &Path, script: &str, args: &[&str]) -> serde_json::Value {
    let script = format!("{}/tests/interop/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = tokio::process::Command::new(python)
        .arg(&script)
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap()
}

/// Starts the Python SDK's server on a free port; it stops when the returned child drops.
async fn python_agent(python: &PathBuf) -> (tokio::process::Child, String) {
    let port = a2a_error_testkit::free_port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_agent.py");
    // The SDK logs a traceback for every error it serves; keep them out of the test output.
    let log = std::env::temp_dir().join(format!("a2a-python-agent-{port}.log"));
    let child = tokio::process::Command::new(python)
        .args([script, &port.to_string()])
        .current_dir(std::env::temp_dir())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(&addr).await.is_ok() {
            return (child, format!("http://{addr}"));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    panic!("the Python agent did not start listening on {addr} within 20 s:\n{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reads_the_official_python_server() {
    use a2a_error::Client;
    use a2a_error::StandardError;
    use a2a_error::resilience::RetryPolicy;
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    let modules = "a2a.server.routes.jsonrpc_routes, starlette, uvicorn";
    let Some(python) = python_or_skip(modules) else {
        return;
    };
    let (_agent, url) = python_agent(&python).await;
    let message = |text: &str, id: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}});
    for binding in ["jsonrpc", "rest"] {
        let retries = Arc::new(AtomicU32::new(0));
        let counter = retries.clone();
        let policy = RetryPolicy::new().on_retry(move |_, _, _| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let builder = match binding {
            "jsonrpc" => Client::<StandardError>::jsonrpc(format!("{url}/")),
            _ => Client::<StandardError>::rest(url.clone()),
        };
        let client = builder.retry(policy).build().unwrap();

        let reply: Value = client
            .send_message(&message("hello", &format!("py-{binding}-1")))
            .await
            .unwrap();
        assert_eq!(
            reply["message"]["parts"][0]["text"], "echo: hello",
            "{binding}"
        );

        let error = client
            .send_message::<_, Value>(&message("fail:unsupported", &format!("py-{binding}-2")))
            .await
            .unwrap_err();
        assert!(
            matches!(error.typed(), Some(StandardError::UnsupportedOperation)),
            "{binding}: {error:?}"
        );
        assert!(!error.retry_advice().is_retryable());

        let error = client
            .call::<_, Value>("GetTask", &json!({"id": "nope"}))
            .await
            .unwrap_err();
        assert!(
            matches!(error.typed(), Some(StandardError::TaskNotFound { .. })),
            "{binding}: {error:?}"
        );
        if binding == "rest" {
            assert_eq!(error.reply_status(), Some(404));
        }
        assert_eq!(
            retries.load(Ordering::SeqCst),
            0,
            "{binding}: nothing to retry"
        );
    }

    // A method the SDK does not serve: its -32601, typed, after one attempt.
    let client = Client::<StandardError>::jsonrpc(format!("{url}/"))
        .build()
        .unwrap();
    let error = client
        .call::<_, Value>("NoSuchMethod", &json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(error.typed(), Some(StandardError::MethodNotFound)),
        "{error:?}"
    );
}

/// The official Python client, its HTTP client sending a W3C `traceparent` (as an
/// instrumented Python agent's does), calls an agent on the official Rust SDK served through
/// the bridge, whose executor calls a further agent: that call continues the Python caller's
/// trace, over both HTTP bindings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_clients_trace_continues_in_our_agent() {
    use a2a_error::sdk::{Bridge, ProtoJson};
    use a2a_error_testkit::{Answer, FaultAgent};
    let Some(python) = python_or_skip("a2a.client, httpx") else {
        return;
    };
    let downstream = FaultAgent::start(Answer::result(serde_json::json!({"id": "t"}))).await;
    let client = a2a_error::Client::jsonrpc(format!("{}/", downstream.url()))
        .retry(a2a_error::resilience::RetryPolicy::none())
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let card: ProtoJson<a2a::AgentCard> = serde_json::from_value(serde_json::json!({
        "name": "traced", "description": "calls a further agent", "version": "1",
        "supportedInterfaces": [
            {"url": format!("{url}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": false}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": []
    }))
    .unwrap();
    let handler =
        crate::common::calling::guarded(crate::common::calling::Calling { downstream: client });
    let router = Bridge::new(handler).card(card.0).router();
    let limits = a2a_error::server::ServeLimits::default();
    tokio::spawn(async move { a2a_error::server::serve(listener, router, limits).await });
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/python_traced_client.py"
    );
    for (n, binding) in [(1u8, "JSONRPC"), (2, "HTTP+JSON")] {
        let traceparent = format!("00-0af7651916cd43dd8448eb211c80{n:02x}ff-b7ad6b7169203331-01");
        let output = tokio::process::Command::new(&python)
            .args([script, &url, binding, &traceparent])
            .current_dir(std::env::temp_dir())
            .output()
            .await
            .unwrap();
        assert!(
            output.status.success(),
            "{binding}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let sent = crate::common::traces_sent(&downstream);
        let sent = sent
            .last()
            .unwrap_or_else(|| panic!("{binding}: nothing sent on"));
        assert_eq!(
            sent.trace_id().to_string(),
            format!("0af7651916cd43dd8448eb211c80{n:02x}ff"),
            "{binding}"
        );
        assert_ne!(sent.parent_id(), "b7ad6b7169203331", "{binding}");
    }
}
