//! Signing in to Azure OpenAI with Microsoft Entra ID: a bearer token from a provider the
//! application supplies (kept apart from the wire formats, as every credential is).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// What a token provider returns: the token, or why there is none (said to the user as it is).
pub type TokenResult = Result<String, String>;

/// The future of one token request.
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = TokenResult> + Send + 'a>>;

/// Supplies Microsoft Entra ID access tokens for Azure OpenAI (scope
/// `https://cognitiveservices.azure.com/.default`), asked once per request: a provider that
/// caches its token and refreshes it before it expires keeps requests fast.
///
/// Implement it over the `azure_identity` crate's credentials (`DefaultAzureCredential`,
/// a managed identity, the Azure CLI's sign-in), or use [`StaticToken`] for a token you already
/// have.
///
/// ```
/// use pi_runtime::providers::{EntraTokenProvider, TokenFuture};
///
/// /// A token read from a file a sidecar keeps fresh.
/// struct TokenFile(std::path::PathBuf);
///
/// impl EntraTokenProvider for TokenFile {
///     fn token(&self) -> TokenFuture<'_> {
///         Box::pin(async move {
///             std::fs::read_to_string(&self.0)
///                 .map(|token| token.trim().to_owned())
///                 .map_err(|err| format!("cannot read the Entra ID token from {}: {err}", self.0.display()))
///         })
///     }
/// }
/// ```
pub trait EntraTokenProvider: Send + Sync {
    /// A current access token.
    fn token(&self) -> TokenFuture<'_>;
}

/// A fixed Entra ID access token (it is not refreshed: it fails once it expires, about an
/// hour after it was issued).
#[derive(Clone)]
pub struct StaticToken(String);

impl StaticToken {
    /// The token, as `az account get-access-token --resource https://cognitiveservices.azure.com`
    /// prints it.
    pub fn new(token: impl Into<String>) -> Self {
        StaticToken(token.into())
    }
}

/// The token itself is never shown.
impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticToken(<hidden>)")
    }
}

impl EntraTokenProvider for StaticToken {
    fn token(&self) -> TokenFuture<'_> {
        let token = self.0.clone();
        Box::pin(async move { Ok(token) })
    }
}
