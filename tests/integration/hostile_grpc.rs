//! Hostile peers, third round, over gRPC: a raw HTTP/2 peer sending `grpc-status-details-bin`
//! values that tonic panics on (in a trailers-only reply, after a reply, mid-stream), and
//! `sdk_agent --grpc`'s limits from outside. All on loopback with real sockets.

use std::convert::Infallible;

use a2a_error::resilience::RetryPolicy;
use a2a_error::{A2aError, Client, RemoteError};
use a2a_pb::proto;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

/// A gRPC message frame: uncompressed, its length, the message.
fn frame(message: &impl prost::Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut out = vec![0u8];
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out.into()
}

fn trailers(details: &str) -> hyper::HeaderMap {
    let mut trailers = hyper::HeaderMap::new();
    trailers.insert("grpc-status", "14".parse().unwrap());
    trailers.insert("grpc-message", "down".parse().unwrap());
    trailers.insert("grpc-status-details-bin", details.parse().unwrap());
    trailers
}

/// How the raw peer answers every RPC.
#[derive(Clone, Copy)]
enum Placement {
    /// A trailers-only reply: the status (and the bad details) in the headers.
    TrailersOnly,
    /// One reply message, then the bad details in the trailers.
    AfterReply,
    /// One stream event, then the bad details in the trailers.
    MidStream,
}

type Reply = hyper::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

fn answer(placement: Placement, details: &'static str) -> Reply {
    let ok = hyper::Response::builder()
        .status(200)
        .header("content-type", "application/grpc");
    match placement {
        Placement::TrailersOnly => {
            let mut reply = ok.body(Full::new(Bytes::new()).boxed()).unwrap();
            reply.headers_mut().extend(trailers(details));
            reply
        }
        Placement::AfterReply | Placement::MidStream => {
            let message = match placement {
                Placement::AfterReply => frame(&proto::Task {
                    id: "t-1".into(),
                    ..Default::default()
                }),
                _ => frame(&proto::StreamResponse {
                    payload: Some(proto::stream_response::Payload::Task(proto::Task {
                        id: "t-1".into(),
                        ..Default::default()
                    })),
                }),
            };
            let frames = futures_util::stream::iter([
                Ok::<_, Infallible>(Frame::data(message)),
                Ok(Frame::trailers(trailers(details))),
            ]);
            ok.body(StreamBody::new(frames).boxed()).unwrap()
        }
    }
}

/// Serves the raw peer on loopback: its target.
async fn serve_raw(placement: Placement, details: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_request| async move {
                    Ok::<_, Infallible>(answer(placement, details))
                });
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(socket), service)
                        .await;
            });
        }
    });
    target
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_status_details_header_panics_the_grpc_client() {
    // Not base64; the URL-safe alphabet; padding in the middle.
    for details in ["%%% not base64 %%%", "CAUSBGRvd24_-_-", "CA=USBG"] {
        for placement in [
            Placement::TrailersOnly,
            Placement::AfterReply,
            Placement::MidStream,
        ] {
            let target = serve_raw(placement, details).await;
            let client = Client::<RemoteError>::grpc(target.as_str())
                .retry(RetryPolicy::none())
                .build()
                .unwrap();
            // Each call runs in a task of its own, so that a panic would show as a JoinError
            // here rather than end the test.
            let outcome = tokio::spawn(async move {
                match placement {
                    Placement::MidStream => {
                        let events = client
                            .stream("SubscribeToTask", &json!({"id": "t-1"}))
                            .await
                            .unwrap();
                        let (seen, last) = crate::common::drain(events).await;
                        assert_eq!(seen, 1);
                        last.unwrap()
                    }
                    _ => client
                        .call::<_, Value>("GetTask", &json!({"id": "t-1"}))
                        .await
                        .unwrap_err(),
                }
            })
            .await
            .unwrap_or_else(|_| panic!("the client panicked on {details:?}"));
            // The status is read by its code: UNAVAILABLE is AGENT_UNAVAILABLE.
            let remote = outcome.remote().unwrap_or_else(|| panic!("{outcome:?}"));
            assert_eq!(remote.code(), -32053, "{details:?}: {outcome:?}");
        }
    }
}
