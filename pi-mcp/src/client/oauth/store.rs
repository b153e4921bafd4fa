//! Where signed-in servers' tokens are kept between connections: a store the application
//! chooses, in memory by default, a file (mode 0600) for the `pi` command.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use pi_tool::BoxFuture;
use rmcp::transport::auth::{AuthError, StoredCredentials};
use serde::{Deserialize, Serialize};

/// What signing in to one server left: the client id it was registered with, the tokens (access
/// and refresh), the scopes granted and the authorization server (issuer) that issued them.
///
/// Opaque on purpose: stores keep it as JSON (`serde`). Its `Debug` shows no token.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OAuthCredentials(StoredCredentials);

impl OAuthCredentials {
    /// The authorization server that issued the tokens (its `issuer`), when it named one. Tokens
    /// are never sent to a server whose metadata names another: the client signs in again.
    pub fn issuer(&self) -> Option<&str> {
        self.0.issuer.as_deref()
    }

    /// The client id the tokens belong to.
    pub fn client_id(&self) -> &str {
        &self.0.client_id
    }

    /// The scopes granted.
    pub fn scopes(&self) -> &[String] {
        &self.0.granted_scopes
    }

    /// Whether a refresh token is kept (so an expired access token is renewed without the user).
    pub fn can_refresh(&self) -> bool {
        use oauth2::TokenResponse as _;
        self.0
            .token_response
            .as_ref()
            .is_some_and(|tokens| tokens.refresh_token().is_some())
    }
}

impl std::fmt::Debug for OAuthCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthCredentials")
            .field("issuer", &self.issuer())
            .field("client_id", &self.client_id())
            .field("scopes", &self.scopes())
            .field("can_refresh", &self.can_refresh())
            .finish_non_exhaustive()
    }
}

/// A credential store could not read or write.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CredentialStoreError {
    message: String,
}

impl CredentialStoreError {
    /// An error with this message (say what failed, e.g. the file and the system's reason).
    pub fn new(message: impl Into<String>) -> Self {
        CredentialStoreError {
            message: message.into(),
        }
    }
}

/// Keeps [`OAuthCredentials`] per server (the key is the server's MCP URL).
///
/// Each entry is bound to the issuer that minted it: when the server's metadata names another
/// authorization server, the entry is discarded and the client registers and signs in anew.
pub trait CredentialStore: Send + Sync + 'static {
    /// The server's credentials, if any.
    fn load<'a>(
        &'a self,
        server: &'a str,
    ) -> BoxFuture<'a, Result<Option<OAuthCredentials>, CredentialStoreError>>;

    /// Keeps `credentials` for the server, replacing what was there.
    fn save<'a>(
        &'a self,
        server: &'a str,
        credentials: OAuthCredentials,
    ) -> BoxFuture<'a, Result<(), CredentialStoreError>>;

    /// Forgets the server's credentials.
    fn clear<'a>(&'a self, server: &'a str) -> BoxFuture<'a, Result<(), CredentialStoreError>>;
}

/// Credentials in memory, for the life of the process (the default). Clones share the store.
#[derive(Clone, Debug, Default)]
pub struct InMemoryCredentialStore {
    entries: Arc<Mutex<HashMap<String, OAuthCredentials>>>,
}

impl InMemoryCredentialStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, OAuthCredentials>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CredentialStore for InMemoryCredentialStore {
    fn load<'a>(
        &'a self,
        server: &'a str,
    ) -> BoxFuture<'a, Result<Option<OAuthCredentials>, CredentialStoreError>> {
        let found = self.entries().get(server).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save<'a>(
        &'a self,
        server: &'a str,
        credentials: OAuthCredentials,
    ) -> BoxFuture<'a, Result<(), CredentialStoreError>> {
        self.entries().insert(server.to_owned(), credentials);
        Box::pin(std::future::ready(Ok(())))
    }

    fn clear<'a>(&'a self, server: &'a str) -> BoxFuture<'a, Result<(), CredentialStoreError>> {
        self.entries().remove(server);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Credentials in one JSON file that only its owner can read (mode 0600; its directory is made
/// with mode 0700 when missing). Written whole to a temporary file beside it, then renamed into
/// place, so a crash never leaves half a file.
#[derive(Debug)]
pub struct FileCredentialStore {
    path: PathBuf,
    /// One read-modify-write at a time within this process.
    writing: Mutex<()>,
}

/// The file's layout: `{"servers": {"<url>": <credentials>}}`.
#[derive(Default, Serialize, Deserialize)]
struct CredentialFile {
    #[serde(default)]
    servers: BTreeMap<String, OAuthCredentials>,
}

impl FileCredentialStore {
    /// A store in `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileCredentialStore {
            path: path.into(),
            writing: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<CredentialFile, CredentialStoreError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(CredentialFile::default());
            }
            Err(err) => {
                return Err(CredentialStoreError::new(format!(
                    "cannot read {}: {err}",
                    self.path.display()
                )));
            }
        };
        serde_json::from_str(&text).map_err(|err| {
            CredentialStoreError::new(format!(
                "{} is not a credential file pi-mcp wrote: {err}",
                self.path.display()
            ))
        })
    }

    fn write(&self, file: &CredentialFile) -> Result<(), CredentialStoreError> {
        let failed = |what: &str, err: std::io::Error| {
            CredentialStoreError::new(format!("cannot {what} {}: {err}", self.path.display()))
        };
        let dir = self
            .path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|err| failed("create the directory of", err))?;
        let text = serde_json::to_vec_pretty(file).map_err(|err| {
            CredentialStoreError::new(format!("cannot encode credentials: {err}"))
        })?;
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(format!(".{}.tmp", std::process::id()));
        let temporary = PathBuf::from(temporary);
        let written = open_private(&temporary)
            .and_then(|mut out| out.write_all(&text).and_then(|()| out.sync_all()));
        if let Err(err) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(failed("write", err));
        }
        std::fs::rename(&temporary, &self.path).map_err(|err| {
            let _ = std::fs::remove_file(&temporary);
            failed("replace", err)
        })
    }

    fn update(&self, change: impl FnOnce(&mut CredentialFile)) -> Result<(), CredentialStoreError> {
        let _one_at_a_time = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut file = self.read()?;
        change(&mut file);
        self.write(&file)
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// A new file only the owner may read and write.
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

impl CredentialStore for FileCredentialStore {
    fn load<'a>(
        &'a self,
        server: &'a str,
    ) -> BoxFuture<'a, Result<Option<OAuthCredentials>, CredentialStoreError>> {
        let found = self.read().map(|mut file| file.servers.remove(server));
        Box::pin(std::future::ready(found))
    }

    fn save<'a>(
        &'a self,
        server: &'a str,
        credentials: OAuthCredentials,
    ) -> BoxFuture<'a, Result<(), CredentialStoreError>> {
        let saved = self.update(|file| {
            file.servers.insert(server.to_owned(), credentials);
        });
        Box::pin(std::future::ready(saved))
    }

    fn clear<'a>(&'a self, server: &'a str) -> BoxFuture<'a, Result<(), CredentialStoreError>> {
        let cleared = self.update(|file| {
            file.servers.remove(server);
        });
        Box::pin(std::future::ready(cleared))
    }
}

/// One server's slot of a [`CredentialStore`], as rmcp's authorization manager uses it.
pub(crate) struct ServerSlot {
    pub(crate) store: Arc<dyn CredentialStore>,
    pub(crate) server: String,
}

fn store_error(err: CredentialStoreError) -> AuthError {
    AuthError::CredentialStoreError(err.to_string())
}

#[async_trait::async_trait]
impl rmcp::transport::auth::CredentialStore for ServerSlot {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .store
            .load(&self.server)
            .await
            .map_err(store_error)?
            .map(|credentials| credentials.0))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store
            .save(&self.server, OAuthCredentials(credentials))
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.clear(&self.server).await.map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(issuer: &str) -> OAuthCredentials {
        let tokens = serde_json::from_value(serde_json::json!({
            "access_token": "at-secret",
            "refresh_token": "rt-secret",
            "token_type": "Bearer",
            "expires_in": 3600
        }))
        .unwrap();
        OAuthCredentials(
            StoredCredentials::new("client-1".into(), Some(tokens), vec!["mcp".into()], Some(1))
                .with_issuer(Some(issuer.into())),
        )
    }

    #[tokio::test]
    async fn the_file_store_keeps_each_server_apart_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent/mcp-oauth.json");
        let store = FileCredentialStore::new(&path);
        assert!(store.load("http://a/mcp").await.unwrap().is_none());
        store
            .save("http://a/mcp", credentials("http://as-a"))
            .await
            .unwrap();
        store
            .save("http://b/mcp", credentials("http://as-b"))
            .await
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let dir_mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(dir_mode, 0o700);
        }
        // A second store on the same file (the next run) reads what the first wrote.
        let again = FileCredentialStore::new(&path);
        let a = again.load("http://a/mcp").await.unwrap().unwrap();
        assert_eq!(a.issuer(), Some("http://as-a"));
        assert_eq!(a.client_id(), "client-1");
        assert!(a.can_refresh());
        again.clear("http://a/mcp").await.unwrap();
        assert!(store.load("http://a/mcp").await.unwrap().is_none());
        assert!(store.load("http://b/mcp").await.unwrap().is_some());
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["mcp-oauth.json"]);
    }

    #[tokio::test]
    async fn a_broken_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("creds.json");
        std::fs::write(&path, "not json").unwrap();
        let err = FileCredentialStore::new(&path)
            .load("http://a/mcp")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("creds.json is not a credential file"), "{err}");
    }

    #[test]
    fn debug_output_shows_no_token() {
        let shown = format!("{:?}", credentials("http://as"));
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("client-1"), "{shown}");
    }
}
