//! The future of a call through `Retry`. The first attempt is polled in place, with no
//! allocation and no clock read unless it has to wait; only a failed first attempt moves the
//! call into the boxed retry loop. This keeps the success path cheap (see `benches/retry.rs`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower::Service;

use super::retrying::Retrying;
use crate::resilience::classify::Classify;
use crate::resilience::request::Request;

type Boxed<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

pin_project! {
    #[project = StateProj]
    enum State<F, T, E> {
        First {
            #[pin]
            attempt: F,
        },
        Retrying {
            future: Boxed<T, E>,
        },
    }
}

pin_project! {
    /// The future returned by [`Retry`](super::Retry) as a `tower::Service`.
    pub struct RetryFuture<S, R>
    where
        S: Service<R>,
    {
        #[pin]
        state: State<S::Future, S::Response, S::Error>,
        // Taken when the first attempt fails; its clock starts when that attempt first waits.
        retrying: Option<Retrying<S, R, S::Error>>,
        clock_started: bool,
    }
}

impl<S, R> RetryFuture<S, R>
where
    S: Service<R>,
{
    pub(super) fn new(attempt: S::Future, retrying: Retrying<S, R, S::Error>) -> Self {
        RetryFuture {
            state: State::First { attempt },
            retrying: Some(retrying),
            clock_started: false,
        }
    }
}

impl<S, R> Future for RetryFuture<S, R>
where
    S: Service<R> + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Classify + Send + 'static,
    R: Request + Send + 'static,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let error = match this.state.as_mut().project() {
            StateProj::Retrying { future } => return future.as_mut().poll(cx),
            StateProj::First { attempt } => match attempt.poll(cx) {
                Poll::Ready(Ok(reply)) => {
                    if let Some(retrying) = this.retrying.as_ref() {
                        retrying.first_attempt_ended();
                    }
                    return Poll::Ready(Ok(reply));
                }
                Poll::Ready(Err(error)) => error,
                Poll::Pending => {
                    // The call's budget counts from its first send: the waiting layers below
                    // start their clocks now too.
                    if !*this.clock_started {
                        *this.clock_started = true;
                        if let Some(retrying) = this.retrying.as_mut() {
                            retrying.start_clock();
                        }
                    }
                    return Poll::Pending;
                }
            },
        };
        // The first attempt failed: the rest of the call is the retry loop.
        let Some(retrying) = this.retrying.take() else {
            return Poll::Ready(Err(error));
        };
        let mut future: Boxed<S::Response, S::Error> = Box::pin(retrying.run(error));
        let poll = future.as_mut().poll(cx);
        this.state.set(State::Retrying { future });
        poll
    }
}
