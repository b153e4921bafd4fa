//! Requests to the MCP server with a DPoP-bound token: rmcp's `AuthClient` finds the token (and
//! refreshes it), this client presents it as `Authorization: DPoP <token>` with a fresh proof in
//! the `DPoP` header (method, URL, token hash), then sends with rmcp's own reqwest client.
//!
//! A server that demands a nonce answers 401 with `error="use_dpop_nonce"` and the nonce in a
//! `DPoP-Nonce` header (RFC 9449 section 9). rmcp's client keeps only the `WWW-Authenticate`
//! header of a 401, so the nonce is fetched with an empty POST to the same URL (refused before
//! any processing, as the server refuses every proof without its nonce), then the request is
//! sent again with it.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::dpop::{DPOP_NONCE_HEADER, DpopKey, asks_for_nonce};

type HttpError = StreamableHttpError<reqwest::Error>;

/// rmcp's reqwest client with DPoP proofs.
#[derive(Clone)]
pub(crate) struct DpopHttp {
    pub(crate) http: reqwest::Client,
    pub(crate) key: Arc<DpopKey>,
}

impl DpopHttp {
    /// The headers for one request: the token as DPoP (with a proof) when it is bound to the
    /// key, else as a bearer token (an authorization server without DPoP issued it).
    fn headers(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        mut headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(Option<String>, HashMap<HeaderName, HeaderValue>), HttpError> {
        let Some(token) = token.filter(|_| self.key.is_bound()) else {
            return Ok((token.map(str::to_owned), headers));
        };
        let invalid = |reason: String| StreamableHttpError::UnexpectedServerResponse(reason.into());
        let proof = self.key.proof(method, uri, Some(token)).map_err(invalid)?;
        let mut authorization = HeaderValue::from_str(&format!("DPoP {token}"))
            .map_err(|_| invalid("the access token is not a valid header value".to_owned()))?;
        authorization.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, authorization);
        headers.insert(
            // `DPoP`, lower-cased as HTTP/1 header names are compared without case.
            HeaderName::from_static("dpop"),
            HeaderValue::from_str(&proof).map_err(|err| invalid(err.to_string()))?,
        );
        Ok((None, headers))
    }

    /// Sends with `send`; when the server asks for a nonce, learns it and sends once more.
    async fn with_nonce<T, F, Fut>(
        &self,
        method: &str,
        uri: &str,
        token: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        send: F,
    ) -> Result<T, HttpError>
    where
        F: Fn(Option<String>, HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let (bearer, with_proof) = self.headers(method, uri, token.as_deref(), headers.clone())?;
        let result = send(bearer, with_proof).await;
        let Err(StreamableHttpError::AuthRequired(required)) = &result else {
            return result;
        };
        let Some(token) = token.filter(|_| self.key.is_bound()) else {
            return result;
        };
        if !asks_for_nonce(&required.www_authenticate_header)
            || !self.learn_nonce(uri, &token, &headers).await
        {
            return result;
        }
        let (bearer, with_proof) = self.headers(method, uri, Some(&token), headers)?;
        send(bearer, with_proof).await
    }

    /// Fetches the nonce the server at `uri` demands: an empty POST with a proof, whose answer
    /// carries it. Whether a new one was found.
    async fn learn_nonce(
        &self,
        uri: &str,
        token: &str,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) -> bool {
        let Ok((_, with_proof)) = self.headers("POST", uri, Some(token), headers.clone()) else {
            return false;
        };
        let mut probe = self.http.post(uri);
        for (name, value) in with_proof {
            probe = probe.header(name, value);
        }
        let Ok(answer) = probe.send().await else {
            return false;
        };
        let nonce = answer
            .headers()
            .get(DPOP_NONCE_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        nonce.is_some_and(|nonce| self.key.remember_nonce(uri, &nonce))
    }
}

impl StreamableHttpClient for DpopHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let target = uri.to_string();
        self.with_nonce(
            "POST",
            &target,
            auth_header,
            custom_headers,
            |bearer, headers| {
                self.http.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    bearer,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let target = uri.to_string();
        self.with_nonce(
            "POST",
            &target,
            auth_header,
            custom_headers,
            |bearer, headers| {
                self.http.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    bearer,
                    headers,
                    limits,
                )
            },
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let (bearer, headers) =
            self.headers("DELETE", &uri, auth_header.as_deref(), custom_headers)?;
        self.http
            .delete_session(uri, session_id, bearer, headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let target = uri.to_string();
        self.with_nonce(
            "GET",
            &target,
            auth_header,
            custom_headers,
            |bearer, headers| {
                self.http.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    bearer,
                    headers,
                )
            },
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let target = uri.to_string();
        self.with_nonce(
            "GET",
            &target,
            auth_header,
            custom_headers,
            |bearer, headers| {
                self.http.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    bearer,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse as _;

    use super::*;

    /// What an MCP endpoint on 127.0.0.1 got: the `Authorization` header and the proof's
    /// claims of each request, probes included.
    type Seen = Arc<Mutex<Vec<(String, serde_json::Value)>>>;

    /// An MCP endpoint that answers every request 401 `use_dpop_nonce` with the nonce `n-1`,
    /// or, with `accept_nonce`, 202 to a proof that carries it.
    async fn nonce_demanding_server(accept_nonce: bool) -> (String, Seen) {
        let seen: Seen = Arc::default();
        let record = Arc::clone(&seen);
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap| {
                let record = Arc::clone(&record);
                async move {
                    use base64::Engine as _;
                    let authorization = headers["authorization"].to_str().unwrap().to_owned();
                    let proof = headers["dpop"].to_str().unwrap();
                    let claims: serde_json::Value = serde_json::from_slice(
                        &base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .decode(proof.split('.').nth(1).unwrap())
                            .unwrap(),
                    )
                    .unwrap();
                    let has_nonce = claims["nonce"] == "n-1";
                    record.lock().unwrap().push((authorization, claims));
                    if accept_nonce && has_nonce {
                        StatusCode::ACCEPTED.into_response()
                    } else {
                        (
                            StatusCode::UNAUTHORIZED,
                            [
                                ("WWW-Authenticate", "DPoP error=\"use_dpop_nonce\""),
                                ("DPoP-Nonce", "n-1"),
                            ],
                        )
                            .into_response()
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, seen)
    }

    fn client() -> DpopHttp {
        let key = Arc::new(DpopKey::generate().unwrap());
        key.set_bound(true);
        DpopHttp {
            http: reqwest::Client::new(),
            key,
        }
    }

    async fn notify(client: &DpopHttp, url: &str) -> Result<StreamableHttpPostResponse, HttpError> {
        let message: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/initialized"
        }))
        .unwrap();
        client
            .post_message(
                url.into(),
                message,
                None,
                Some("the-token".to_owned()),
                HashMap::new(),
            )
            .await
    }

    #[tokio::test]
    async fn the_servers_nonce_is_learned_and_the_request_sent_again_with_it() {
        let (url, seen) = nonce_demanding_server(true).await;
        let client = client();
        let answer = notify(&client, &url).await.unwrap();
        assert!(matches!(answer, StreamableHttpPostResponse::Accepted));
        let requests = seen.lock().unwrap().clone();
        // The request, the probe for the nonce (refused as it has none), the request again.
        assert_eq!(requests.len(), 3, "{requests:?}");
        for (authorization, claims) in &requests {
            assert_eq!(authorization, "DPoP the-token");
            assert_eq!(claims["htm"], "POST");
            assert_eq!(claims["htu"], url.as_str());
            assert!(claims["ath"].is_string(), "{claims}");
        }
        assert!(requests[0].1.get("nonce").is_none());
        assert_eq!(requests[2].1["nonce"], "n-1");
        // The next request carries the nonce at once: no refusal, no probe.
        notify(&client, &url).await.unwrap();
        let requests = seen.lock().unwrap().clone();
        assert_eq!(requests.len(), 4, "{requests:?}");
        assert_eq!(requests[3].1["nonce"], "n-1");
    }

    #[tokio::test]
    async fn a_nonce_the_server_refuses_again_is_not_tried_twice() {
        let (url, seen) = nonce_demanding_server(false).await;
        let client = client();
        let refused = notify(&client, &url).await.unwrap_err();
        assert!(
            matches!(refused, StreamableHttpError::AuthRequired(_)),
            "{refused}"
        );
        assert_eq!(seen.lock().unwrap().len(), 3, "request, probe, one retry");
        // The server still refuses the nonce it gave: no probe is worth it, no loop.
        let refused = notify(&client, &url).await.unwrap_err();
        assert!(
            matches!(refused, StreamableHttpError::AuthRequired(_)),
            "{refused}"
        );
        assert_eq!(seen.lock().unwrap().len(), 5, "request and probe only");
    }

    #[tokio::test]
    async fn an_unbound_token_goes_as_a_bearer_token_without_a_proof() {
        let client = client();
        client.key.set_bound(false);
        let (bearer, headers) = client
            .headers("POST", "http://127.0.0.1:1/mcp", Some("t"), HashMap::new())
            .unwrap();
        assert_eq!(bearer.as_deref(), Some("t"));
        assert!(headers.is_empty());
    }
}
