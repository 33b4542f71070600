//! The future of a call through `Retry`. The first attempt is polled in place, with no
//! allocation and no timer unless it has to wait; only a failed first attempt moves the call
//! into the boxed retry loop. This keeps the success path cheap (see `benches/retry.rs`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower::Service;

use super::service::Retrying;
use crate::client::{Call, ClientError, Reply, Timeout};
use crate::error::A2aError;

type Boxed<E> = Pin<Box<dyn Future<Output = Result<Reply<E>, ClientError<E>>> + Send>>;

pin_project! {
    #[project = StateProj]
    enum State<F, E> {
        First {
            #[pin]
            attempt: F,
            // Made when the first attempt first has to wait, and only if there is a limit.
            timer: Option<Pin<Box<Sleep>>>,
        },
        Retrying {
            future: Boxed<E>,
        },
    }
}

pin_project! {
    /// The future returned by [`Retry`](super::Retry) as a `tower::Service`.
    pub struct ResponseFuture<S, E>
    where
        S: Service<Call, Response = Reply<E>, Error = ClientError<E>>,
    {
        #[pin]
        state: State<S::Future, E>,
        // Which limit the first attempt's timer stands for.
        fired: Timeout,
        retrying: Option<Retrying<S, E>>,
    }
}

impl<S, E> ResponseFuture<S, E>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>>,
{
    pub(super) fn new(attempt: S::Future, retrying: Retrying<S, E>) -> Self {
        ResponseFuture {
            state: State::First {
                attempt,
                timer: None,
            },
            fired: Timeout::Attempt,
            retrying: Some(retrying),
        }
    }
}

impl<S, E> Future for ResponseFuture<S, E>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>> + Send + 'static,
    S::Future: Send,
    E: A2aError + Send + 'static,
{
    type Output = Result<Reply<E>, ClientError<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            let error = match this.state.as_mut().project() {
                StateProj::Retrying { future } => return future.as_mut().poll(cx),
                StateProj::First { attempt, timer } => match attempt.poll(cx) {
                    Poll::Ready(Ok(reply)) => return Poll::Ready(Ok(reply)),
                    Poll::Ready(Err(error)) => error,
                    Poll::Pending => {
                        if timer.is_none() {
                            // The attempt has to wait: now the limits need the clock.
                            let end = this.retrying.as_mut().and_then(Retrying::start_clock);
                            let Some((end, fired)) = end else {
                                return Poll::Pending;
                            };
                            *this.fired = fired;
                            *timer = Some(Box::pin(tokio::time::sleep_until(end)));
                        }
                        let Some(timer) = timer else {
                            return Poll::Pending;
                        };
                        match timer.as_mut().poll(cx) {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(()) => ClientError::Timeout(*this.fired),
                        }
                    }
                },
            };
            // The first attempt failed: the rest of the call is the retry loop.
            let Some(retrying) = this.retrying.take() else {
                return Poll::Ready(Err(error));
            };
            this.state.set(State::Retrying {
                future: Box::pin(retrying.run(error)),
            });
        }
    }
}
