//! The JSON-RPC conformance cases (`tests/data/jsonrpc-cases.json`), run against any agent
//! that serves `GetTask`: the example agent and the SDK agent behind the bridge.

use serde_json::Value;

use super::requests::post_raw;

/// Posts every case to `url` and asserts its reply.
pub async fn check(url: &str) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/jsonrpc-cases.json"
    ))
    .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    let matches = |reply: &Value, expect: &Value| {
        let codes: Vec<i64> = expect["codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_i64().unwrap())
            .collect();
        reply["jsonrpc"] == "2.0"
            && codes.contains(&reply["error"]["code"].as_i64().unwrap_or(0))
            && reply["id"] == expect["id"]
            && expect
                .get("reason")
                .is_none_or(|r| reply["error"]["data"][0]["reason"] == *r)
            && expect
                .get("domain")
                .is_none_or(|d| reply["error"]["data"][0]["domain"] == *d)
    };
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let body = case["body"].as_str().unwrap().to_owned();
        let expect = &case["expect"];
        let (status, content_type, text) = post_raw(url, body).await;
        match expect["kind"].as_str().unwrap() {
            "none" => {
                assert!(text.is_empty(), "{name}: {text}");
                assert_eq!(status, 204, "{name}");
            }
            "error" => {
                assert_eq!(status, 200, "{name}");
                assert!(content_type.starts_with("application/json"), "{name}");
                let reply: Value = serde_json::from_str(&text).unwrap();
                assert!(matches(&reply, expect), "{name}: {reply}");
            }
            "batch" => {
                let replies: Vec<Value> = serde_json::from_str(&text).unwrap();
                let mut wanted: Vec<&Value> = expect["items"].as_array().unwrap().iter().collect();
                assert_eq!(replies.len(), wanted.len(), "{name}: {text}");
                for reply in &replies {
                    let at = wanted.iter().position(|e| matches(reply, e));
                    wanted.remove(at.unwrap_or_else(|| panic!("{name}: unexpected {reply}")));
                }
            }
            other => panic!("unknown kind {other}"),
        }
    }
}
