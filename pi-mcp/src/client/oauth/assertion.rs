//! Where the JWTs that some grants exchange come from: a workload's identity token, a user's ID
//! token from the company's identity provider. Asked for at each sign-in, as such tokens are
//! short-lived and their platform renews them.

use std::future::Future;
use std::path::PathBuf;

use pi_tool::BoxFuture;

use super::AuthorizeError;

/// Gives a fresh JWT each time the client signs in: for
/// [`OAuthConfig::workload_identity`](crate::OAuthConfig::workload_identity) the workload's
/// identity token, for [`IdentityProvider`](crate::IdentityProvider) the user's ID token.
///
/// A closure returning a future is one; [`TokenFile`] reads the token from a file the platform
/// keeps current (a Kubernetes projected service account token, for instance).
pub trait AssertionSource: Send + Sync + 'static {
    /// The token (a compact JWT), or why there is none.
    fn assertion(&self) -> BoxFuture<'_, Result<String, AuthorizeError>>;
}

impl<F, Fut> AssertionSource for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, AuthorizeError>> + Send + 'static,
{
    fn assertion(&self) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        Box::pin(self())
    }
}

/// A token read from a file at each sign-in (surrounding white space removed), such as
/// `/var/run/secrets/tokens/mcp-token` of a Kubernetes projected service account token.
#[derive(Clone, Debug)]
pub struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// The token in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TokenFile { path: path.into() }
    }
}

impl AssertionSource for TokenFile {
    fn assertion(&self) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        Box::pin(async move {
            let text = tokio::fs::read_to_string(&self.path).await.map_err(|err| {
                format!("cannot read the token file {}: {err}", self.path.display())
            })?;
            let token = text.trim();
            if token.is_empty() {
                return Err(format!("the token file {} is empty", self.path.display()).into());
            }
            Ok(token.to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_file_is_read_at_each_call_and_an_empty_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first.jwt.token\n").unwrap();
        let file = TokenFile::new(&path);
        assert_eq!(file.assertion().await.unwrap(), "first.jwt.token");
        std::fs::write(&path, "second.jwt.token").unwrap();
        assert_eq!(file.assertion().await.unwrap(), "second.jwt.token");
        std::fs::write(&path, "  \n").unwrap();
        let empty = file.assertion().await.unwrap_err().to_string();
        assert!(empty.contains("is empty"), "{empty}");
        let missing = TokenFile::new(dir.path().join("none"))
            .assertion()
            .await
            .unwrap_err()
            .to_string();
        assert!(missing.contains("cannot read the token file"), "{missing}");
    }

    #[tokio::test]
    async fn a_closure_is_a_source() {
        let source = || async { Ok::<_, AuthorizeError>("a.b.c".to_owned()) };
        assert_eq!(AssertionSource::assertion(&source).await.unwrap(), "a.b.c");
    }
}
