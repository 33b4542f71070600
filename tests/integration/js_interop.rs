//! Interop with the official A2A JS SDK (@a2a-js/sdk 1.3.0 from npm): its client against the
//! agent written on the official Rust SDK and served through the bridge (`examples/sdk_agent`),
//! over both bindings. The README's test command installs the SDK into
//! `tests/interop/js/node_modules` (`npm ci`, pinned by its lock file). Without it this test
//! fails and says how to install it; `A2A_INTEROP_SKIP=1` skips it on purpose, and then it
//! says so on stderr.

use std::path::Path;

const JS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/js");

/// The file `path` of an npm package the README's test command installs under
/// `tests/interop/js/node_modules`; `None` (said on stderr) with `A2A_INTEROP_SKIP=1`, and a
/// failure saying how to install it when it is missing.
pub(crate) fn package_or_skip(path: &str) -> Option<String> {
    if std::env::var_os("A2A_INTEROP_SKIP").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: JS interop (A2A_INTEROP_SKIP=1)");
        return None;
    }
    let file = Path::new(JS).join("node_modules").join(path);
    assert!(
        file.exists(),
        "{path} is not installed: run `(cd tests/interop/js && npm ci)`, or skip on purpose \
         with A2A_INTEROP_SKIP=1"
    );
    Some(file.to_string_lossy().into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_js_client_reads_the_sdk_agent_through_the_bridge() {
    if std::env::var_os("A2A_INTEROP_SKIP").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: JS interop (A2A_INTEROP_SKIP=1)");
        return;
    }
    assert!(
        Path::new(JS).join("node_modules/@a2a-js/sdk").exists(),
        "the official JS SDK is not installed: run `(cd tests/interop/js && npm ci)`, or skip \
         on purpose with A2A_INTEROP_SKIP=1"
    );
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let output = tokio::process::Command::new("node")
            .args(["js_client.mjs", &url, binding])
            .current_dir(JS)
            .output()
            .await
            .expect("node runs (the JS interop test needs Node.js)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{binding}: {stdout}\n{stderr}");
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        let seen = &report["seen"];
        assert!(!seen.to_string().contains("hunter2"), "{binding}: {seen}");
        assert_eq!(
            seen["unsupported"]["name"], "UnsupportedOperationError",
            "{binding}"
        );
        let limited = &seen["rate_limited"];
        if binding == "JSONRPC" {
            // The client knows only the spec's reasons: ours is in the error's data.
            assert_eq!(limited["code"], -32052, "{seen}");
            assert_eq!(limited["wireReason"], "RATE_LIMITED", "{seen}");
        } else {
            assert_eq!(limited["status"], 429, "{seen}");
            assert_eq!(limited["retryAfter"], "2", "{seen}");
        }
        let stream = &seen["stream_error_after_first_event"];
        assert_eq!(stream["events"], 1, "{binding}: {seen}");
    }
}
