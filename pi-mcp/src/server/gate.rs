//! The gate in front of the streamable HTTP transport: every request shows a token the
//! verifier accepts, with the scopes required, before rmcp (and so any tool) sees it. Refusals
//! are RFC 6750's: 401 with a `WWW-Authenticate: Bearer` challenge (naming the RFC 9728
//! metadata when an authorization server is configured), 403 for missing scopes.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

use super::auth::{TokenError, TokenVerifier, VerifiedToken};

/// How requests are let in, fixed when the router is built.
pub(crate) enum Gate {
    /// No choice was made: every request is refused, so nothing runs by accident.
    Unchosen,
    /// `without_auth()`: every request passes.
    Open,
    /// Every request needs a token `verifier` accepts, with `required_scopes`.
    Verified {
        verifier: Arc<dyn TokenVerifier>,
        /// The RFC 9728 metadata URL named in challenges, when OAuth is configured.
        resource_metadata: Option<String>,
        required_scopes: Vec<String>,
    },
}

/// The axum middleware: lets a request through to `next` or answers it.
pub(crate) async fn guard(
    State(gate): State<Arc<Gate>>,
    mut request: Request,
    next: Next,
) -> Response {
    let (verifier, resource_metadata, required_scopes) = match gate.as_ref() {
        Gate::Unchosen => return unchosen(),
        Gate::Open => {
            // A token meant for someone else is not passed on either.
            request.headers_mut().remove(header::AUTHORIZATION);
            return next.run(request).await;
        }
        Gate::Verified {
            verifier,
            resource_metadata,
            required_scopes,
        } => (verifier, resource_metadata.as_deref(), required_scopes),
    };
    let challenge = Challenge {
        resource_metadata,
        required_scopes,
    };
    let verified = match bearer_token(&request) {
        Credential::Missing => return challenge.missing(),
        Credential::Ambiguous => return challenge.ambiguous(),
        Credential::Bearer(token) => verifier.verify(token).await,
    };
    match verified {
        Ok(token) if lacks_a_scope(&token, required_scopes) => {
            challenge.refused(&TokenError::InsufficientScope {
                required: required_scopes.clone(),
            })
        }
        Ok(token) => {
            // The token stops here: neither rmcp, nor a handler, nor a tool sees it.
            request.headers_mut().remove(header::AUTHORIZATION);
            request.extensions_mut().insert(token);
            next.run(request).await
        }
        Err(err) => challenge.refused(&err),
    }
}

/// What the request's `Authorization` header holds.
enum Credential<'a> {
    /// No header, or one of another scheme (`Basic ...`).
    Missing,
    /// More than one `Authorization` header: which one counts is not ours to guess.
    Ambiguous,
    /// `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1).
    Bearer(&'a str),
}

fn bearer_token(request: &Request) -> Credential<'_> {
    let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Credential::Missing;
    };
    if values.next().is_some() {
        return Credential::Ambiguous;
    }
    let Ok(value) = value.to_str() else {
        return Credential::Missing;
    };
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
            match token.trim_matches(' ') {
                "" => Credential::Missing,
                token => Credential::Bearer(token),
            }
        }
        _ => Credential::Missing,
    }
}

fn lacks_a_scope(token: &VerifiedToken, required: &[String]) -> bool {
    required
        .iter()
        .any(|scope| !token.scopes.iter().any(|granted| granted == scope))
}

/// The `WWW-Authenticate` parameters every refusal carries.
struct Challenge<'a> {
    resource_metadata: Option<&'a str>,
    required_scopes: &'a [String],
}

impl Challenge<'_> {
    /// No token: 401 with a bare challenge (RFC 6750 §3.1: no error code), plus the scopes to
    /// ask for and where the metadata is.
    fn missing(&self) -> Response {
        self.answer(
            StatusCode::UNAUTHORIZED,
            None,
            "Unauthorized: send the header `Authorization: Bearer <token>`",
        )
    }

    fn ambiguous(&self) -> Response {
        self.answer(
            StatusCode::BAD_REQUEST,
            Some(("invalid_request", "more than one Authorization header")),
            "Bad Request: more than one Authorization header",
        )
    }

    fn refused(&self, err: &TokenError) -> Response {
        match err {
            TokenError::Invalid(description) => self.answer(
                StatusCode::UNAUTHORIZED,
                Some(("invalid_token", description)),
                "Unauthorized: invalid token",
            ),
            TokenError::InsufficientScope { required } => Challenge {
                resource_metadata: self.resource_metadata,
                required_scopes: required,
            }
            .answer(
                StatusCode::FORBIDDEN,
                Some(("insufficient_scope", "the token lacks a required scope")),
                "Forbidden: the token lacks a required scope",
            ),
            TokenError::Unavailable(reason) => {
                tracing::warn!(%reason, "an MCP request was refused: its token could not be checked");
                plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: the token could not be checked; try again later",
                )
            }
        }
    }

    fn answer(
        &self,
        status: StatusCode,
        error: Option<(&str, &str)>,
        body: &'static str,
    ) -> Response {
        let mut params = Vec::new();
        if let Some((code, description)) = error {
            params.push(format!("error=\"{code}\""));
            params.push(format!("error_description=\"{}\"", quotable(description)));
        }
        if !self.required_scopes.is_empty() {
            params.push(format!(
                "scope=\"{}\"",
                quotable(&self.required_scopes.join(" "))
            ));
        }
        if let Some(url) = self.resource_metadata {
            params.push(format!("resource_metadata=\"{}\"", quotable(url)));
        }
        let challenge = if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        let mut response = plain(status, body);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// What an `auth-param` quoted string may hold (RFC 6750 §3: printable ASCII without `"` and
/// `\`), at most 200 characters; anything else is dropped.
fn quotable(text: &str) -> String {
    text.chars()
        .filter(|c| matches!(c, ' '..='~') && !matches!(c, '"' | '\\'))
        .take(200)
        .collect()
}

fn unchosen() -> Response {
    tracing::error!(
        "an MCP request was refused: no authentication is configured (McpServer::with_bearer_token, \
         with_token_verifier, with_oauth or without_auth)"
    );
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Internal Server Error: this MCP server has no authentication configured (McpServer::with_bearer_token, \
         with_token_verifier, with_oauth or without_auth), so it serves no one",
    )
}

fn plain(status: StatusCode, body: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
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

    fn request(authorization: &[&str]) -> Request {
        let mut builder = http::Request::builder().uri("/mcp");
        for value in authorization {
            builder = builder.header(header::AUTHORIZATION, *value);
        }
        builder.body(Body::empty()).unwrap()
    }

    #[test]
    fn reads_one_bearer_token_of_any_case() {
        for (headers, expected) in [
            (&[][..], None),
            (&["Bearer abc"][..], Some("abc")),
            (&["bearer  abc "][..], Some("abc")),
            (&["BEARER abc.def-ghi"][..], Some("abc.def-ghi")),
            (&["Bearer "][..], None),
            (&["Bearer"][..], None),
            (&["Basic dXNlcjpwYXNz"][..], None),
            (&["Bearerabc"][..], None),
        ] {
            let request = request(headers);
            let got = match bearer_token(&request) {
                Credential::Bearer(token) => Some(token),
                Credential::Missing => None,
                Credential::Ambiguous => panic!("{headers:?} is one header"),
            };
            assert_eq!(got, expected, "{headers:?}");
        }
        assert!(matches!(
            bearer_token(&request(&["Bearer a", "Bearer b"])),
            Credential::Ambiguous
        ));
    }

    /// The gate in front of a handler that says what reached it.
    fn gated(gate: Gate) -> axum::Router {
        async fn inner(request: Request) -> String {
            let subject = request
                .extensions()
                .get::<VerifiedToken>()
                .and_then(|token| token.subject.clone());
            format!(
                "authorization={:?} subject={subject:?}",
                request.headers().get(header::AUTHORIZATION)
            )
        }
        axum::Router::new()
            .route("/mcp", axum::routing::any(inner))
            .route_layer(axum::middleware::from_fn_with_state(Arc::new(gate), guard))
    }

    async fn answer(router: axum::Router, authorization: &[&str]) -> (StatusCode, String) {
        use tower::ServiceExt;
        let response = router.oneshot(request(authorization)).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    /// Accepts `good`, for subject `alice`, with scope `read`.
    struct Alice;

    impl TokenVerifier for Alice {
        fn verify<'a>(
            &'a self,
            token: &'a str,
        ) -> futures_util::future::BoxFuture<'a, Result<VerifiedToken, TokenError>> {
            Box::pin(async move {
                match token {
                    "good" => Ok(VerifiedToken::new()
                        .with_subject("alice")
                        .with_scopes(["read"])),
                    "down" => Err(TokenError::unavailable("the key set is unreachable")),
                    _ => Err(TokenError::invalid("unknown")),
                }
            })
        }
    }

    #[tokio::test]
    async fn the_token_goes_no_further_than_the_gate() {
        let verified = || Gate::Verified {
            verifier: Arc::new(Alice),
            resource_metadata: None,
            required_scopes: vec!["read".to_owned()],
        };
        assert_eq!(
            answer(gated(verified()), &["Bearer good"]).await,
            (
                StatusCode::OK,
                "authorization=None subject=Some(\"alice\")".to_owned()
            )
        );
        assert_eq!(
            answer(gated(Gate::Open), &["Bearer meant-for-another-server"]).await,
            (StatusCode::OK, "authorization=None subject=None".to_owned())
        );
        assert_eq!(
            answer(gated(verified()), &["Bearer bad"]).await.0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            answer(gated(verified()), &["Bearer down"]).await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            answer(gated(Gate::Unchosen), &["Bearer good"]).await.0,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        let needs_write = Gate::Verified {
            verifier: Arc::new(Alice),
            resource_metadata: None,
            required_scopes: vec!["read".to_owned(), "write".to_owned()],
        };
        let router = gated(needs_write);
        use tower::ServiceExt;
        let response = router.oneshot(request(&["Bearer good"])).await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"insufficient_scope\", error_description=\"the token lacks a required scope\", \
             scope=\"read write\""
        );
    }

    #[test]
    fn challenges_quote_only_what_may_be_quoted() {
        assert_eq!(quotable("bad \"kid\" \\ é\n"), "bad kid  ");
        let challenge = Challenge {
            resource_metadata: Some(
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            ),
            required_scopes: &["mcp:tools".to_owned(), "files:read".to_owned()],
        };
        let response = challenge.refused(&TokenError::invalid("the token has expired"));
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"invalid_token\", error_description=\"the token has expired\", \
             scope=\"mcp:tools files:read\", \
             resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        let bare = Challenge {
            resource_metadata: None,
            required_scopes: &[],
        };
        assert_eq!(bare.missing().headers()[header::WWW_AUTHENTICATE], "Bearer");
    }
}
