//! Workload identity federation: the workload's identity token (a JWT its platform issued)
//! exchanged for an access token with the JWT bearer grant (RFC 7523 section 2.1). The client
//! signs nothing; it checks that the token has not expired before sending it, and reports the
//! authorization server's refusal as it is, without retrying or trying another grant.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::transport::auth::OAuthTokenResponse;

use super::fetch::OAuthFetcher;

/// The grant type of RFC 7523.
pub(crate) const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What one JWT bearer token request sends.
pub(crate) struct JwtBearerRequest<'a> {
    pub(crate) token_endpoint: &'a str,
    pub(crate) assertion: &'a str,
    pub(crate) client_id: Option<&'a str>,
    pub(crate) scopes: &'a [String],
    /// The MCP server (RFC 8707 `resource`).
    pub(crate) resource: &'a str,
}

/// Sends the grant and reads the tokens, or the authorization server's refusal.
pub(crate) async fn exchange(
    http: &OAuthFetcher,
    request: &JwtBearerRequest<'_>,
) -> Result<OAuthTokenResponse, String> {
    check_not_expired(request.assertion, now_secs())?;
    let body = form(request);
    let http_request = http::Request::builder()
        .method("POST")
        .uri(request.token_endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(body.into_bytes())
        .map_err(|err| {
            format!(
                "the token endpoint {} is not usable: {err}",
                request.token_endpoint
            )
        })?;
    let response = http.send(http_request, false).await.map_err(|err| {
        format!(
            "the token request to {} failed: {err}",
            request.token_endpoint
        )
    })?;
    if !response.status().is_success() {
        return Err(format!(
            "the authorization server refused the workload identity token: {}",
            oauth_error(response.status(), response.body())
        ));
    }
    serde_json::from_slice(response.body())
        .map_err(|err| format!("the authorization server's token response is not usable: {err}"))
}

/// The grant's form body.
fn form(request: &JwtBearerRequest<'_>) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", JWT_BEARER_GRANT)
        .append_pair("assertion", request.assertion);
    if !request.scopes.is_empty() {
        form.append_pair("scope", &request.scopes.join(" "));
    }
    form.append_pair("resource", request.resource);
    if let Some(client_id) = request.client_id {
        form.append_pair("client_id", client_id);
    }
    form.finish()
}

/// An OAuth error response (`error`, `error_description`) in words, else the HTTP status.
pub(crate) fn oauth_error(status: http::StatusCode, body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct OAuthError {
        error: String,
        error_description: Option<String>,
    }
    match serde_json::from_slice::<OAuthError>(body) {
        Ok(OAuthError {
            error,
            error_description: Some(description),
        }) => format!("{error} ({description}, HTTP {})", status.as_u16()),
        Ok(OAuthError { error, .. }) => format!("{error} (HTTP {})", status.as_u16()),
        Err(_) => format!("HTTP {}", status.as_u16()),
    }
}

/// Refuses a token that is not a JWT or whose `exp` has passed: the platform failed to renew
/// it, and the authorization server would only say `invalid_grant`.
pub(crate) fn check_not_expired(token: &str, now: u64) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Claims {
        exp: Option<u64>,
    }
    let payload = token
        .split('.')
        .nth(1)
        .filter(|_| token.split('.').count() == 3)
        .ok_or("the identity token is not a JWT (three dot-separated parts)")?;
    let claims: Claims = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes: Vec<u8>| serde_json::from_slice(&bytes).ok())
        .ok_or("the identity token's claims are not readable JSON")?;
    match claims.exp {
        Some(exp) if exp <= now => Err(format!(
            "the identity token expired {} s ago (exp {exp}); its source gave no fresh one",
            now - exp
        )),
        _ => Ok(()),
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        format!(
            "{}.{}.c2lnbmF0dXJl",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256"}"#),
            URL_SAFE_NO_PAD.encode(claims)
        )
    }

    #[test]
    fn an_expired_identity_token_is_refused_before_it_is_sent() {
        let now = 1_800_000_000;
        let expired = check_not_expired(&jwt(r#"{"sub":"w","exp":1799999940}"#), now).unwrap_err();
        assert!(expired.contains("expired 60 s ago"), "{expired}");
        assert!(check_not_expired(&jwt(r#"{"sub":"w","exp":1800000000}"#), now).is_err());
        check_not_expired(&jwt(r#"{"sub":"w","exp":1800000300}"#), now).unwrap();
        // No exp: the authorization server decides.
        check_not_expired(&jwt(r#"{"sub":"w"}"#), now).unwrap();
        let not_jwt = check_not_expired("opaque-token", now).unwrap_err();
        assert!(not_jwt.contains("not a JWT"), "{not_jwt}");
        let garbled = check_not_expired("a.%%%.c", now).unwrap_err();
        assert!(garbled.contains("not readable"), "{garbled}");
    }

    #[test]
    fn the_servers_refusal_is_reported_in_its_words() {
        assert_eq!(
            oauth_error(
                http::StatusCode::BAD_REQUEST,
                br#"{"error":"invalid_grant","error_description":"JWT assertion is expired"}"#
            ),
            "invalid_grant (JWT assertion is expired, HTTP 400)"
        );
        assert_eq!(
            oauth_error(
                http::StatusCode::UNAUTHORIZED,
                br#"{"error":"unauthorized_client"}"#
            ),
            "unauthorized_client (HTTP 401)"
        );
        assert_eq!(
            oauth_error(http::StatusCode::BAD_GATEWAY, b"<html>"),
            "HTTP 502"
        );
    }
}
