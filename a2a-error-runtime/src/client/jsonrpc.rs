//! The JSON-RPC binding: one `POST` per call, SSE for streaming methods.

use std::borrow::Cow;

use reqwest::header::CONTENT_TYPE;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::{ClientError, ResponseHead};
use super::flow::{Call, RawJson, Reply};
use super::http::{self, Http};
use crate::wire::error::FromErrorObject;
use crate::wire::object::ErrorObject;

/// The JSON-RPC request, built as bytes: the params go in exactly as the call holds them.
fn request_body(call: &Call) -> Vec<u8> {
    let params = call.params();
    let mut out = Vec::with_capacity(64 + call.method().len() + params.len());
    crate::wire::jsonrpc::write_request(call.id(), call.method(), params, &mut out);
    out
}

/// A response's members. `result` and `id` stay the peer's JSON text: only the caller's own
/// type reads a result (see [`RawJson`]), and an id is only compared.
#[derive(Deserialize)]
struct Response<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    // Tells `"result": null` (a valid result) from no result at all.
    #[serde(default, borrow, deserialize_with = "crate::wire::jsonrpc::present")]
    result: Option<&'a RawValue>,
    error: Option<ErrorObject>,
}

/// Whether a reply's raw `id` is this request's: the number, or (as some peers echo it) the
/// number as a string.
fn is_ours(raw: &RawValue, id: u64) -> bool {
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text).is_ok_and(|echo| echo == id.to_string())
    } else {
        text == id.to_string()
    }
}

/// Reads one JSON-RPC response: its result, or its error through `E`'s mirror. The HTTP reply
/// is copied into the error only when there is one (an SSE stream decodes every event here).
pub(crate) fn decode<E: FromErrorObject>(
    body: &[u8],
    id: u64,
    http: &ResponseHead,
) -> Result<RawJson, ClientError<E>> {
    let response: Response<'_> = match serde_json::from_slice(body) {
        Ok(response) => response,
        Err(error) => {
            return Err(http::unexpected(
                http.clone(),
                format!("not a JSON-RPC response: {error}"),
            ));
        }
    };
    if response.jsonrpc.as_deref() != Some("2.0") {
        return Err(http::unexpected(
            http.clone(),
            "missing \"jsonrpc\": \"2.0\"",
        ));
    }
    // An error may also come with id null (the peer could not read the id), but never with
    // another id: that is a reply to some other request, not this call's failure.
    let is_null = response.id.is_none_or(|raw| raw.get() == "null");
    let ours = response.id.is_some_and(|raw| is_ours(raw, id));
    let mismatch = || {
        let shown = crate::wire::text::Shown::new(response.id.map_or("null", RawValue::get), 64);
        http::unexpected(
            http.clone(),
            format!("reply id {shown} does not match request id {id}"),
        )
    };
    match (response.result, response.error) {
        (_, Some(error)) if ours || is_null => {
            Err(ClientError::from_object(error, Some(http.clone())))
        }
        (Some(result), None) if ours => Ok(result.to_owned()),
        (None, None) => Err(http::unexpected(http.clone(), "neither result nor error")),
        _ => Err(mismatch()),
    }
}

pub(super) async fn exchange<E>(
    http: Http,
    call: Call,
    deadline: Option<tokio::time::Instant>,
) -> Result<Reply<E>, ClientError<E>>
where
    E: FromErrorObject + Send + 'static,
{
    let request = http
        .client
        .post(http.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(request_body(&call));
    let response = http.send(http.headers(request, &call)).await?;
    let reply = http::http_reply(&response);
    let id = call.id();
    if http::is_event_stream(&reply) {
        if !call.is_streaming() {
            return Err(http::unasked_stream(reply));
        }
        return http::event_stream(response, http.limits, deadline, move |event| {
            decode(event.data.as_bytes(), id, &reply)
        })
        .await;
    }
    let body = http::read_body(response, &reply, http.limits.body_limit()).await?;
    decode(&body, id, &reply).map(Reply::Result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::error::A2aError;
    use crate::wire::remote::RemoteError;
    use serde_json::Value;

    fn ok() -> ResponseHead {
        ResponseHead {
            status: 200,
            headers: Default::default(),
        }
    }

    #[test]
    fn request_carries_params_verbatim() {
        let call = Call::from_json("SendMessage", &br#"{"message":{"messageId":"m-1"}}"#[..]);
        let body: Value = serde_json::from_slice(&request_body(&call)).unwrap();
        assert_eq!(body["method"], "SendMessage");
        assert_eq!(body["id"], call.id());
        assert_eq!(body["params"]["message"]["messageId"], "m-1");
    }

    #[test]
    fn decodes_results_errors_and_rejects_the_rest() {
        let got = decode::<RemoteError>(br#"{"jsonrpc":"2.0","id":7,"result":null}"#, 7, &ok());
        assert_eq!(got.unwrap().get(), "null");
        let got = decode::<RemoteError>(br#"{"jsonrpc":"2.0","id":"7","result":[1, 2]}"#, 7, &ok());
        assert_eq!(got.unwrap().get(), "[1, 2]");
        for other in ["70", "\"07\"", "7.0", "\"x\"", "[7]"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{other},"result":1}}"#);
            let err = decode::<RemoteError>(body.as_bytes(), 7, &ok()).unwrap_err();
            assert!(matches!(err, ClientError::Malformed { .. }), "{other}");
        }
        let err = decode::<RemoteError>(br#"{"jsonrpc":"2.0","id":7,"result":1}"#, 8, &ok());
        assert!(matches!(err, Err(ClientError::Malformed { .. })));
        let err = decode::<RemoteError>(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"gone"}}"#,
            7,
            &ok(),
        )
        .unwrap_err();
        assert_eq!(err.remote().unwrap().code(), -32001);
        // An error answering another request is not this call's error.
        let other = decode::<RemoteError>(
            br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32001,"message":"gone"}}"#,
            7,
            &ok(),
        )
        .unwrap_err();
        assert!(matches!(other, ClientError::Malformed { .. }), "{other:?}");
        let page = ResponseHead {
            status: 502,
            headers: Default::default(),
        };
        let err = decode::<RemoteError>(b"<html>bad gateway</html>", 7, &page).unwrap_err();
        assert_eq!(err.reply_status(), Some(502));
        assert!(matches!(err, ClientError::Status(_)));
    }
}
