//! A request body read within a total time limit, and how its lapse is recognised by those
//! who read it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use tokio::time::Sleep;

/// Reading a request body took longer than [`ServeLimits::body_timeout`](super::ServeLimits::body_timeout).
#[derive(Debug, thiserror::Error)]
#[error("request body not received in time")]
pub(crate) struct BodyTimedOut;

/// Whether a body read failed because of [`BodyTimedOut`], anywhere in its source chain.
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<BodyTimedOut>() {
            return true;
        }
        current = error.source();
    }
    false
}

pin_project! {
    /// A request body that fails with [`BodyTimedOut`] once its deadline passes: a total
    /// limit, unlike tower-http's `TimeoutBody`, which waits again after every frame and so
    /// lets a peer that drips one byte at a time hold the request forever.
    pub(crate) struct TimedBody {
        #[pin]
        body: Incoming,
        #[pin]
        deadline: Sleep,
    }
}

impl TimedBody {
    pub(crate) fn new(body: Incoming, limit: Duration) -> Self {
        TimedBody {
            body,
            deadline: tokio::time::sleep(limit),
        }
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.body.poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match this.deadline.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
