//! Serving an endpoint's connections without Nagle's delay.
//!
//! The SDK's `HttpServer` serves the connections its listener accepts as they are, and a TCP
//! socket sends with Nagle's algorithm unless told otherwise: a short write that follows one not
//! yet acknowledged waits for that acknowledgement. Restate's server acknowledges late (delayed
//! acknowledgement, 40 ms on Linux), so an invocation could wait 40 ms where the service writes
//! twice in a row: on the new connection Restate opens for it, its settings acknowledgement and
//! then the first journal entries, and at the end an output of more than one 16 KB frame (a
//! session's transcript). The listeners here set `TCP_NODELAY`, which the connections they accept
//! inherit.

use std::io;
use std::net::SocketAddr;

use restate_sdk::endpoint::Endpoint;
use restate_sdk::http_server::HttpServer;
use tokio::net::{TcpListener, TcpSocket};

/// A listener on `addr` for an endpoint's connections: each connection it accepts sends without
/// Nagle's delay (`TCP_NODELAY`). Hand it to the SDK's `HttpServer::serve`, or use [`serve`].
///
/// Call it on a tokio runtime (the listener registers with it).
pub async fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As `TcpListener::bind` does: a restarted service can bind its port again at once.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    // Accepted connections inherit it from the listener (Linux and BSD-derived stacks do; the
    // test below checks it where it runs).
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Serves `endpoint` on `addr` (HTTP/2, as the SDK's `HttpServer` does) with connections that
/// send without Nagle's delay; runs until the process gets Ctrl-C. Fails only if `addr` cannot
/// be bound.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use pi_restate::restate_sdk::prelude::*;
/// let endpoint = Endpoint::builder().bind(pi_restate::PiSessionInbox).build();
/// pi_restate::serve(endpoint, "127.0.0.1:9080".parse().unwrap()).await
/// # }
/// ```
pub async fn serve(endpoint: Endpoint, addr: SocketAddr) -> io::Result<()> {
    let listener = bind(addr).await?;
    HttpServer::new(endpoint).serve(listener).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_without_delay() {
        for any in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = bind(any.parse().expect("an address")).await else {
                // No IPv6 loopback on this machine.
                continue;
            };
            let addr = listener.local_addr().expect("a bound address");
            let client = tokio::net::TcpStream::connect(addr)
                .await
                .expect("connects");
            let (accepted, _) = listener.accept().await.expect("accepts");
            assert!(accepted.nodelay().expect("reads the option"), "{any}");
            // The client's side is the client's business.
            drop(client);
        }
    }

    #[tokio::test]
    async fn a_port_in_use_is_an_error() {
        let first = bind("127.0.0.1:0".parse().expect("an address"))
            .await
            .expect("binds");
        let taken = first.local_addr().expect("a bound address");
        assert!(bind(taken).await.is_err());
    }
}
