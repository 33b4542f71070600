//! [`Bridge::serve_grpc`] and [`GrpcLimits`]: the bridge's gRPC service served with the
//! guarantees `server::serve` gives the HTTP bindings.
//!
//! tonic's `Server` on its own serves without limits: it passes `max_concurrent_streams(None)`
//! to hyper (erasing hyper's default of 200), sends no keepalive pings, closes no idle
//! connection, accepts until the process runs out of file descriptors and then spins on the
//! error. Measured against `sdk_agent --grpc` before this module: 8,000 calls on one
//! connection held +356 MB, and 1,100 idle connections took every descriptor (the JSON-RPC
//! port stopped answering) with the accept loop at ~100 % of a core.

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_server::RequestHandler;
use futures_util::Stream;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tonic::codegen::http::{Request, Response};
use tonic::server::NamedService;

use crate::serve::Bridge;
use a2a_error_runtime::server::endpoint::admission::{Admission, OwnedSlot};
use a2a_error_runtime::server::quota::{Quota, Quotas};
use a2a_error_runtime::server::serve::is_connection_error;
use a2a_error_runtime::wire::grpc::{MAX_HEADER_LIST_BYTES, to_status};
use a2a_error_runtime::wire::standard::StandardError;

/// The streams the server may reset for a peer's errors before GOAWAY: hyper's default.
const LOCAL_RESETS: usize = 1024;

/// The most of a reply handed to HTTP/2 at once: hyper takes a frame before it has the
/// peer's window for it, so a reply handed whole to a peer that does not read would sit in
/// h2's buffer, out of reach of the send timeout.
const CHUNK: usize = 64 << 10;

/// The limits [`Bridge::serve_grpc`] serves within. The defaults bound what one peer can
/// hold: at most `max_connections × max_streams` calls are open, of which at most
/// `max_in_flight` run (each holding at most one reply of the handler's making, bounded by
/// the task store's limit per task), a quarter of them for one caller once three quarters
/// are taken; the rest are refused at once. A reply the peer does not read is let go after the send
/// timeout, with its connection; a connection that sends no call is closed after 10 s.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GrpcLimits {
    max_owed_bytes: usize,
    max_connections: usize,
    max_streams: u32,
    max_in_flight: usize,
    /// `None`: a quarter of `max_in_flight` (the quotas' default).
    max_per_caller: Option<usize>,
    adaptive: Option<a2a_error_runtime::server::AdaptiveLimit>,
    idle_timeout: Duration,
    first_call_timeout: Duration,
    send_timeout: Duration,
    keepalive: Duration,
    max_resets: usize,
}

/// The default of [`GrpcLimits::max_owed_bytes`].
pub(crate) const DEFAULT_MAX_OWED_BYTES: usize = 32 << 20;

impl Default for GrpcLimits {
    fn default() -> Self {
        GrpcLimits {
            max_owed_bytes: DEFAULT_MAX_OWED_BYTES,
            max_connections: 256,
            max_streams: 100,
            max_in_flight: 512,
            max_per_caller: None,
            adaptive: None,
            idle_timeout: Duration::from_secs(300),
            first_call_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            keepalive: Duration::from_secs(60),
            max_resets: 20,
        }
    }
}

impl GrpcLimits {
    /// How many connections are served at once (default 256, at least 1); further peers wait
    /// in the listen backlog. Keep the sum of this and `ServeLimits::max_connections` under
    /// the process's file descriptor limit (`ulimit -n`), so that one binding's peers cannot
    /// starve the other's.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How many calls one connection may have open at once (HTTP/2
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`, default 100, as gRPC's own servers).
    pub fn max_streams(mut self, streams: u32) -> Self {
        self.max_streams = streams.max(1);
        self
    }

    /// How many calls run at once over all connections, counted until a call's reply has
    /// been sent or its stream ended (default 512). A call past it is refused at once with
    /// AGENT_UNAVAILABLE (`UNAVAILABLE`) and a RetryInfo of about one call's recent time.
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = calls.max(1);
        self.adaptive = None;
        self
    }

    /// As [`max_in_flight`](Self::max_in_flight), with a limit that follows the calls'
    /// measured time (until each is answered; a stream: opened), as
    /// `JsonRpc::adaptive_concurrency` does.
    pub fn adaptive(mut self, limit: a2a_error_runtime::server::AdaptiveLimit) -> Self {
        self.adaptive = Some(limit);
        self
    }

    /// How many calls one caller may have in flight once three quarters of `max_in_flight`
    /// are (default a quarter of `max_in_flight`, at least 1): a sole caller can use three
    /// quarters of them, and the last quarter stays for callers under their quota. A caller
    /// is its `authorization` credential (the scheme in any case), or its address when it
    /// sends none. A call past it
    /// is refused at once with RATE_LIMITED (`RESOURCE_EXHAUSTED`) and a RetryInfo of 1 s.
    pub fn max_per_caller(mut self, calls: usize) -> Self {
        self.max_per_caller = Some(calls.max(1));
        self
    }

    /// How long a connection with no call open and nothing read from the peer stays open
    /// (default 5 minutes).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How long a new connection may go without starting a call (default 10 s, as the HTTP
    /// bindings' header timeout); then it is closed, so that connections that send nothing
    /// cannot hold the connection slots.
    pub fn first_call_timeout(mut self, timeout: Duration) -> Self {
        self.first_call_timeout = timeout;
        self
    }

    /// The most bytes of unary replies made and not yet read by their peers, across every
    /// connection (default 32 MiB, as encoded; a reply is held as its message until its peer
    /// reads it). A reply that finds no room is AGENT_UNAVAILABLE at once, retryable after a
    /// second (peers that do not read are let go at the [`send_timeout`](Self::send_timeout),
    /// and their room with them); a reply larger than the bound is taken only when nothing
    /// else is owed. A SendMessage refused so ran all the same: a retry with the same
    /// `messageId` gets its task from the dedup.
    pub fn max_owed_bytes(mut self, bytes: usize) -> Self {
        self.max_owed_bytes = bytes.max(1024);
        self
    }

    /// How long a reply may wait for the peer to read it (to open its HTTP/2 window: a zero
    /// window is a reader that does not read) while nothing else on its connection is read
    /// (default 10 s); then the connection is closed and its replies let go. A reply is
    /// handed to HTTP/2 64 KiB at a time, so what waits is held by the call, not by h2.
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.send_timeout = timeout;
        self
    }

    /// How often a connection is pinged (HTTP/2 PING, default every 60 s); a peer that does
    /// not answer within 20 s is gone, and its connection and calls with it.
    pub fn keepalive(mut self, interval: Duration) -> Self {
        self.keepalive = interval;
        self
    }

    /// How many streams a peer may open and reset before they were answered before the
    /// connection is closed with GOAWAY (default 20, h2's: the rapid-reset guard of
    /// CVE-2023-44487). The streams the server resets for a peer's errors are limited to
    /// 1,024, hyper's default.
    pub fn max_resets(mut self, resets: usize) -> Self {
        self.max_resets = resets;
        self
    }
}

impl<H: RequestHandler> Bridge<H> {
    /// Serves [`grpc`](Self::grpc) on `listener` within `limits`, until the listener fails
    /// for good: a connection cap with a back-off when the process is out of descriptors,
    /// HTTP/2 stream and reset limits, keepalive pings and an idle timeout, and a limit on
    /// calls in flight that sheds with a truthful RetryInfo.
    ///
    /// ```no_run
    /// # async fn run(handler: a2a_server::DefaultRequestHandler) -> std::io::Result<()> {
    /// use a2a_error::sdk::{Bridge, GrpcLimits};
    ///
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
    /// Bridge::new(handler).serve_grpc(listener, GrpcLimits::default()).await
    /// # }
    /// ```
    pub async fn serve_grpc(&self, listener: TcpListener, limits: GrpcLimits) -> io::Result<()> {
        let service = Admitted {
            inner: self.grpc_owing(limits.max_owed_bytes),
            quotas: Quotas::new(limits.max_in_flight, limits.max_per_caller),
            // The bridge's own limit, over every binding, when it has one.
            admission: self.admission.clone().unwrap_or_else(|| {
                Arc::new(match limits.adaptive {
                    Some(limit) => Admission::adaptive(limit),
                    None => Admission::new(limits.max_in_flight),
                })
            }),
        };
        tonic::transport::Server::builder()
            .http2_max_header_list_size(MAX_HEADER_LIST_BYTES)
            .max_concurrent_streams(limits.max_streams)
            .http2_max_pending_accept_reset_streams(Some(limits.max_resets))
            // hyper's own default, which tonic erases (it passes `None`): the streams we reset
            // for a peer's errors (a stream over the limit among them) before GOAWAY.
            .http2_max_local_error_reset_streams(Some(LOCAL_RESETS))
            .http2_keepalive_interval(Some(limits.keepalive))
            .http2_keepalive_timeout(Some(Duration::from_secs(20)))
            .add_service(service)
            .serve_with_incoming(accepted(listener, limits))
            .await
            .map_err(io::Error::other)
    }
}

/// The connections `listener` accepts, at most `max_connections` open at once: the next is
/// accepted only when one has closed (the rest wait in the kernel's backlog). Out of file
/// descriptors (or any error but a peer's), it waits a second before accepting again, where
/// tonic's own loop spins.
fn accepted(
    listener: TcpListener,
    limits: GrpcLimits,
) -> impl Stream<Item = io::Result<Connection>> + Send + 'static {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    futures_util::stream::unfold((listener, permits), move |(listener, permits)| async move {
        let permit = Arc::clone(&permits).acquire_owned().await.ok()?;
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let connection = Connection::new(stream, permit, peer.ip(), &limits);
                    return Some((Ok(connection), (listener, permits)));
                }
                Err(error) if is_connection_error(&error) => continue,
                Err(error) => {
                    tracing::error!("gRPC accept failed: {error}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    })
}

/// What a connection and its calls share: how many calls are open on it, and when it last
/// had one or read anything; whether a call ever started; how many replies wait for the peer
/// to read them, and when the peer last took a piece of any reply.
#[derive(Debug)]
pub(crate) struct Activity {
    open: AtomicUsize,
    /// Milliseconds after `since`.
    last: AtomicU64,
    since: Instant,
    called: AtomicBool,
    owed: AtomicUsize,
    /// Milliseconds after `since`.
    taken: AtomicU64,
    peer: IpAddr,
}

impl Activity {
    fn millis(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.last.store(self.millis(), Ordering::Relaxed);
    }

    fn at(&self, millis: &AtomicU64) -> Instant {
        self.since + Duration::from_millis(millis.load(Ordering::Relaxed))
    }
}

/// The connection's share of [`Activity`], in every request's extensions (tonic's
/// `Connected`).
#[derive(Clone, Debug)]
pub(crate) struct ConnectionInfo(Arc<Activity>);

/// An accepted connection: its place under the cap, and an idle timer that closes it (a
/// read error, which hyper ends the connection on) once no call has been open and nothing
/// has been read for the idle timeout.
pub(crate) struct Connection {
    stream: TcpStream,
    activity: Arc<Activity>,
    limits: GrpcLimits,
    idle: Pin<Box<Sleep>>,
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    fn new(
        stream: TcpStream,
        permit: OwnedSemaphorePermit,
        peer: IpAddr,
        limits: &GrpcLimits,
    ) -> Self {
        let since = Instant::now();
        let first = limits
            .idle_timeout
            .min(limits.first_call_timeout)
            .min(limits.send_timeout / 2);
        Connection {
            stream,
            activity: Arc::new(Activity {
                open: AtomicUsize::new(0),
                last: AtomicU64::new(0),
                since,
                called: AtomicBool::new(false),
                owed: AtomicUsize::new(0),
                taken: AtomicU64::new(0),
                peer,
            }),
            limits: *limits,
            idle: Box::pin(tokio::time::sleep_until(since + first)),
            _permit: permit,
        }
    }

    /// Whether the connection is to be closed: idle for its timeout, no call started within
    /// the first-call timeout, or replies waiting on a peer that took nothing for the send
    /// timeout. If not, the timer is set again for when it might be.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> bool {
        while self.idle.as_mut().poll(cx).is_ready() {
            let activity = &self.activity;
            let now = Instant::now();
            let open = activity.open.load(Ordering::Acquire) > 0;
            if open {
                activity.touch();
            }
            let mut until = activity.at(&activity.last) + self.limits.idle_timeout;
            if !activity.called.load(Ordering::Acquire) {
                until = until.min(activity.since + self.limits.first_call_timeout);
            }
            if activity.owed.load(Ordering::Acquire) > 0 {
                until = until.min(activity.at(&activity.taken) + self.limits.send_timeout);
            } else if open {
                // A reply may come to wait on the peer: look again within the send timeout.
                until = until.min(now + self.limits.send_timeout / 2);
            }
            if until <= now {
                return true;
            }
            self.idle.as_mut().reset(until);
        }
        false
    }
}

impl tonic::transport::server::Connected for Connection {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        ConnectionInfo(Arc::clone(&self.activity))
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let filled = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > filled {
                    this.activity.touch();
                }
                Poll::Ready(result)
            }
            Poll::Pending if this.poll_idle(cx) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "idle gRPC connection closed",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The bridge's gRPC service under the limit on calls in flight: a call holds its slot, and
/// counts as open on its connection, until its reply body is dropped (sent, or the stream
/// reset).
#[derive(Clone)]
struct Admitted<S> {
    inner: S,
    quotas: Arc<Quotas>,
    admission: Arc<Admission>,
}

impl<S: NamedService> NamedService for Admitted<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<Request<tonic::body::Body>> for Admitted<S>
where
    S: tower::Service<
            Request<tonic::body::Body>,
            Response = Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        let activity = request
            .extensions()
            .get::<ConnectionInfo>()
            .map(|info| Arc::clone(&info.0));
        if let Some(activity) = &activity {
            activity.called.store(true, Ordering::Release);
        }
        let caller = self.quotas.caller(
            request.headers(),
            activity.as_ref().map(|activity| activity.peer),
        );
        let refused = |refusal: StandardError| {
            let reply = to_status(&refusal).into_http();
            Box::pin(async move { Ok(reply) }) as Self::Future
        };
        // The server's own limit first: a full server says so, whoever asks.
        let mut slot = match self.admission.admit_owned() {
            Ok(slot) => slot,
            Err(refusal) => return refused(refusal),
        };
        let Some(quota) = self.quotas.take(caller) else {
            return refused(a2a_error_runtime::server::quota::refusal());
        };
        let open = activity.map(Open::new);
        let reply = self.inner.call(request);
        Box::pin(async move {
            let mut reply = reply.await?;
            slot.answered();
            let reply_owed = reply.extensions_mut().remove::<super::Owed>();
            Ok(reply.map(|body| {
                tonic::body::Body::new(Held {
                    body,
                    rest: None,
                    owed: false,
                    _quota: quota,
                    _slot: slot,
                    _reply: reply_owed,
                    open,
                })
            }))
        })
    }
}

/// A call counted as open on its connection while this lives.
struct Open(Arc<Activity>);

impl Open {
    fn new(activity: Arc<Activity>) -> Self {
        activity.open.fetch_add(1, Ordering::AcqRel);
        activity.touch();
        Open(activity)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.touch();
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A reply body holding its call's slot, its caller's quota and its place among the
/// connection's open calls; it hands its data on [`CHUNK`] bytes at a time, and counts as
/// owed by the peer from handing a piece on until it is asked for the next.
struct Held {
    body: tonic::body::Body,
    /// What is left of a data frame larger than [`CHUNK`].
    rest: Option<bytes::Bytes>,
    owed: bool,
    _quota: Quota,
    _slot: OwnedSlot,
    /// A unary reply's share of the bytes owed to peers, given back when the body is dropped.
    _reply: Option<super::Owed>,
    open: Option<Open>,
}

impl Held {
    /// The peer took what was handed on (hyper asks for more only once it had the window).
    fn taken(&mut self) {
        if let Some(open) = &self.open {
            let activity = &open.0;
            activity.taken.store(activity.millis(), Ordering::Relaxed);
            if std::mem::take(&mut self.owed) {
                activity.owed.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// `data` handed on, the rest kept; owed until asked for more.
    fn hand_on(&mut self, mut data: bytes::Bytes) -> Frame<bytes::Bytes> {
        if data.len() > CHUNK {
            self.rest = Some(data.split_off(CHUNK));
        }
        if let Some(open) = &self.open {
            self.owed = true;
            open.0.owed.fetch_add(1, Ordering::AcqRel);
        }
        Frame::data(data)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.owed
            && let Some(open) = &self.open
        {
            open.0.owed.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Body for Held {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        this.taken();
        if let Some(rest) = this.rest.take() {
            return Poll::Ready(Some(Ok(this.hand_on(rest))));
        }
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => Poll::Ready(Some(Ok(this.hand_on(data)))),
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let hint = self.body.size_hint();
        let Some(rest) = &self.rest else {
            return hint;
        };
        let rest = rest.len() as u64;
        let mut with_rest = SizeHint::new();
        if let Some(upper) = hint.upper() {
            with_rest.set_upper(upper.saturating_add(rest));
        }
        with_rest.set_lower(hint.lower().saturating_add(rest));
        with_rest
    }
}
