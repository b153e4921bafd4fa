//! Enterprise-managed authorization (the MCP extension of SEP-990): the user's ID token from the
//! company's identity provider becomes an ID-JAG there (RFC 8693 token exchange), and the ID-JAG
//! an access token at the MCP server's authorization server (RFC 7523 JWT bearer grant). Both
//! exchanges, and the checks of the ID-JAG's bindings, are rmcp's `enterprise` module.

use std::sync::Arc;

use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthHttpClient, OAuthTokenResponse};

use super::AssertionSource;
use super::jwt_bearer::{check_not_expired, now_secs};

/// The company's identity provider, for [`OAuthConfig::enterprise`](crate::OAuthConfig::enterprise):
/// its issuer and token endpoint (from its approved metadata), this client's registration
/// there, and where the user's ID token comes from (the application's own sign-in with the
/// identity provider, renewed as it sees fit).
#[derive(Clone)]
pub struct IdentityProvider {
    pub(crate) issuer: String,
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    client_secret: Option<String>,
    pub(crate) id_token: Arc<dyn AssertionSource>,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

impl IdentityProvider {
    /// The identity provider `issuer` with its `token_endpoint`, where this client is
    /// `client_id` (a public client unless [`client_secret`](Self::client_secret) is set);
    /// `id_token` gives the user's current ID token, issued to `client_id`.
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        id_token: impl AssertionSource,
    ) -> Self {
        IdentityProvider {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            id_token: Arc::new(id_token),
        }
    }

    /// This client's secret at the identity provider (sent with HTTP Basic).
    #[must_use]
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

/// This client at the MCP server's authorization server.
pub(crate) struct ResourceClient<'a> {
    pub(crate) client_id: &'a str,
    pub(crate) client_secret: Option<&'a str>,
}

/// Both exchanges: the ID token for an ID-JAG, the ID-JAG for the MCP server's access token.
pub(crate) async fn exchange(
    idp: &IdentityProvider,
    http: &dyn OAuthHttpClient,
    metadata: &AuthorizationMetadata,
    client: ResourceClient<'_>,
    resource: &str,
    scopes: &[String],
) -> Result<OAuthTokenResponse, String> {
    let issuer = metadata.issuer.as_deref().ok_or(
        "the MCP server's authorization server names no issuer in its metadata, which the ID-JAG must name as its audience",
    )?;
    let id_token = idp
        .id_token
        .assertion()
        .await
        .map_err(|err| format!("no ID token from the identity provider's source: {err}"))?;
    check_not_expired(&id_token, now_secs())?;
    let idp_server = EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
        .with_client_authentication(match &idp.client_secret {
            Some(secret) => EmaClientAuthentication::ClientSecretBasic(oauth2::ClientSecret::new(
                secret.clone(),
            )),
            None => EmaClientAuthentication::None,
        });
    let resource_server =
        EmaAuthorizationServer::new(issuer, &metadata.token_endpoint, client.client_id)
            .with_client_authentication(resource_authentication(metadata, client.client_secret));
    let token =
        EmaExchangeRequest::new_with_id_token(idp_server, resource_server, resource, &id_token)
            .with_scopes(scopes.iter().cloned())
            .exchange(http, http)
            .await
            .map_err(|err| format!("the enterprise-managed sign-in failed: {err}"))?;
    let mut scopes: Vec<&str> = token.scopes.iter().map(String::as_str).collect();
    scopes.sort_unstable();
    let mut response = serde_json::json!({
        "access_token": token.access_token.secret(),
        "token_type": "Bearer",
    });
    if let Some(expires_in) = token.expires_in {
        response["expires_in"] = expires_in.as_secs().into();
    }
    if !scopes.is_empty() {
        response["scope"] = scopes.join(" ").into();
    }
    serde_json::from_value(response).map_err(|err| format!("the access token is not usable: {err}"))
}

/// HTTP Basic with a secret unless the server lists only `client_secret_post`; a public client
/// without one.
fn resource_authentication(
    metadata: &AuthorizationMetadata,
    secret: Option<&str>,
) -> EmaClientAuthentication {
    let Some(secret) = secret else {
        return EmaClientAuthentication::None;
    };
    let secret = oauth2::ClientSecret::new(secret.to_owned());
    let methods = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|methods| methods.as_array());
    let lists = |name: &str| methods.is_some_and(|methods| methods.iter().any(|m| m == name));
    if lists("client_secret_post") && !lists("client_secret_basic") {
        EmaClientAuthentication::ClientSecretPost(secret)
    } else {
        EmaClientAuthentication::ClientSecretBasic(secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_providers_secret_is_not_in_its_debug() {
        let idp = IdentityProvider::new(
            "https://idp.example",
            "https://idp.example/token",
            "app",
            || async { Ok::<_, crate::AuthorizeError>("id.token.here".to_owned()) },
        )
        .client_secret("idp-secret-value");
        let shown = format!("{idp:?}");
        assert!(!shown.contains("idp-secret-value"), "{shown}");
        assert!(
            shown.contains("<redacted>") && shown.contains("https://idp.example"),
            "{shown}"
        );
    }
}
