//! The accept loop: each connection served with HTTP/1 and watched, so that a client that
//! opens a connection and sends nothing, or a request head by halves, cannot hold a file
//! descriptor for longer than the time limits allow.
//!
//! A connection is always in one of three phases, kept in its [`Clock`]:
//!
//! - **idle**, from its start and again after each answer's last byte: nothing of a next
//!   request has come yet. After [`Limits::idle`] it is closed.
//! - **head**: the first bytes of a request have come, its head is not whole. After
//!   [`Limits::header`] from the first byte it is closed.
//! - **busy**: the request is being handled, from its head until its answer's last byte.
//!   The connection itself has no limit then: the handler bounds the body read
//!   ([`GatewayLimits::body_timeout`](super::GatewayLimits::body_timeout)) and the whole request
//!   ([`GatewayLimits::request_timeout`](super::GatewayLimits::request_timeout)).
//!
//! The limits are checked where the connection reads: a read that would wait is also a
//! wait for the phase's deadline, which fails the read (and so ends the connection) when it
//! comes first. Writes have a limit of their own in every phase: a client that takes
//! nothing of what was sent to it for [`Limits::idle`] is cut off, so one that asks for a
//! stream and never reads it cannot hold its place for good.
//!
//! # Lingering close
//!
//! A request can be answered before its body was read: 503 when the bodies hold what
//! [`GatewayLimits::max_concurrent`](super::GatewayLimits::max_concurrent) requests may, 401,
//! 413 for a declared
//! length over the limit, 400 for a malformed body. hyper then closes the connection
//! after the answer. Closed with bytes of the body still coming, the socket answers them
//! with a reset, which can reach the client before it has read the answer, or fail its
//! write of the body with a broken pipe: the client never learns why. So when the last
//! request's body was left unread, the connection's close is a lingering one: the write
//! side is shut down after the answer (the client reads it, then the end), and what still
//! comes is read and thrown away until the client closes too, [`Limits::linger_bytes`]
//! have come, or [`Limits::linger`] has passed. Nothing read is kept.

use axum::Router;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

/// How long a connection may wait in each phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// From the first byte of a request to the end of its head.
    pub(crate) header: Duration,
    /// Between answers, and before the first request; also the longest a write may wait
    /// for the client to take what was sent.
    pub(crate) idle: Duration,
    /// The longest a lingering close reads what the client still sends.
    pub(crate) linger: Duration,
    /// The most bytes a lingering close reads (and throws away).
    pub(crate) linger_bytes: usize,
}

/// How much a lingering close reads at a time: into a buffer on the stack, thrown away.
const LINGER_READ: usize = 8 << 10;

/// How long to wait before accepting again after an error that is not one connection's
/// (out of file descriptors): the connections being closed free some meanwhile.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting, lets
/// each connection finish the request under way, and returns once all are closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let (stop, stopping) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = accept(&listener) => accepted,
        };
        let socket = match accepted {
            Ok(socket) => socket,
            Err(error) if is_connection_error(&error) => continue,
            Err(_) => {
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(ACCEPT_RETRY) => continue,
                }
            }
        };
        let (router, held) = (router.clone(), stopping.clone());
        let mut signal = stopping.clone();
        tokio::spawn(async move {
            let stop = async move {
                let _ = signal.wait_for(|stop| *stop).await;
            };
            connection(socket, router, limits, stop).await;
            // Held until the connection is closed: `stop.closed()` below waits for it.
            drop(held);
        });
    }
    drop(listener);
    drop(stopping);
    let _ = stop.send(true);
    // Each connection holds a receiver until it is closed.
    stop.closed().await;
    Ok(())
}

/// The next connection, prepared to be served ([`prepare`]).
async fn accept(listener: &TcpListener) -> io::Result<tokio::net::TcpStream> {
    let (socket, _) = listener.accept().await?;
    prepare(&socket);
    Ok(socket)
}

/// Sets `TCP_NODELAY` on an accepted connection, so that each piece of an answer leaves
/// when it is written. With Nagle's algorithm on, a piece written while the one before is
/// not yet acknowledged waits for that acknowledgement, which a client that keeps its
/// connection (curl, wrk, most HTTP libraries) delays by up to 40 ms: every streamed
/// answer took 44 ms, and a stream's pieces were held back and bunched (BENCHMARKS.md,
/// Gateway, "Latency: one streaming client on a kept-alive connection"). What is ready at
/// once still leaves at once: the head with the first piece ([`AnswerBody`]), the chunks
/// released together as one piece. Failing to set it costs only that delay.
fn prepare(socket: &tokio::net::TcpStream) {
    let _ = socket.set_nodelay(true);
}

/// Errors of one connection that went away before it was accepted: accept the next.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it closes; once `stop` completes, the request under way is
/// finished and the connection closed.
pub(crate) async fn connection<S>(
    socket: S,
    router: Router,
    limits: Limits,
    stop: impl Future<Output = ()>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let clock = Arc::new(Clock::new());
    let io = TokioIo::new(Watched {
        socket,
        clock: Arc::clone(&clock),
        limits,
        sleep: Box::pin(tokio::time::sleep(limits.idle)),
        write_waits_since: None,
        write_sleep: Box::pin(tokio::time::sleep(limits.idle)),
        lingering: None,
    });
    let service = TowerToHyperService::new(router);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        clock.busy();
        let done = Done(Arc::clone(&clock));
        let request = request.map(|body| Reading::new(body, Arc::clone(&clock)));
        let answer = hyper::service::Service::call(&service, request);
        async move {
            let response = answer.await?;
            let (head, body) = response.into_parts();
            let body = AnswerBody::read(body, done).await;
            Ok::<_, std::convert::Infallible>(hyper::Response::from_parts(head, body))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        // An error is this connection's alone (a client gone, a limit passed): nothing to
        // report.
        _ = connection.as_mut() => return,
        () = stop => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

/// The phase a connection is in (see the module doc).
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request since this instant.
    Idle(Instant),
    /// The first byte of a request came at this instant; its head is not whole yet.
    Head(Instant),
    /// A request is being handled.
    Busy,
}

/// A connection's phase, shared by its reads and its service.
#[derive(Debug)]
struct Clock(Mutex<Shared>);

#[derive(Debug)]
struct Shared {
    phase: Phase,
    /// The last read that waited without a deadline (while busy): woken when the
    /// connection goes idle, so that the idle deadline is set at once.
    reader: Option<Waker>,
    /// The last request's body was dropped before its end: its client may still be
    /// sending it, so the connection's close lingers.
    unread: bool,
}

impl Clock {
    fn new() -> Clock {
        Clock(Mutex::new(Shared {
            phase: Phase::Idle(Instant::now()),
            reader: None,
            unread: false,
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A poisoned lock still holds a phase: a panic elsewhere does not stop the clock.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes came: an idle connection now reads a request head.
    fn received(&self) {
        let mut shared = self.lock();
        if let Phase::Idle(_) = shared.phase {
            shared.phase = Phase::Head(Instant::now());
        }
    }

    /// A request's head came: it is being handled, and its body is not yet left unread.
    fn busy(&self) {
        let mut shared = self.lock();
        shared.phase = Phase::Busy;
        shared.unread = false;
    }

    /// The request's body was dropped before its end.
    fn left_unread(&self) {
        self.lock().unread = true;
    }

    /// Whether the last request's body was left unread.
    fn unread(&self) -> bool {
        self.lock().unread
    }

    fn idle(&self) {
        let reader = {
            let mut shared = self.lock();
            shared.phase = Phase::Idle(Instant::now());
            shared.reader.take()
        };
        if let Some(reader) = reader {
            reader.wake();
        }
    }

    /// When a read that waits must give up, and why; a read without a deadline is kept
    /// to be woken when one starts.
    fn deadline(&self, limits: &Limits, reader: &Waker) -> Option<(Instant, &'static str)> {
        let mut shared = self.lock();
        match shared.phase {
            Phase::Idle(since) => Some((since + limits.idle, "the connection was idle too long")),
            Phase::Head(since) => Some((
                since + limits.header,
                "the request head did not arrive in time",
            )),
            Phase::Busy => {
                shared.reader = Some(reader.clone());
                None
            }
        }
    }
}

/// Sets its connection idle when dropped: the answer's last byte was taken, or the
/// request was given up.
struct Done(Arc<Clock>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.idle();
    }
}

/// An answer's body, which sets its connection idle once it is over, and, streamed, whose
/// first frame was read before its head is written, so that the head leaves with it:
/// hyper writes out the head alone when the body has nothing ready, and the first piece
/// then follows in a packet of its own. A body whose length is known (a whole answer) is
/// ready at once and is not read ahead.
struct AnswerBody {
    /// The first frame, until it is taken; `None` once taken, or when none was read.
    first: Option<Option<Result<Frame<axum::body::Bytes>, axum::Error>>>,
    rest: axum::body::Body,
    _done: Done,
}

impl AnswerBody {
    async fn read(mut body: axum::body::Body, done: Done) -> AnswerBody {
        let streamed = !body.is_end_stream() && body.size_hint().exact().is_none();
        let first = if streamed {
            Some(std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await)
        } else {
            None
        };
        AnswerBody {
            first,
            rest: body,
            _done: done,
        }
    }
}

impl HttpBody for AnswerBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        match self.first.take() {
            Some(first) => Poll::Ready(first),
            None => Pin::new(&mut self.rest).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.first {
            Some(first) => first.is_none(),
            None => self.rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.rest.size_hint();
        if let Some(Some(Ok(frame))) = &self.first {
            let held = frame.data_ref().map_or(0, |data| data.len() as u64);
            // The upper bound first: the lower may never pass it.
            if let Some(upper) = hint.upper() {
                hint.set_upper(upper.saturating_add(held));
            }
            hint.set_lower(hint.lower().saturating_add(held));
        }
        hint
    }
}

/// A request's body that tells its connection when it is dropped before its end.
struct Reading {
    body: Incoming,
    clock: Arc<Clock>,
    /// The body's end was read (or there was none).
    ended: bool,
}

impl Reading {
    fn new(body: Incoming, clock: Arc<Clock>) -> Reading {
        let ended = body.is_end_stream();
        Reading { body, clock, ended }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        if !self.ended {
            self.clock.left_unread();
        }
    }
}

impl HttpBody for Reading {
    type Data = axum::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        // A body that failed (malformed) is not ended: its client may still be sending.
        if let Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A lingering close under way: what it may still read.
struct Lingering {
    /// Bytes it may still read.
    left: usize,
}

/// A connection's socket whose reads also wait for the deadline of its phase.
struct Watched<S> {
    socket: S,
    clock: Arc<Clock>,
    limits: Limits,
    /// Set to the deadline of the phase each time a read waits; during a lingering close,
    /// to its end.
    sleep: Pin<Box<Sleep>>,
    /// Since when writes have waited for the client to take what was sent, if they do.
    write_waits_since: Option<Instant>,
    /// Set to [`Limits::idle`] after `write_waits_since` each time a write waits.
    write_sleep: Pin<Box<Sleep>>,
    /// Set once the write side is shut down, when the close lingers.
    lingering: Option<Lingering>,
}

impl<S> Watched<S> {
    /// A write's outcome, failed once writes have waited longer than [`Limits::idle`]: a
    /// client that takes nothing of its answer would otherwise hold its connection and its
    /// place among the requests under way for as long as it stays connected.
    fn written<T>(
        &mut self,
        cx: &mut Context<'_>,
        outcome: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if outcome.is_ready() {
            self.write_waits_since = None;
            return outcome;
        }
        let since = *self.write_waits_since.get_or_insert_with(Instant::now);
        let deadline = since + self.limits.idle;
        if self.write_sleep.deadline() != deadline {
            self.write_sleep.as_mut().reset(deadline);
        }
        match self.write_sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took nothing of its answer for too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.socket).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.clock.received();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                let Some((deadline, why)) = this.clock.deadline(&this.limits, cx.waker()) else {
                    return Poll::Pending;
                };
                if this.sleep.deadline() != deadline {
                    this.sleep.as_mut().reset(deadline);
                }
                match this.sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.socket).poll_write(cx, buf);
        self.written(cx, outcome)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_flush(cx)
    }

    /// Shuts the write side down, then, when the last request's body was left unread,
    /// lingers (see the module doc). hyper shuts a connection down when it closes it after
    /// an answer, not when the connection failed.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.lingering.is_none() {
            ready!(Pin::new(&mut this.socket).poll_shutdown(cx))?;
            if !this.clock.unread() || this.limits.linger.is_zero() {
                return Poll::Ready(Ok(()));
            }
            let end = Instant::now() + this.limits.linger;
            this.sleep.as_mut().reset(end);
            this.lingering = Some(Lingering {
                left: this.limits.linger_bytes,
            });
        }
        let Some(lingering) = &mut this.lingering else {
            return Poll::Ready(Ok(()));
        };
        let mut scratch = [0u8; LINGER_READ];
        while lingering.left > 0 {
            let mut buf = ReadBuf::new(&mut scratch[..lingering.left.min(LINGER_READ)]);
            match Pin::new(&mut this.socket).poll_read(cx, &mut buf) {
                // The client closed its side (or is gone): nothing more will come.
                Poll::Ready(Ok(())) if buf.filled().is_empty() => break,
                Poll::Ready(Err(_)) => break,
                Poll::Ready(Ok(())) => lingering.left -= buf.filled().len(),
                Poll::Pending => {
                    ready!(this.sleep.as_mut().poll(cx));
                    break;
                }
            }
        }
        lingering.left = 0;
        Poll::Ready(Ok(()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.socket).poll_write_vectored(cx, bufs);
        self.written(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.socket.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::{Body, Bytes};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection's server side that keeps each write the server makes.
    struct Recording {
        inner: tokio::io::DuplexStream,
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    impl AsyncRead for Recording {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Recording {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
            self.writes.lock().unwrap().push(buf[..written].to_vec());
            Poll::Ready(Ok(written))
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// A stream that has nothing the first time it is asked (and asks to be asked
    /// again at once), then one piece: as a streamed answer whose first piece is not yet
    /// there when its head is ready.
    #[derive(Default)]
    struct NotYet {
        asked: bool,
        given: bool,
    }

    impl futures::Stream for NotYet {
        type Item = Result<Bytes, io::Error>;

        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            if !self.asked {
                self.asked = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if self.given {
                return Poll::Ready(None);
            }
            self.given = true;
            Poll::Ready(Some(Ok(Bytes::from_static(b"data: first\n\n"))))
        }
    }

    const LIMITS: Limits = Limits {
        header: Duration::from_secs(10),
        idle: Duration::from_secs(10),
        linger: Duration::from_secs(1),
        linger_bytes: 1024,
    };

    /// The writes the server makes to answer `GET /` with `router`, and the answer.
    async fn writes_for(router: Router) -> (Vec<Vec<u8>>, String) {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let writes = Arc::new(Mutex::new(Vec::new()));
        let io = Recording {
            inner: server,
            writes: Arc::clone(&writes),
        };
        let serving = tokio::spawn(connection(io, router, LIMITS, std::future::pending()));
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        serving.await.unwrap();
        let writes = writes.lock().unwrap().clone();
        (writes, answer)
    }

    #[tokio::test]
    async fn a_streamed_answers_head_leaves_with_its_first_piece() {
        let router = Router::new().route(
            "/",
            axum::routing::get(|| async { Body::from_stream(NotYet::default()) }),
        );
        let (writes, answer) = writes_for(router).await;
        assert!(answer.contains("data: first"), "{answer}");
        let first = String::from_utf8_lossy(&writes[0]);
        assert!(
            first.starts_with("HTTP/1.1 200 OK") && first.contains("data: first"),
            "the head was written without the first piece: {:?}",
            writes
                .iter()
                .map(|w| String::from_utf8_lossy(w))
                .collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn a_whole_answer_is_not_changed() {
        let router = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let (_, answer) = writes_for(router).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("content-length: 2"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
    }

    #[tokio::test]
    async fn accepted_connections_send_each_piece_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(address).await.unwrap();
        // Off unless set: the default the gateway must not keep.
        assert!(!client.nodelay().unwrap());
        let socket = accept(&listener).await.unwrap();
        assert!(socket.nodelay().unwrap());
    }
}
