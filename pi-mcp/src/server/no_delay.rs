//! Connections that send without Nagle's delay.
//!
//! A TCP socket holds a short write that follows one not yet acknowledged until that
//! acknowledgement arrives, and a client that delays its acknowledgements (40 ms on Linux) then
//! stalls a response written in pieces: an SSE stream's events (a tool's progress, then its
//! result) are such pieces. axum serves connections as they are accepted, so `TCP_NODELAY` is
//! set here on each.

use axum::serve::{Listener, ListenerExt};
use tokio::net::{TcpListener, TcpStream};

/// `listener`, whose accepted connections have `TCP_NODELAY` set.
pub(crate) fn without_nagle(
    listener: TcpListener,
) -> impl Listener<Io = TcpStream, Addr = std::net::SocketAddr> {
    listener.tap_io(|connection: &mut TcpStream| {
        if let Err(err) = connection.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on an MCP connection: {err}");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_without_delay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("a bound address");
        let mut listener = without_nagle(listener);
        let client = TcpStream::connect(addr).await.expect("connects");
        // Nagle's algorithm is on by default: the option is set by the listener's tap.
        assert!(!client.nodelay().expect("reads the option"));
        let (accepted, _) = listener.accept().await;
        assert!(accepted.nodelay().expect("reads the option"));
    }
}
