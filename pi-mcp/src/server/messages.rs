//! What a POST must be before rmcp acts on it: one JSON-RPC message, whose id (for a request in
//! a session) is not already in flight there.
//!
//! rmcp 3.11 answers a body it cannot read as a JSON-RPC message (malformed JSON, a batch,
//! nesting past serde_json's 128 levels) with `415 Unsupported Media Type` and a plain-text
//! serde error. The transport spec asks for an HTTP error such as 400 with a JSON-RPC error
//! body, so such an answer becomes `400` with `-32700` (parse error) or `-32600` (invalid
//! request). The body is read here (within the body limit, 413 past it, as rmcp does) and
//! handed on as it came, so a valid message is parsed once, by rmcp, and rmcp's own checks
//! (`Host`, `Origin`, `Accept`, `Content-Type`) still come first.
//!
//! In a session rmcp routes an answer to the HTTP stream of the request with that id, so a
//! second request with an id already in flight took the first one's stream, and the first
//! never got its answer. Such a request is answered here with a JSON-RPC error instead (the
//! ids are [`RequestIds`]': taken until the call's answer went out, not until the client
//! hung up).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::model::{ClientJsonRpcMessage, RequestId};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use super::request_ids::{RequestIds, id_in_use_message};

/// JSON-RPC's "Parse error": the body is not JSON (or nests too deep to read).
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request": JSON, but not one JSON-RPC message; or an id in use.
const INVALID_REQUEST: i64 = -32600;

/// The state of the check: the body limit and the sessions' request ids in flight.
pub(crate) struct MessageCheck {
    max_body_bytes: usize,
    ids: Arc<RequestIds>,
}

impl MessageCheck {
    pub(crate) fn new(max_body_bytes: usize, ids: Arc<RequestIds>) -> Self {
        MessageCheck {
            max_body_bytes,
            ids,
        }
    }
}

/// The axum middleware in front of rmcp.
pub(crate) async fn check(
    State(check): State<Arc<MessageCheck>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !is_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match read_limited(body, check.max_body_bytes).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    // The session takes the id when rmcp hands it the request; one taken already is refused
    // here, as plain JSON.
    if let Some(session) = parts
        .headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        && let Some(id) = request_id(&body)
        && check.ids.is_taken(session, &id)
    {
        return id_in_flight(&id);
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(body.clone())))
        .await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
        && let Some(answer) = not_one_message(&body)
    {
        return answer;
    }
    response
}

/// The `Content-Type` rmcp reads a body for: `application/json`, with any parameters.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// The whole body, or 413 past `max_bytes` (rmcp's answer and text).
async fn read_limited(mut body: Body, max_bytes: usize) -> Result<Bytes, Response> {
    let mut collected = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| {
            plain(
                StatusCode::BAD_REQUEST,
                format!("Bad Request: the request body could not be read: {err}"),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.len() > max_bytes.saturating_sub(collected.len()) {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {max_bytes} bytes"),
            ));
        }
        if collected.is_empty() {
            collected = data.to_vec();
        } else {
            collected.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(collected))
}

/// The id of a JSON-RPC request (a message with a `method` and an `id`), read without
/// building the rest.
fn request_id(body: &[u8]) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct Probe {
        id: Option<RequestId>,
        method: Option<IgnoredAny>,
    }
    let probe: Probe = serde_json::from_slice(body).ok()?;
    probe.method.and(probe.id)
}

/// The answer for a body rmcp refused as not one JSON-RPC message, or `None` when it is one
/// (rmcp's 415 was then about something else, and stands).
fn not_one_message(body: &[u8]) -> Option<Response> {
    // A `Value`, not `IgnoredAny`: only a value's reader stops at 128 levels, as rmcp's does.
    if let Err(err) = serde_json::from_slice::<Value>(body) {
        return Some(jsonrpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            PARSE_ERROR,
            &format!("Parse error: the body is not JSON that can be read ({err})"),
        ));
    }
    if body.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'[') {
        return Some(jsonrpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            INVALID_REQUEST,
            "Invalid Request: JSON-RPC batches are not supported (MCP removed them in \
             2025-06-18); send one message per request",
        ));
    }
    let err = serde_json::from_slice::<ClientJsonRpcMessage>(body).err()?;
    let id = request_id(body).map_or(Value::Null, |id| json!(id));
    Some(jsonrpc_error(
        StatusCode::BAD_REQUEST,
        &id,
        INVALID_REQUEST,
        &format!("Invalid Request: not a JSON-RPC 2.0 message this server reads ({err})"),
    ))
}

/// The answer to a request whose id is in flight in its session: a JSON-RPC error for that
/// id, so the client's request is answered (its first request will be too).
fn id_in_flight(id: &RequestId) -> Response {
    jsonrpc_error(
        StatusCode::OK,
        &json!(id),
        INVALID_REQUEST,
        &id_in_use_message(id),
    )
}

fn jsonrpc_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn plain(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(body: &str) -> Option<(StatusCode, Value)> {
        let response = not_one_message(body.as_bytes())?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        Some((status, serde_json::from_slice(&bytes).unwrap()))
    }

    #[tokio::test]
    async fn bodies_that_are_not_one_message_get_the_jsonrpc_error_for_what_they_are() {
        let (status, body) = answer("{\"jsonrpc\": \"2.0\", ").await.unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["code"], PARSE_ERROR);
        assert_eq!(body["id"], Value::Null);
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        assert_eq!(answer(&deep).await.unwrap().1["error"]["code"], PARSE_ERROR);
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        assert_eq!(
            answer(batch).await.unwrap().1["error"]["code"],
            INVALID_REQUEST
        );
        let (_, body) = answer(r#"{"id": 7, "method": 3}"#).await.unwrap();
        assert_eq!(body["error"]["code"], INVALID_REQUEST);
        assert_eq!(
            body["id"], 7,
            "the id is echoed, though the method is not a string"
        );
        assert!(
            answer(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                .await
                .is_none()
        );
    }

    #[test]
    fn only_requests_have_an_id_to_claim() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call"}"#),
            Some(RequestId::String("a".into()))
        );
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#), None);
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            None
        );
        assert_eq!(request_id(b"not json"), None);
    }
}
