//! The header timeout, watched beside each connection rather than by hyper. hyper's
//! `header_read_timeout` arms a timer for every request's head and, so that the timer starts
//! the moment a connection goes idle, polls the connection once more after every reply (one
//! more head parse, read attempt and write check): together ~0.9k instructions of a
//! 25k-instruction JSON-RPC error reply under callgrind. Here a connection counts what it
//! does (a request begun or answered, reply bytes written: a few atomic updates a request),
//! and a watch task of its own wakes four times a timeout and closes the connection once a
//! whole timeout has passed with no request in progress and nothing counted. The socket that
//! counts the writes ([`Counted`]) also sends a small reply with one `send` (see there).

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
///
/// It also sends a small reply whole with one `send`. hyper hands a reply over as several
/// slices (its head and body; a chunk's size line, data and end) for one vectored write, and
/// the kernel's `writev` (the file layer's checks, the slices copied in and walked) costs
/// more than copying a few hundred bytes into one buffer and sending that: the error path
/// read 1.04× (1.02–1.06×) at once this way, and as fast as hyper's own flattening (which
/// keeps a buffer as large as the largest reply a connection ever sent). A lone slice is
/// sent as it is; slices of more than [`JOINED_AT_MOST`] bytes in all go with one `writev`,
/// so the buffer a connection keeps is at most that.
pub(crate) struct Counted {
    stream: TcpStream,
    progress: Arc<Progress>,
    /// The slices of the last small vectored write, joined; reused.
    joined: Vec<u8>,
}

/// The most bytes of a vectored write that [`Counted`] joins and sends as one buffer.
const JOINED_AT_MOST: usize = 4 * 1024;

impl Counted {
    pub(crate) fn new(stream: TcpStream, progress: &Arc<Progress>) -> Self {
        Counted {
            stream,
            progress: Arc::clone(progress),
            joined: Vec::new(),
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
        let small = || {
            bufs.iter()
                .try_fold(0usize, |all, buf| {
                    Some(all + buf.len()).filter(|&all| all <= JOINED_AT_MOST)
                })
                .is_some()
        };
        let written = match bufs {
            // One slice, of any size: sent as it is.
            [one] => Pin::new(&mut this.stream).poll_write(cx, one),
            _ if small() => {
                // Made once, at its full size: it never grows past it.
                this.joined.clear();
                this.joined.reserve_exact(JOINED_AT_MOST);
                for buf in bufs {
                    this.joined.extend_from_slice(buf);
                }
                // Partly sent: hyper passes what is left again, joined again.
                Pin::new(&mut this.stream).poll_write(cx, &this.joined)
            }
            _ => Pin::new(&mut this.stream).poll_write_vectored(cx, bufs),
        };
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

    /// A connected pair on loopback with small socket buffers (so that writes are often
    /// partial): the server's end counted, and the peer's.
    async fn counted_pair() -> (Counted, Arc<Progress>, TcpStream) {
        let listening = tokio::net::TcpSocket::new_v4().unwrap();
        listening.set_recv_buffer_size(4096).unwrap();
        listening.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = listening.local_addr().unwrap();
        let listener = listening.listen(8).unwrap();
        let connecting = tokio::net::TcpSocket::new_v4().unwrap();
        connecting.set_send_buffer_size(4096).unwrap();
        let (stream, accepted) = tokio::join!(connecting.connect(address), listener.accept());
        let progress = Arc::new(Progress::default());
        (
            Counted::new(stream.unwrap(), &progress),
            progress,
            accepted.unwrap().0,
        )
    }

    /// `slices` written as hyper writes a reply: vectored writes of what is left until all
    /// is sent. Returns how many writes it took, and how many of them sent part of it.
    async fn write_as_hyper(counted: &mut Counted, slices: &[Vec<u8>]) -> (usize, usize) {
        let total: usize = slices.iter().map(Vec::len).sum();
        let (mut sent, mut writes, mut partly) = (0usize, 0usize, 0usize);
        while sent < total {
            let mut skip = sent;
            let left: Vec<io::IoSlice<'_>> = slices
                .iter()
                .filter_map(|slice| {
                    let rest = slice.get(skip..).filter(|rest| !rest.is_empty());
                    skip = skip.saturating_sub(slice.len());
                    rest.map(io::IoSlice::new)
                })
                .collect();
            let written =
                std::future::poll_fn(|cx| Pin::new(&mut *counted).poll_write_vectored(cx, &left));
            let n = written.await.unwrap();
            assert!(n > 0 && n <= total - sent);
            partly += usize::from(n < total - sent);
            sent += n;
            writes += 1;
        }
        (writes, partly)
    }

    #[tokio::test]
    async fn vectored_writes_arrive_whole_and_in_order_joined_or_not() {
        let (mut counted, progress, peer) = counted_pair().await;
        // Replies as hyper hands them over: slices (a head and a body; a chunk's size line,
        // data and end) under the joining limit, and past it, sent as they are; and one
        // slice larger than the limit.
        let replies: Vec<Vec<Vec<u8>>> = (0..800u32)
            .map(|i| {
                let size = match i % 4 {
                    0 => 200,
                    1 => JOINED_AT_MOST - 64,
                    _ => JOINED_AT_MOST + 1000,
                };
                let body: Vec<u8> = (0..size).map(|b| (b as u32 ^ i) as u8).collect();
                match i % 4 {
                    3 => vec![body],
                    _ => vec![format!("head {i}\r\n").into_bytes(), body, b"\r\n".to_vec()],
                }
            })
            .collect();
        let expected: Vec<u8> = replies.iter().flatten().flatten().copied().collect();
        let reader = tokio::spawn(async move {
            // Late, so that the writer fills the small buffers and meets partial writes.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let (mut got, mut chunk) = (Vec::new(), [0u8; 8192]);
            loop {
                peer.readable().await.unwrap();
                match peer.try_read(&mut chunk) {
                    Ok(0) => return got,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    Err(error) => panic!("reading: {error}"),
                }
            }
        });
        let (mut writes, mut partly) = (0, 0);
        for reply in &replies {
            let (all, part) = write_as_hyper(&mut counted, reply).await;
            (writes, partly) = (writes + all, partly + part);
        }
        assert!(
            partly > 0,
            "no write was partial: the buffers are larger than meant"
        );
        std::future::poll_fn(|cx| Pin::new(&mut counted).poll_shutdown(cx))
            .await
            .unwrap();
        // The buffer a connection keeps stays within the limit.
        assert_eq!(counted.joined.capacity(), JOINED_AT_MOST);
        drop(counted);
        let got = reader.await.unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "the bytes differ from what was written");
        // Each write of reply bytes counts as the connection doing something.
        assert_eq!(progress.moves.load(Ordering::Relaxed), writes as u64);
    }
}
