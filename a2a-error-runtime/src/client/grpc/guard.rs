//! [`Guarded`]: the channel under the gRPC client, with every `grpc-status-details-bin` it
//! hands to tonic checked first.
//!
//! tonic 0.14 decodes that header with `.expect()` (`Status::from_header_map`), in the
//! headers of a trailers-only reply and in the trailers after a reply or mid-stream: one
//! value that is not base64 of the standard alphabet panics the task that reads the reply,
//! and so any agent whose executor calls a hostile or broken gRPC peer. A value that does not
//! decode as tonic decodes it is removed here, before tonic sees it: the status is then read
//! by its code and message, as a status without details is.

use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use http_body::{Body, Frame, SizeHint};
use tonic::codegen::http::{HeaderMap, Request, Response};
use tonic::transport::Channel;

/// The header tonic panics on.
const DETAILS: &str = "grpc-status-details-bin";

/// tonic's own decoder of the header (`tonic::util::base64::STANDARD`): the standard
/// alphabet, padding optional.
const DECODER: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Removes a details header that tonic could not decode. Returns whether it did.
pub(crate) fn sanitize(headers: &mut HeaderMap) -> bool {
    let bad = headers
        .get_all(DETAILS)
        .iter()
        .any(|value| DECODER.decode(value.as_bytes()).is_err())
        // tonic reads the first value only; several are a peer's mistake too.
        || headers.get_all(DETAILS).iter().nth(1).is_some();
    if bad {
        headers.remove(DETAILS);
        tracing::debug!("a gRPC peer sent a {DETAILS} that is not base64: removed");
    }
    bad
}

/// A tonic channel whose replies' headers and trailers are [`sanitize`]d.
#[derive(Clone, Debug)]
pub(crate) struct Guarded(pub(crate) Channel);

impl tower::Service<Request<tonic::body::Body>> for Guarded {
    type Response = Response<GuardedBody>;
    type Error = tonic::transport::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        let reply = self.0.call(request);
        Box::pin(async move {
            let mut reply = reply.await?;
            sanitize(reply.headers_mut());
            Ok(reply.map(GuardedBody))
        })
    }
}

/// A reply body whose trailers are [`sanitize`]d.
pub(crate) struct GuardedBody(tonic::body::Body);

impl Body for GuardedBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.0).poll_frame(cx).map(|frame| {
            frame.map(|frame| {
                frame.map(|mut frame| {
                    if let Some(trailers) = frame.trailers_mut() {
                        sanitize(trailers);
                    }
                    frame
                })
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(DETAILS, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn only_what_tonic_cannot_decode_is_removed() {
        // Padded and unpadded standard base64 stay, and tonic reads them.
        for good in ["CAUSBGdvbmU=", "CAUSBGdvbmU", ""] {
            let mut headers = with(&[good]);
            assert!(!sanitize(&mut headers));
            assert!(
                tonic::Status::from_header_map(&{
                    let mut h = headers.clone();
                    h.insert("grpc-status", "5".parse().unwrap());
                    h
                })
                .is_some()
            );
        }
        // Not base64, the URL-safe alphabet, stray padding, two values: removed, and tonic
        // then reads the status without panicking.
        for bad in [
            &["%%%"][..],
            &["_-_-"],
            &["CAUS=BGdv"],
            &["CAUSBGdvbmU=", "AAAA"],
        ] {
            let mut headers = with(bad);
            headers.insert("grpc-status", "14".parse().unwrap());
            assert!(sanitize(&mut headers), "{bad:?}");
            let status = tonic::Status::from_header_map(&headers).unwrap();
            assert_eq!(status.code(), tonic::Code::Unavailable);
            assert!(status.details().is_empty());
        }
    }
}
