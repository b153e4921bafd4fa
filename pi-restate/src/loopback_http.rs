//! A minimal blocking HTTP/1.1 client for loopback calls to Restate's admin API and ingress
//! (tests, examples, benchmarks): one request per connection, `Connection: close`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A loopback request that failed below HTTP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// Connecting, writing or reading failed.
    #[error("HTTP request to {addr} failed: {source}")]
    Io {
        /// The server.
        addr: SocketAddr,
        /// What failed.
        source: std::io::Error,
    },
    /// The answer was not an HTTP/1.1 response.
    #[error("malformed HTTP response from {0}")]
    Malformed(SocketAddr),
}

/// How long one request may take: a prompt to a session can run many model and tool steps.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Sends one request and returns `(status, body)`.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<(u16, Vec<u8>), HttpError> {
    let io = |source| HttpError::Io { addr, source };
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(io)?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT)).map_err(io)?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    // One write: a second one could wait for the first's (delayed) acknowledgement (Nagle).
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).map_err(io)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(io)?;
    parse_response(&response).ok_or(HttpError::Malformed(addr))
}

fn parse_response(response: &[u8]) -> Option<(u16, Vec<u8>)> {
    let split = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&response[..split]).ok()?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let raw = &response[split + 4..];
    let chunked = head.lines().any(|line| {
        let line = line.to_ascii_lowercase();
        line.starts_with("transfer-encoding:") && line.contains("chunked")
    });
    let body = if chunked { dechunk(raw)? } else { raw.to_vec() };
    Some((status, body))
}

fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_and_chunked_bodies_and_refuses_garbage() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi";
        assert_eq!(parse_response(plain), Some((200, b"hi".to_vec())));
        let chunked = b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Some((202, b"abcde".to_vec())));
        assert_eq!(parse_response(b"nonsense"), None);
        let truncated = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nab";
        assert_eq!(parse_response(truncated), None);
    }
}
