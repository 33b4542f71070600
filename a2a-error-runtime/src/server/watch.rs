//! The header timeout, watched beside each connection rather than by hyper. hyper's
//! `header_read_timeout` arms a timer for every request's head and, so that the timer starts
//! the moment a connection goes idle, polls the connection once more after every reply (one
//! more head parse, read attempt and write check): together ~0.9k instructions of a
//! 25k-instruction JSON-RPC error reply under callgrind. Here a connection counts what it
//! does (a request begun or answered, reply bytes written: a few atomic updates a request),
//! and a watch task of its own wakes four times a timeout and closes the connection once a
//! whole timeout has passed with no request in progress and nothing counted.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

/// What one connection has done, as its watch reads it.
#[derive(Default)]
pub(crate) struct Progress {
    /// Counts every request begun or answered and every write of reply bytes.
    moves: AtomicU64,
    /// Requests begun and not yet answered (a streamed reply's: until its body ends).
    serving: AtomicU32,
    /// The watch's task, ended with the connection.
    watch: OnceLock<AbortHandle>,
}

impl Progress {
    fn moved(&self) {
        self.moves.fetch_add(1, Ordering::Relaxed);
    }

    /// A request's head is in: the connection is busy until the guard drops.
    pub(crate) fn begin(self: &Arc<Self>) -> Serving {
        self.serving.fetch_add(1, Ordering::Relaxed);
        self.moved();
        Serving(Arc::clone(self))
    }

    /// The connection ended: its watch ends too.
    pub(crate) fn ended(&self) {
        if let Some(watch) = self.watch.get() {
            watch.abort();
        }
    }
}

/// A request in progress; dropped when it is answered (with a streamed reply: when its body
/// ends or is dropped).
pub(crate) struct Serving(Arc<Progress>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.serving.fetch_sub(1, Ordering::Relaxed);
        self.0.moved();
    }
}

/// Watches `connection` (a task serving one connection): aborts it once `timeout` has passed
/// with no request in progress and nothing done, checking every quarter of it: a quiet
/// connection is closed between one and one and a quarter `timeout`s after it last did
/// anything (a new connection: after its accept).
pub(crate) fn watch(progress: &Arc<Progress>, timeout: Duration, connection: AbortHandle) {
    let tick = (timeout / 4).max(Duration::from_millis(1));
    let watched = Arc::clone(progress);
    let task = tokio::spawn(async move {
        let mut seen = watched.moves.load(Ordering::Relaxed);
        let mut quiet = Duration::ZERO;
        let mut next = tokio::time::Instant::now();
        // A timeout past what an `Instant` can hold never passes: nothing to watch.
        while let Some(at) = next.checked_add(tick) {
            next = at;
            tokio::time::sleep_until(next).await;
            if connection.is_finished() {
                return;
            }
            let moves = watched.moves.load(Ordering::Relaxed);
            if moves != seen || watched.serving.load(Ordering::Relaxed) > 0 {
                seen = moves;
                quiet = Duration::ZERO;
                continue;
            }
            quiet = quiet.saturating_add(tick);
            if quiet >= timeout {
                tracing::debug!("no request within the header timeout: connection closed");
                connection.abort();
                return;
            }
        }
    });
    let _ = progress.watch.set(task.abort_handle());
}

/// A connection's socket, counting each write of reply bytes in its [`Progress`]: a peer
/// that reads a long reply slowly is not idle.
pub(crate) struct Counted {
    stream: TcpStream,
    progress: Arc<Progress>,
}

impl Counted {
    pub(crate) fn new(stream: TcpStream, progress: &Arc<Progress>) -> Self {
        Counted {
            stream,
            progress: Arc::clone(progress),
        }
    }

    fn wrote(&self, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if let Poll::Ready(Ok(1..)) = written {
            self.progress.moved();
        }
        written
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.wrote(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.wrote(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::{Instant, sleep};

    const TIMEOUT: Duration = Duration::from_millis(400);

    /// A connection's task that ends only when aborted, watched with [`TIMEOUT`].
    fn watched() -> (Arc<Progress>, tokio::task::JoinHandle<()>) {
        let progress = Arc::new(Progress::default());
        let task = tokio::spawn(std::future::pending());
        watch(&progress, TIMEOUT, task.abort_handle());
        (progress, task)
    }

    /// How long after `since` the watch aborted `task`.
    async fn closed_after(task: tokio::task::JoinHandle<()>, since: Instant) -> Duration {
        assert!(task.await.unwrap_err().is_cancelled());
        since.elapsed()
    }

    fn within_a_quarter_more(waited: Duration) {
        assert!(
            waited >= TIMEOUT && waited <= TIMEOUT + TIMEOUT / 4,
            "closed after {waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_does_nothing_is_closed_after_the_timeout() {
        let start = Instant::now();
        let (_progress, task) = watched();
        within_a_quarter_more(closed_after(task, start).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_progress_holds_the_connection_and_its_answer_starts_the_count() {
        let (progress, task) = watched();
        sleep(Duration::from_millis(30)).await;
        let serving = progress.begin();
        // A handler, or a streamed reply, may take many timeouts.
        sleep(TIMEOUT * 10).await;
        assert!(!task.is_finished());
        sleep(Duration::from_millis(30)).await;
        drop(serving);
        within_a_quarter_more(closed_after(task, Instant::now()).await);
    }

    #[tokio::test(start_paused = true)]
    async fn writes_keep_a_connection_whose_reply_is_read_slowly() {
        let (progress, task) = watched();
        drop(progress.begin());
        for _ in 0..20 {
            sleep(TIMEOUT * 3 / 4).await;
            progress.moved();
        }
        assert!(!task.is_finished());
        // A peer that stops reading: nothing more is written.
        within_a_quarter_more(closed_after(task, Instant::now()).await);
    }

    #[tokio::test(start_paused = true)]
    async fn the_watch_ends_with_its_connection_and_a_timeout_past_any_instant_never_passes() {
        let progress = Arc::new(Progress::default());
        let task = tokio::spawn(std::future::pending::<()>());
        watch(&progress, Duration::MAX, task.abort_handle());
        sleep(Duration::from_secs(86_400 * 365)).await;
        assert!(!task.is_finished());
        let watch = progress.watch.get().expect("a watch").clone();
        assert!(!watch.is_finished());
        progress.ended();
        tokio::task::yield_now().await;
        assert!(watch.is_finished());
        task.abort();
    }
}
