//! JSON-RPC and REST requests to an agent on loopback, as the server test files send them.
// Each test binary compiles this module and uses only some of it.

use serde_json::{Value, json};

pub async fn post_raw(url: &str, body: impl Into<reqwest::Body>) -> (u16, String, String) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, response.text().await.unwrap())
}

pub async fn rpc(url: &str, body: Value) -> Value {
    let (status, _, text) = post_raw(url, body.to_string()).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// [`rpc`] with one more request header (`Authorization`, `A2A-Deadline-Ms`).
pub async fn rpc_with(url: &str, (name, value): (&str, &str), body: Value) -> Value {
    reqwest::Client::new()
        .post(url)
        .header(name, value)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The agent card an agent serves at `/.well-known/agent-card.json`.
pub async fn card(url: &str) -> Value {
    reqwest::get(format!("{url}/.well-known/agent-card.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

pub fn send(id: u64, message_id: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {"message": {
        "messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}}})
}

/// `POST /message:send` with one text part.
pub async fn rest_send(
    client: &reqwest::Client,
    url: &str,
    message_id: &str,
    text: &str,
) -> reqwest::Response {
    let message = json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}});
    client
        .post(format!("{url}/message:send"))
        .json(&message)
        .send()
        .await
        .unwrap()
}

pub fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

/// `GET url`, its body as text.
pub async fn get_text(url: &str) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// The SSE events of a body: (event name, data as JSON).
pub fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| {
            let mut name = String::from("message");
            let mut data = String::new();
            for line in event.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = value.trim().to_owned();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            (name, serde_json::from_str(&data).unwrap_or(Value::Null))
        })
        .collect()
}
