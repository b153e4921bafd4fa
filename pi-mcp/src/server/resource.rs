//! This server as an OAuth 2.1 protected resource: its RFC 9728 metadata document (which
//! authorization servers issue its tokens, which scopes it knows), served at
//! `/.well-known/oauth-protected-resource[/path]` and named in every 401 challenge.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};
use reqwest::Url;
use serde_json::{Value, json};

/// A configuration mistake: a URL that is not one, or not HTTPS.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthConfigError(String);

impl AuthConfigError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        AuthConfigError(message.into())
    }
}

/// Parses `url` as what `what` names: absolute, `https` (or `http` on a loopback host, for
/// development), no fragment.
pub(crate) fn secure_url(what: &str, url: &str) -> Result<Url, AuthConfigError> {
    let parsed =
        Url::parse(url).map_err(|err| AuthConfigError::new(format!("{what} {url:?}: {err}")))?;
    let loopback = match parsed.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(AuthConfigError::new(format!(
                "{what} {url:?} must be an https URL (http only on a loopback host)"
            )));
        }
    }
    if parsed.fragment().is_some() {
        return Err(AuthConfigError::new(format!(
            "{what} {url:?} must not have a fragment"
        )));
    }
    Ok(parsed)
}

/// This MCP server as an OAuth 2.1 protected resource (RFC 9728), for
/// [`McpServer::with_oauth`](crate::McpServer::with_oauth).
///
/// `resource` is the server's public URL (`https://mcp.example.com/mcp`): what clients connect
/// to, and the audience their tokens must be issued for (RFC 8707). The metadata document is
/// served at `/.well-known/oauth-protected-resource` followed by that URL's path (and at
/// `/.well-known/oauth-protected-resource` itself), and every 401 names it in
/// `WWW-Authenticate: Bearer resource_metadata="..."`, which is how MCP clients find the
/// authorization server to sign in with.
#[derive(Clone, Debug)]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    metadata_path: String,
    metadata_url: String,
}

impl ProtectedResource {
    /// The resource at `resource`, whose tokens `authorization_servers` issue (their issuer
    /// URLs). Each must be an `https` URL (`http` only on a loopback host).
    pub fn new<I, S>(resource: &str, authorization_servers: I) -> Result<Self, AuthConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let url = secure_url("the resource URL", resource)?;
        let authorization_servers = authorization_servers
            .into_iter()
            .map(|issuer| {
                secure_url("the authorization server", issuer.as_ref())
                    .map(|_| issuer.as_ref().to_owned())
            })
            .collect::<Result<Vec<_>, _>>()?;
        if authorization_servers.is_empty() {
            return Err(AuthConfigError::new(
                "a protected resource needs at least one authorization server",
            ));
        }
        // RFC 9728 §3.1: the well-known segment goes between the host and the path.
        let metadata_path = match url.path().trim_end_matches('/') {
            "" => WELL_KNOWN.to_owned(),
            path => format!("{WELL_KNOWN}{path}"),
        };
        let origin = url.origin().ascii_serialization();
        Ok(ProtectedResource {
            resource: resource.to_owned(),
            authorization_servers,
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            metadata_url: format!("{origin}{metadata_path}"),
            metadata_path,
        })
    }

    /// Scopes clients may ask for (`scopes_supported`; the required ones are always included).
    #[must_use]
    pub fn with_scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes every request's token must grant; a token without one gets 403
    /// `insufficient_scope` naming them, and a 401 challenge names them too, so clients ask
    /// for them when they sign in.
    #[must_use]
    pub fn require_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A name for people (`resource_name`), shown by clients when they ask the user to sign in.
    #[must_use]
    pub fn with_resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Where people can read about this server (`resource_documentation`).
    #[must_use]
    pub fn with_resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// The resource URL (the tokens' audience).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The scopes every request needs.
    pub fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// Where the metadata document is served, as clients fetch it
    /// (`https://mcp.example.com/.well-known/oauth-protected-resource/mcp`).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The RFC 9728 metadata document.
    pub fn metadata(&self) -> Value {
        let mut scopes = self.scopes_supported.clone();
        for scope in &self.required_scopes {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        let mut document = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            document["resource_name"] = json!(name);
        }
        if let Some(url) = &self.resource_documentation {
            document["resource_documentation"] = json!(url);
        }
        document
    }

    /// The routes serving the document: the path form, and the bare one clients fall back to.
    pub(crate) fn routes(&self) -> axum::Router {
        let document = Arc::new(self.metadata().to_string());
        let serve = move || {
            let document = document.clone();
            async move { metadata_response(&document) }
        };
        let mut router =
            axum::Router::new().route(&self.metadata_path, axum::routing::get(serve.clone()));
        if self.metadata_path != WELL_KNOWN {
            router = router.route(WELL_KNOWN, axum::routing::get(serve));
        }
        router
    }
}

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document is public: any page may read it (browser-based clients discover with it).
fn metadata_response(document: &str) -> Response {
    let mut response = document.to_owned().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lives_next_to_the_resource_path() {
        let resource = ProtectedResource::new(
            "https://mcp.example.com/tools/mcp",
            ["https://auth.example.com"],
        )
        .unwrap()
        .with_scopes_supported(["files:read"])
        .require_scopes(["mcp:tools"])
        .with_resource_name("pi");
        assert_eq!(
            resource.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/tools/mcp"
        );
        assert_eq!(
            resource.metadata(),
            json!({
                "resource": "https://mcp.example.com/tools/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["files:read", "mcp:tools"],
                "resource_name": "pi",
            })
        );
        let root =
            ProtectedResource::new("https://mcp.example.com:8443/", ["https://a.example"]).unwrap();
        assert_eq!(
            root.metadata_url(),
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn urls_must_be_https_except_on_loopback() {
        assert!(
            ProtectedResource::new("http://127.0.0.1:8080/mcp", ["http://localhost:9000"]).is_ok()
        );
        for (resource, issuer, message) in [
            (
                "http://mcp.example.com/mcp",
                "https://a.example",
                "the resource URL \"http://mcp.example.com/mcp\" must be an https URL (http only on a loopback host)",
            ),
            (
                "https://mcp.example.com/mcp",
                "http://auth.example.com",
                "the authorization server \"http://auth.example.com\" must be an https URL (http only on a loopback host)",
            ),
            (
                "https://mcp.example.com/mcp#x",
                "https://a.example",
                "the resource URL \"https://mcp.example.com/mcp#x\" must not have a fragment",
            ),
            (
                "/mcp",
                "https://a.example",
                "the resource URL \"/mcp\": relative URL without a base",
            ),
        ] {
            assert_eq!(
                ProtectedResource::new(resource, [issuer])
                    .unwrap_err()
                    .to_string(),
                message
            );
        }
        assert_eq!(
            ProtectedResource::new("https://mcp.example.com/mcp", Vec::<String>::new())
                .unwrap_err()
                .to_string(),
            "a protected resource needs at least one authorization server"
        );
    }
}
