//! A local HTTP/1.1 server on 127.0.0.1 that answers each request with a prepared reply and
//! records what it was sent (target, headers, JSON body): the other end of the HTTP provider
//! tests (`providers_http.rs`, Mistral, Azure OpenAI).

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a reply's body ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// The chunked body is terminated properly.
    Complete,
    /// The socket closes without the terminating chunk: a connection cut mid-stream.
    Cut,
    /// The socket stays open and silent.
    Hang,
}

#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    headers: Vec<(&'static str, String)>,
    chunks: Vec<Vec<u8>>,
    end: End,
}

impl Reply {
    /// A 200 event stream, its body split into pieces of `size` bytes (each its own HTTP chunk).
    pub fn stream(body: &str, size: usize) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            chunks: body.as_bytes().chunks(size).map(<[u8]>::to_vec).collect(),
            end: End::Complete,
        }
    }

    /// A 200 body of bytes (AWS's binary event stream), in pieces of `size` bytes.
    pub fn binary(body: &[u8], size: usize, content_type: &str) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type", content_type.into())],
            chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
            end: End::Complete,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type", "application/json".into())],
            chunks: vec![body.as_bytes().to_vec()],
            end: End::Complete,
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn ending(mut self, end: End) -> Self {
        self.end = end;
        self
    }
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The body as sent (a form, or bytes that are not JSON).
    pub raw: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A one-request-per-connection HTTP/1.1 server on 127.0.0.1 that answers with prepared
/// replies, in order, and records every request.
pub struct Server {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::status(500, r#"{"error":{"message":"no reply left"}}"#)
                });
                let record = record.clone();
                tokio::spawn(async move { answer(socket, reply, record).await });
            }
        });
        Server { url, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// One HTTP/1.1 request as read off a socket: header names lower-cased, the body as long as
/// its `content-length` says.
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads one request from `socket`; `None` when it closes (or fails) before the head ends.
pub async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let target = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 65536];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    Some(Request {
        method,
        target,
        headers,
        body: buffer.split_off(head_end),
    })
}

async fn answer(mut socket: TcpStream, reply: Reply, seen: Arc<Mutex<Vec<Seen>>>) {
    socket.set_nodelay(true).unwrap();
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    seen.lock().unwrap().push(Seen {
        target: request.target,
        headers: request.headers,
        body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        raw: request.body,
    });

    let mut response = format!(
        "HTTP/1.1 {} Status\r\nconnection: close\r\ntransfer-encoding: chunked\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    if socket.write_all(response.as_bytes()).await.is_err() {
        return;
    }
    for chunk in &reply.chunks {
        let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if socket.write_all(&framed).await.is_err() {
            return;
        }
        let _ = socket.flush().await;
        tokio::task::yield_now().await;
    }
    match reply.end {
        End::Complete => {
            let _ = socket.write_all(b"0\r\n\r\n").await;
            let _ = socket.shutdown().await;
        }
        End::Cut => {
            let _ = socket.shutdown().await;
        }
        End::Hang => {
            // Bounded: the test ends long before.
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }
}
