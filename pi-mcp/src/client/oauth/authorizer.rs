//! The step of signing in that belongs to the application: showing the user the authorization
//! server's page and bringing back where it redirected the browser.

use pi_tool::BoxFuture;

/// Why a sign-in did not complete, in the application's words (the user closed the page, the
/// browser could not be opened, no answer in time ...).
pub type AuthorizeError = Box<dyn std::error::Error + Send + Sync>;

/// Why the user is asked to sign in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizationReason {
    /// The server wants a token and there is none (or it can no longer be renewed).
    SignIn,
    /// The token lacks a scope this request needs (HTTP 403 `insufficient_scope`): the user is
    /// asked to grant more.
    MoreScopes,
}

/// A sign-in for the user to complete, given to [`Authorizer::authorize`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AuthorizationPrompt {
    /// The MCP server being signed in to (its URL).
    pub server: String,
    /// The authorization server's page to open in a browser.
    pub url: String,
    /// The authorization server (its issuer), when its metadata names it.
    pub issuer: Option<String>,
    /// The scopes requested.
    pub scopes: Vec<String>,
    /// Why.
    pub reason: AuthorizationReason,
}

/// Shows the user the authorization page and returns where the authorization server redirected
/// the browser (the redirect URI with `code`, `state` and perhaps `iss` in its query).
///
/// [`LoopbackAuthorizer`](crate::LoopbackAuthorizer) does this with a listener on 127.0.0.1; the
/// `pi` command prints the URL (and opens it) with one. A library may open a web view, or, as
/// the tests do, drive the page itself.
pub trait Authorizer: Send + Sync + 'static {
    /// The redirect URI registered with authorization servers and sent with each authorization
    /// request.
    fn redirect_uri(&self) -> String;

    /// Has the user sign in at `prompt.url`; resolves to the URL the browser was redirected to.
    /// The client checks it (the `state` it sent, the issuer, an `error` the server reported), so
    /// an authorizer may return whatever reached its redirect URI.
    fn authorize(
        &self,
        prompt: AuthorizationPrompt,
    ) -> BoxFuture<'_, Result<String, AuthorizeError>>;
}

/// One authorizer shared by several clients (the `pi` command's loopback listener serves every
/// server it signs in to).
impl<A: Authorizer + ?Sized> Authorizer for std::sync::Arc<A> {
    fn redirect_uri(&self) -> String {
        (**self).redirect_uri()
    }

    fn authorize(
        &self,
        prompt: AuthorizationPrompt,
    ) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        (**self).authorize(prompt)
    }
}
