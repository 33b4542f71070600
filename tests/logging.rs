//! What a server logs, in a test binary of its own: tracing caches per callsite, for the whole
//! process, whether anyone listens, and the one test here installs the process's subscriber.

#[path = "../examples/agent/app.rs"]
#[allow(dead_code)]
mod app;
mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::requests::{error_code, post_raw, rest_send, rpc, send};
use common::serve;
use serde_json::json;

async fn agent() -> String {
    serve(app::router()).await
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn internal_details_go_to_tracing_not_the_wire() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    // The process's own subscriber (this binary has one test): a thread-local one missed the
    // server's events once in a loaded full run, every thread sees this one.
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let url = agent().await;
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

    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
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
        // By its id field: a timestamp may hold "77" too.
        .find(|l| !l.contains("id="))
        .unwrap_or_else(|| panic!("the failing notification was not logged: {logs}"));
    assert!(notification.contains("ERROR"), "{notification}");
}
