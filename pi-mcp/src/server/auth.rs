//! Who may call the HTTP transport: the verifier trait, what a verified token says, why a token
//! is refused, and the static bearer token (compared in constant time).

use std::fmt;
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;

/// Checks the access token of each HTTP request before any tool can run.
///
/// The server calls [`verify`](Self::verify) with the token of the request's
/// `Authorization: Bearer <token>` header (never with anything else, and never for a request
/// without one: that is answered 401 before). [`JwtVerifier`](crate::JwtVerifier) (cargo
/// feature `jwt`) is the built-in one for OAuth 2.1 access tokens; implement this trait to
/// check tokens your own way (an API-key table, token introspection):
///
/// ```
/// use pi_mcp::{TokenError, TokenVerifier, VerifiedToken};
/// use futures_util::future::BoxFuture;
///
/// /// Tokens are API keys from a fixed table.
/// struct ApiKeys(Vec<(String, String)>); // (key, owner)
///
/// impl TokenVerifier for ApiKeys {
///     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
///         Box::pin(async move {
///             // A real table compares in constant time or by hash, as `with_bearer_token` does.
///             self.0
///                 .iter()
///                 .find(|(key, _)| key == token)
///                 .map(|(_, owner)| VerifiedToken::new().with_subject(owner.clone()))
///                 .ok_or_else(|| TokenError::invalid("unknown API key"))
///         })
///     }
/// }
/// ```
pub trait TokenVerifier: Send + Sync + 'static {
    /// Whose `token` is and what it may do, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>>;
}

/// What a [`TokenVerifier`] learned from an accepted token.
///
/// The server checks [`scopes`](Self::scopes) against the scopes a
/// [`ProtectedResource`](crate::ProtectedResource) requires and puts the value in the request's
/// extensions (for an axum layer or rmcp handler of yours). The token itself goes no further:
/// the `Authorization` header is removed before the MCP transport sees the request.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct VerifiedToken {
    /// Who the token was issued to act for (the JWT `sub`).
    pub subject: Option<String>,
    /// The OAuth client it was issued to (`client_id` or `azp`).
    pub client_id: Option<String>,
    /// The scopes it grants.
    pub scopes: Vec<String>,
    /// When it stops being valid (`exp`).
    pub expires_at: Option<SystemTime>,
    /// Every claim of a JWT, for checks of your own; empty for other tokens.
    pub claims: Map<String, Value>,
}

impl VerifiedToken {
    /// A token that says nothing more than that it was accepted.
    pub fn new() -> Self {
        VerifiedToken::default()
    }

    /// With its subject.
    #[must_use]
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// With the client it was issued to.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// With the scopes it grants.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// With its expiry.
    #[must_use]
    pub fn with_expires_at(mut self, expires_at: SystemTime) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// With its claims.
    #[must_use]
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }
}

/// Why a token was refused; each becomes the HTTP answer RFC 6750 gives it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Malformed, expired, not yet valid, for another audience or issuer, badly signed: 401 with
    /// `WWW-Authenticate: Bearer error="invalid_token"`. The text is sent to the client as
    /// `error_description`: say what is wrong with the token, nothing about the server.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// Valid, but without these scopes: 403 with `error="insufficient_scope"` and `scope="..."`,
    /// so the client can ask for them (step-up).
    #[error("the token lacks the scopes {}", required.join(" "))]
    InsufficientScope {
        /// Every scope the request needs (not only the missing ones).
        required: Vec<String>,
    },
    /// The verifier could not decide (its key set could not be fetched): 503, logged; the
    /// client may retry.
    #[error("the token could not be checked: {0}")]
    Unavailable(String),
}

impl TokenError {
    /// [`TokenError::Invalid`] with this description.
    pub fn invalid(description: impl Into<String>) -> Self {
        TokenError::Invalid(description.into())
    }

    /// [`TokenError::Unavailable`] with this reason.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        TokenError::Unavailable(reason.into())
    }
}

/// A fresh bearer token: 32 bytes from the operating system's random source, as 64 hex digits
/// (what `pi mcp serve --http` prints when `PI_MCP_TOKEN` is not set).
///
/// # Panics
///
/// If the operating system has no random source to read (`getrandom` fails), which leaves
/// no secure token to make.
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    let mut token = String::with_capacity(64);
    for byte in bytes {
        token.push(char::from(HEX[usize::from(byte >> 4)]));
        token.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    token
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// One shared secret, as `McpServer::with_bearer_token` sets it. Compared in constant time:
/// how long a wrong guess took says nothing about how much of it was right. (Its length is not
/// secret: a generated token is always 64 characters.)
pub(crate) struct StaticToken(Box<[u8]>);

impl StaticToken {
    pub(crate) fn new(token: String) -> Self {
        if token.is_empty() {
            tracing::warn!(
                "McpServer::with_bearer_token(\"\"): no request can match an empty token"
            );
        }
        StaticToken(token.into_bytes().into_boxed_slice())
    }
}

impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticToken(<redacted>)")
    }
}

impl TokenVerifier for StaticToken {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
        let matches = !self.0.is_empty() && bool::from(self.0.ct_eq(token.as_bytes()));
        Box::pin(std::future::ready(if matches {
            Ok(VerifiedToken::new())
        } else {
            Err(TokenError::invalid("this is not the server's token"))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_64_hex_digits_and_differ() {
        let (a, b) = (generate_token(), generate_token());
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[tokio::test]
    async fn a_static_token_accepts_itself_only() {
        let token = StaticToken::new("s3cret-s3cret-s3cret".to_owned());
        assert!(token.verify("s3cret-s3cret-s3cret").await.is_ok());
        for wrong in [
            "",
            "s3cret",
            "s3cret-s3cret-s3creT",
            "s3cret-s3cret-s3cret!",
        ] {
            assert_eq!(
                token.verify(wrong).await,
                Err(TokenError::invalid("this is not the server's token")),
                "{wrong:?}"
            );
        }
        let empty = StaticToken::new(String::new());
        assert!(empty.verify("").await.is_err());
        assert_eq!(format!("{token:?}"), "StaticToken(<redacted>)");
    }
}
