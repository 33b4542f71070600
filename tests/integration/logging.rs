//! What a server logs: the example agent run as its own process, at debug level, its log
//! read from its standard output while a client makes it fail.

use std::io::BufRead;
use std::sync::{Arc, Mutex};

use crate::common::requests::{error_code, post_raw, rest_send, rpc, send};
use serde_json::json;

/// The example agent with `RUST_LOG=debug`, and everything it logs so far.
fn agent() -> (crate::common::ExampleProcess, String, Arc<Mutex<String>>) {
    example("agent")
}

/// Example `name` with `RUST_LOG=debug`, and everything it logs so far.
fn example(name: &str) -> (crate::common::ExampleProcess, String, Arc<Mutex<String>>) {
    let port = a2a_error_testkit::free_port();
    let mut child = std::process::Command::new(crate::common::example_exe(name))
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let logs = Arc::new(Mutex::new(String::new()));
    let kept = Arc::clone(&logs);
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let mut logs = kept.lock().unwrap();
            logs.push_str(&line);
            logs.push('\n');
        }
    });
    let process = crate::common::ExampleProcess::from(child);
    let within = std::time::Duration::from_secs(20);
    crate::common::wait_until_listening(port, within, &format!("the {name} example"));
    (process, format!("http://127.0.0.1:{port}"), logs)
}

/// The log once `wanted` lines are in it (it arrives from another process), or as it is
/// after 10 s.
async fn logged(logs: &Mutex<String>, wanted: impl Fn(&str) -> bool) -> String {
    for _ in 0..500 {
        let now = logs.lock().unwrap().clone();
        if wanted(&now) {
            return now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    logs.lock().unwrap().clone()
}

#[tokio::test]
async fn internal_details_go_to_tracing_not_the_wire() {
    let (_agent, url, logs) = agent();
    let reply = rpc(&url, send(77, "secret-1", "fail:internal")).await;
    assert_eq!(error_code(&reply), -32603);
    assert!(!reply.to_string().contains("hunter2"), "{reply}");
    assert!(!reply.to_string().contains("relation"), "{reply}");

    let response = rest_send(&reqwest::Client::new(), &url, "secret-2", "fail:internal").await;
    assert_eq!(response.status().as_u16(), 500);
    let body = response.text().await.unwrap();
    assert!(!body.contains("hunter2"), "{body}");
    assert!(body.contains("INTERNAL_ERROR"));

    // A client mistake is logged below error level.
    let missing = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 78, "method": "GetTask", "params": {"id": "q-78"}}),
    )
    .await;
    assert_eq!(error_code(&missing), -32001);
    // A failing notification gets no reply, and is logged all the same.
    let note = json!({"jsonrpc": "2.0", "method": "SendMessage", "params": {"message": {
        "messageId": "note-79", "role": "ROLE_USER", "parts": [{"text": "fail:internal"}]}}});
    let (status, _, text) = post_raw(&url, note.to_string().into_bytes()).await;
    assert_eq!((status, text.as_str()), (204, ""));

    // The three lines below, once they are all in.
    let logs = logged(&logs, |logs| {
        let mut lines = logs.lines();
        let internal = lines
            .clone()
            .any(|l| l.contains("hunter2-secret") && l.contains(r#"id="77""#));
        let mistake = lines
            .clone()
            .any(|l| l.contains("GetTask") && l.contains(r#"id="78""#));
        let note = lines.any(|l| {
            l.contains("hunter2-secret") && l.contains("SendMessage") && !l.contains(" id=")
        });
        internal && mistake && note
    })
    .await;
    let line = logs
        .lines()
        .find(|l| l.contains("hunter2-secret") && l.contains(r#"id="77""#))
        .unwrap_or_else(|| panic!("the internal error was not logged: {logs}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("SendMessage"), "{line}");
    // The client mistake is logged, below error level.
    let mistake = logs
        .lines()
        .find(|l| l.contains("GetTask") && l.contains(r#"id="78""#))
        .unwrap_or_else(|| panic!("the client mistake was not logged: {logs}"));
    assert!(mistake.contains("DEBUG"), "{mistake}");
    let notification = logs
        .lines()
        .filter(|l| l.contains("hunter2-secret") && l.contains("SendMessage"))
        // By its id field: a timestamp may hold "77" too (and `trace_id=` is another field).
        .find(|l| !l.contains(" id="))
        .unwrap_or_else(|| panic!("the failing notification was not logged: {logs}"));
    assert!(notification.contains("ERROR"), "{notification}");
}

/// The line logged for a failed request carries the request's trace id: the caller's, or the
/// one the request started.
#[tokio::test]
async fn a_failed_requests_line_carries_its_trace_id() {
    let (_agent, url, logs) = agent();
    let traced = reqwest::Client::new()
        .post(&url)
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .json(&send(80, "traced-80", "fail:internal"))
        .send()
        .await
        .unwrap();
    assert_eq!(traced.status().as_u16(), 200);
    rpc(&url, send(81, "untraced-81", "fail:internal")).await;
    let logs = logged(&logs, |logs| {
        logs.contains(r#"id="80""#) && logs.contains(r#"id="81""#)
    })
    .await;
    let line = |id: &str| {
        logs.lines()
            .find(|l| l.contains("request failed") && l.contains(id))
            .unwrap_or_else(|| panic!("{id} was not logged: {logs}"))
            .to_owned()
    };
    assert!(
        line(r#"id="80""#).contains("trace_id=4bf92f3577b34da6a3ce929d0e0e4736"),
        "{logs}"
    );
    let own = line(r#"id="81""#);
    let trace_id = own
        .split("trace_id=")
        .nth(1)
        .and_then(|rest| rest.get(..32))
        .unwrap_or_else(|| panic!("no trace id: {own}"));
    assert!(trace_id.bytes().all(|b| b.is_ascii_hexdigit()), "{own}");
    assert_ne!(trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
}

/// An SDK agent's failed work, over JSON-RPC and REST: the line logged for it carries the
/// caller's trace id, though the SDK runs the executor in a task of its own.
#[tokio::test]
async fn an_sdk_agents_failed_work_is_logged_with_its_trace_id() {
    let (_agent, url, logs) = example("sdk_agent");
    let http = reqwest::Client::new();
    let traceparent =
        |n: u8| format!("00-4bf92f3577b34da6a3ce929d0e0e47{n:02x}-00f067aa0ba902b7-01");
    let jsonrpc = http
        .post(&url)
        .header("traceparent", traceparent(1))
        .json(&send(90, "sdk-90", "fail:internal"))
        .send()
        .await
        .unwrap();
    assert_eq!(jsonrpc.status().as_u16(), 200);
    let rest = http
        .post(format!("{url}/message:send"))
        .header("A2A-Version", "1.0")
        .header("traceparent", traceparent(2))
        .json(
            &json!({"message": {"messageId": "sdk-91", "role": "ROLE_USER",
            "parts": [{"text": "fail:internal"}]}}),
        )
        .send()
        .await
        .unwrap();
    assert!(rest.status().as_u16() < 600);
    for n in [1, 2] {
        let id = format!("trace_id=4bf92f3577b34da6a3ce929d0e0e47{n:02x}");
        let logs = logged(&logs, |logs| logs.contains(&id)).await;
        let line = logs
            .lines()
            .find(|l| l.contains(&id))
            .unwrap_or_else(|| panic!("no line with {id}: {logs}"));
        assert!(line.contains("ERROR"), "{line}");
    }
}
