//! Interop: the official A2A Python client (a2a-sdk 1.3.0 from PyPI) against the example agent,
//! over JSON-RPC and REST. `.ci/run` installs the SDK into `.venv`. On a machine without it
//! the test prints why it is skipped and passes, unless `A2A_INTEROP_REQUIRED=1` (CI) makes a
//! missing SDK a failure.

#[path = "../examples/agent/app.rs"]
#[allow(dead_code)]
mod app;

use std::path::PathBuf;
use std::process::Command;

fn python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("A2A_INTEROP_PYTHON").map(PathBuf::from),
        Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/.venv/bin/python"
        ))),
    ];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import a2a.client, a2a.utils.errors"])
            .current_dir(std::env::temp_dir())
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_client_reads_our_errors() {
    let Some(python) = python() else {
        let reason =
            "the a2a-sdk Python package is not installed (run .ci/run, or set A2A_INTEROP_PYTHON)";
        assert!(
            std::env::var("A2A_INTEROP_REQUIRED").is_err(),
            "interop required but {reason}"
        );
        println!("skipping Python interop: {reason}");
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app::router()).await.unwrap() });
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/python_client.py"
    );
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let output = tokio::process::Command::new(&python)
            .args([script, &url, binding])
            .current_dir(std::env::temp_dir())
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{binding}: {stdout}\n{stderr}");
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
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
