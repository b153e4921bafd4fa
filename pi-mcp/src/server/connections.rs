//! The HTTP server's connections, served by hyper with a timer: a request head must arrive
//! within the header timeout, a connection with no request in flight is closed after the idle
//! timeout, and open connections are capped (in all and per peer address). At a cap the oldest
//! idle connection makes room, so idle and slow connections, which anyone who can reach the
//! port can open without a token, cannot lock out clients that send requests.
//!
//! axum's `serve` has none of this (it starts hyper without a timer, so even hyper's header
//! timeout never fires); hence this accept loop.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use super::guarded_body::with_guard;
use super::limits::HttpLimits;

/// Where connections come from: a TCP listener (each connection without Nagle's delay) or a
/// Unix socket.
pub(crate) trait Acceptor: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// The next connection and its peer's IP address (none on a Unix socket).
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Io, Option<IpAddr>)>> + Send;
}

impl Acceptor for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept(&mut self) -> io::Result<(Self::Io, Option<IpAddr>)> {
        let (connection, peer) = tokio::net::TcpListener::accept(self).await?;
        // An SSE stream written in pieces (a tool's progress, then its result) must not wait
        // for the client's delayed acknowledgement (Nagle's algorithm).
        if let Err(err) = connection.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on an MCP connection: {err}");
        }
        Ok((connection, Some(peer.ip().to_canonical())))
    }
}

#[cfg(unix)]
impl Acceptor for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;

    async fn accept(&mut self) -> io::Result<(Self::Io, Option<IpAddr>)> {
        let (connection, _) = tokio::net::UnixListener::accept(self).await?;
        Ok((connection, None))
    }
}

/// Serves `router` on every connection `acceptor` gives, within `limits`, until an accept fails
/// for a reason other than the client's or a lack of file descriptors (which never happens for
/// a listening socket in practice): then the error.
pub(crate) async fn serve(
    mut acceptor: impl Acceptor,
    router: axum::Router,
    limits: &HttpLimits,
) -> io::Result<()> {
    let table = Arc::new(Table::new(
        connection_cap(limits.max_connections()),
        limits.max_connections_per_peer(),
    ));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout())
        .keep_alive(true);
    let idle_timeout = limits.idle_timeout();
    loop {
        let (io, peer) = match acceptor.accept().await {
            Ok(accepted) => accepted,
            Err(err) if out_of_files(&err) => {
                // Free a descriptor: an idle connection is the cheapest to give up.
                if !table.evict_oldest_idle(None) {
                    tracing::warn!("MCP server out of file descriptors, all connections busy");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(err) if client_gone(&err) => continue,
            Err(err) => {
                tracing::error!("MCP server cannot accept connections: {err}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let Some(admitted) = table.admit(peer) else {
            tokio::spawn(refuse(io));
            continue;
        };
        tokio::spawn(serve_connection(
            builder.clone(),
            io,
            router.clone(),
            admitted,
            idle_timeout,
        ));
    }
}

/// One connection, until it ends, is evicted, or stays idle past `idle_timeout`.
async fn serve_connection<I>(
    builder: hyper::server::conn::http1::Builder,
    io: I,
    router: axum::Router,
    admitted: Admitted,
    idle_timeout: Duration,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let state = admitted.state.clone();
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let in_flight = InFlight::enter(state.clone());
        let mut router = router.clone();
        async move {
            let response = match router.call(request.map(Body::new)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            // An SSE answer is a request in flight for as long as its stream lasts.
            Ok::<_, Infallible>(response.map(|body| with_guard(body, in_flight)))
        }
    });
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let state = &admitted.state;
    let mut shutting_down = false;
    loop {
        let wake = match state.idle_since() {
            _ if shutting_down => None,
            Some(since) => Some(since + idle_timeout),
            None => Some(Instant::now() + idle_timeout),
        };
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!("MCP connection ended: {err}");
                }
                return;
            }
            () = state.close.cancelled() => return,
            () = sleep_until(wake) => {
                if state.idle_since().is_some_and(|since| since.elapsed() >= idle_timeout) {
                    // Closes at once when nothing was read; a partial head is left to the
                    // header timer.
                    connection.as_mut().graceful_shutdown();
                    shutting_down = true;
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// A connection past a cap with every other one busy: told why, then closed. What the client
/// sends meanwhile is read and dropped (for at most a second), so closing does not reset the
/// connection before the client has read the answer.
async fn refuse<I: AsyncRead + AsyncWrite + Unpin>(mut io: I) {
    const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
        Content-Type: text/plain; charset=utf-8\r\nContent-Length: 64\r\nConnection: close\r\n\r\n\
        Service Unavailable: too many open connections; try again later\n";
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        io.write_all(REFUSAL).await?;
        io.shutdown().await?;
        let mut sink = [0u8; 1024];
        while io.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}

/// The total cap: `configured`, and at most 3/4 of the open-file limit, so the tools' files,
/// pipes and processes still find descriptors.
fn connection_cap(configured: usize) -> usize {
    #[cfg(unix)]
    if let Ok((soft, _)) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
    {
        let usable = usize::try_from(soft / 4 * 3).unwrap_or(usize::MAX);
        return configured.min(usable).max(1);
    }
    configured
}

fn out_of_files(err: &io::Error) -> bool {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        matches!(err.raw_os_error(), Some(code) if code == Errno::EMFILE as i32 || code == Errno::ENFILE as i32)
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// Errors of one connection that went away before it was accepted.
fn client_gone(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// What the accept loop and a connection's task share about it.
struct ConnectionState {
    /// Requests whose answer is not yet fully sent.
    in_flight: AtomicUsize,
    /// When `in_flight` last became 0, in ms since the table's epoch.
    idle_since_ms: AtomicU64,
    epoch: Instant,
    /// Cancelled when the connection is evicted: its task drops it.
    close: CancellationToken,
}

impl ConnectionState {
    /// Since when the connection has had no request in flight; `None` while it has one.
    fn idle_since(&self) -> Option<Instant> {
        (self.in_flight.load(Ordering::Acquire) == 0)
            .then(|| self.epoch + Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire)))
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// One request in flight on a connection; dropped when its answer has been sent (or dropped).
struct InFlight(Arc<ConnectionState>);

impl InFlight {
    fn enter(state: Arc<ConnectionState>) -> Self {
        state.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(state)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .idle_since_ms
            .store(self.0.now_ms(), Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The open connections, for the caps.
struct Table {
    epoch: Instant,
    max_total: usize,
    max_per_peer: usize,
    inner: Mutex<TableInner>,
}

#[derive(Default)]
struct TableInner {
    next_id: u64,
    open: HashMap<u64, Entry>,
    per_peer: HashMap<IpAddr, usize>,
}

struct Entry {
    peer: Option<IpAddr>,
    state: Arc<ConnectionState>,
}

/// An admitted connection: its place in the table, given back on drop.
struct Admitted {
    id: u64,
    table: Arc<Table>,
    state: Arc<ConnectionState>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.table.lock().remove(self.id);
    }
}

impl Table {
    fn new(max_total: usize, max_per_peer: usize) -> Self {
        Table {
            epoch: Instant::now(),
            max_total,
            max_per_peer,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, TableInner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for a connection from `peer`, making room at a cap by evicting that peer's (or
    /// anyone's) oldest idle connection; `None` when every connection in the way is busy.
    fn admit(self: &Arc<Self>, peer: Option<IpAddr>) -> Option<Admitted> {
        let mut inner = self.lock();
        if let Some(ip) = peer
            && inner.per_peer.get(&ip).copied().unwrap_or(0) >= self.max_per_peer
            && !inner.evict_oldest_idle(Some(ip))
        {
            return None;
        }
        if inner.open.len() >= self.max_total && !inner.evict_oldest_idle(None) {
            return None;
        }
        let state = Arc::new(ConnectionState {
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            epoch: self.epoch,
            close: CancellationToken::new(),
        });
        state.idle_since_ms.store(state.now_ms(), Ordering::Release);
        let id = inner.next_id;
        inner.next_id += 1;
        inner.open.insert(
            id,
            Entry {
                peer,
                state: state.clone(),
            },
        );
        if let Some(ip) = peer {
            *inner.per_peer.entry(ip).or_default() += 1;
        }
        Some(Admitted {
            id,
            table: self.clone(),
            state,
        })
    }

    /// Closes the oldest idle connection (of `peer`, or of anyone); false if none is idle.
    fn evict_oldest_idle(&self, peer: Option<IpAddr>) -> bool {
        self.lock().evict_oldest_idle(peer)
    }
}

impl TableInner {
    fn evict_oldest_idle(&mut self, peer: Option<IpAddr>) -> bool {
        let oldest = self
            .open
            .iter()
            .filter(|(_, entry)| peer.is_none() || entry.peer == peer)
            .filter_map(|(id, entry)| entry.state.idle_since().map(|since| (since, *id)))
            .min();
        let Some((_, id)) = oldest else {
            return false;
        };
        if let Some(entry) = self.remove(id) {
            tracing::debug!(peer = ?entry.peer, "closing an idle MCP connection to make room");
            entry.state.close.cancel();
        }
        true
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.open.remove(&id)?;
        if let Some(ip) = entry.peer
            && let Some(count) = self.per_peer.get_mut(&ip)
        {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&ip);
            }
        }
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_without_delay() {
        let mut listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let addr = listener.local_addr().expect("a bound address");
        let client = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connects");
        // Nagle's algorithm is on by default: the option is set when accepting.
        assert!(!client.nodelay().expect("reads the option"));
        let (accepted, peer) = Acceptor::accept(&mut listener).await.expect("accepts");
        assert!(accepted.nodelay().expect("reads the option"));
        assert_eq!(peer, Some(IpAddr::from([127, 0, 0, 1])));
    }

    #[test]
    fn a_cap_evicts_the_oldest_idle_connection_and_refuses_when_all_are_busy() {
        let table = Arc::new(Table::new(3, 2));
        let a: IpAddr = [127, 0, 0, 2].into();
        let b: IpAddr = [127, 0, 0, 3].into();
        let first = table.admit(Some(a)).expect("room");
        let second = table.admit(Some(a)).expect("room");
        let _busy = InFlight::enter(second.state.clone());
        // `a` is at its cap: its idle connection makes room, the busy one stays.
        let third = table
            .admit(Some(a))
            .expect("room after evicting the idle one");
        assert!(first.state.close.is_cancelled());
        assert!(!second.state.close.is_cancelled());
        let _busy_too = InFlight::enter(third.state.clone());
        assert!(table.admit(Some(a)).is_none(), "both of a's are busy");
        // The total cap: `b` gets the last place, then nothing is idle.
        let fourth = table.admit(Some(b)).expect("room");
        let _busy_three = InFlight::enter(fourth.state.clone());
        assert!(table.admit(None).is_none(), "every connection is busy");
        drop(fourth);
        assert!(
            table.admit(None).is_some(),
            "a closed connection gives its place back"
        );
    }
}
