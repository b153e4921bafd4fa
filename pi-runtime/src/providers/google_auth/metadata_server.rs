//! The metadata server of a Google Cloud machine (GCE, GKE with workload identity, Cloud Run,
//! Cloud Functions), where Application Default Credentials get tokens when no file is found,
//! as google-auth's `compute_engine` does: `GET {root}/instance/service-accounts/default/token
//! ?scopes=…` with `Metadata-Flavor: Google`, answered with `{"access_token", "expires_in",
//! "token_type"}`; the project is `GET {root}/project/project-id`.
//!
//! The root is `http://{GCE_METADATA_HOST}/computeMetadata/v1` (else `GCE_METADATA_ROOT`,
//! else `metadata.google.internal`), then the same at `GCE_METADATA_IP` (else
//! `169.254.169.254`), which google-auth pings. Until one has answered, a request waits at most
//! `GCE_METADATA_TIMEOUT` seconds (3 by default, google-auth's), and an answer without the
//! `Metadata-Flavor: Google` header is not the metadata server's.

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use super::{ADC_ADVICE, CLOUD_PLATFORM_SCOPE, EXCHANGE_TIMEOUT, send, token_of};

/// The host google-auth asks for tokens.
const DEFAULT_HOST: &str = "metadata.google.internal";
/// The address google-auth pings.
const DEFAULT_IP: &str = "169.254.169.254";
/// How long a request waits until the metadata server has answered once (google-auth's).
const DEFAULT_DETECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The header (and value) the metadata server's requests and answers carry.
const FLAVOR: (&str, &str) = ("metadata-flavor", "Google");

/// A metadata server to try, at one or two roots.
pub(super) struct MetadataServer {
    /// `http://{host}/computeMetadata/v1`, in the order they are tried.
    roots: Vec<String>,
    /// The root that answered as the metadata server, once one has.
    answered: OnceLock<usize>,
    /// How long a request waits until then.
    detect_timeout: Duration,
    /// Why no credentials file was used, said when no metadata server answers either.
    not_found: String,
    /// The project it gave, once it answered.
    project: tokio::sync::OnceCell<Option<String>>,
}

impl fmt::Debug for MetadataServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataServer")
            .field("roots", &self.roots)
            .field("detect_timeout", &self.detect_timeout)
            .finish_non_exhaustive()
    }
}

impl MetadataServer {
    /// The server the variables name (read through `var`, which skips blank values);
    /// `not_found` says why no file was used.
    pub(super) fn find(var: &dyn Fn(&str) -> Option<String>, not_found: String) -> Self {
        let host = var("GCE_METADATA_HOST")
            .or_else(|| var("GCE_METADATA_ROOT"))
            .unwrap_or_else(|| DEFAULT_HOST.to_owned());
        let ip = var("GCE_METADATA_IP").unwrap_or_else(|| DEFAULT_IP.to_owned());
        let mut roots = vec![root_of(&host)];
        if root_of(&ip) != roots[0] {
            roots.push(root_of(&ip));
        }
        let detect_timeout = var("GCE_METADATA_TIMEOUT")
            .and_then(|seconds| seconds.trim().parse::<u64>().ok())
            .filter(|&seconds| seconds > 0)
            .map_or(DEFAULT_DETECT_TIMEOUT, Duration::from_secs);
        MetadataServer {
            roots,
            answered: OnceLock::new(),
            detect_timeout,
            not_found,
            project: tokio::sync::OnceCell::new(),
        }
    }

    /// The root in use: the one that answered, else the first to try.
    pub(super) fn root(&self) -> &str {
        &self.roots[self.answered.get().copied().unwrap_or(0)]
    }

    /// A new token and how long it lives.
    pub(super) async fn token(
        &self,
        client: &reqwest::Client,
    ) -> Result<(String, Duration), String> {
        let path = format!(
            "instance/service-accounts/default/token?{}",
            form_urlencoded::Serializer::new(String::new())
                .append_pair("scopes", CLOUD_PLATFORM_SCOPE)
                .finish()
        );
        let (root, text) = self.get(client, &path).await?;
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        token_of(&answer).map_err(|detail| {
            format!(
                "Could not get a Google Cloud access token from the metadata server at {root}: \
                 {detail}"
            )
        })
    }

    /// The project the metadata server gives (`project/project-id`), kept once it has
    /// answered; none when it does not (asked again next time).
    pub(super) async fn project_id(&self, client: &reqwest::Client) -> Option<String> {
        self.project
            .get_or_try_init(|| async {
                let (_, text) = self.get(client, "project/project-id").await?;
                let project = text.trim();
                Ok::<_, String>((!project.is_empty()).then(|| project.to_owned()))
            })
            .await
            .ok()
            .cloned()
            .flatten()
    }

    /// `GET {root}/{path}`: from the root that answered before, else from each in turn until
    /// one answers as the metadata server. Returns the root and the body of a success.
    async fn get(&self, client: &reqwest::Client, path: &str) -> Result<(&str, String), String> {
        if let Some(&index) = self.answered.get() {
            let root = &self.roots[index];
            return match self.ask(client, root, path, EXCHANGE_TIMEOUT).await {
                Ok(Asked::Answer(text)) => Ok((root, text)),
                Ok(Asked::NotTheServer) => Err(format!(
                    "{root} answered without `Metadata-Flavor: Google`: it is not the metadata \
                     server"
                )),
                Err(Failure::NoAnswer(detail) | Failure::Status(detail)) => Err(format!(
                    "The metadata server at {root} did not give /{path}: {detail}"
                )),
            };
        }
        let mut tried = Vec::new();
        for (index, root) in self.roots.iter().enumerate() {
            match self.ask(client, root, path, self.detect_timeout).await {
                Ok(Asked::Answer(text)) => {
                    let _ = self.answered.set(index);
                    return Ok((root, text));
                }
                Ok(Asked::NotTheServer) => tried.push(format!(
                    "{root} answered without `Metadata-Flavor: Google`, so it is not the \
                     metadata server"
                )),
                Err(Failure::Status(detail)) => {
                    // It is the metadata server, and it refused.
                    let _ = self.answered.set(index);
                    return Err(format!(
                        "The metadata server at {root} did not give /{path}: {detail}"
                    ));
                }
                Err(Failure::NoAnswer(detail)) => tried.push(format!("{root}: {detail}")),
            }
        }
        let not_found = if self.not_found.is_empty() {
            String::new()
        } else {
            format!("{}, and ", self.not_found)
        };
        Err(format!(
            "No Google Cloud credentials ({not_found}no metadata server answered: {}): \
             {ADC_ADVICE}, or run on Google Cloud (GCE, GKE, Cloud Run), whose metadata server \
             gives tokens (GCE_METADATA_HOST names another one)",
            tried.join("; ")
        ))
    }

    /// One request to one root: its body when the metadata server answered with success.
    async fn ask(
        &self,
        client: &reqwest::Client,
        root: &str,
        path: &str,
        timeout: Duration,
    ) -> Result<Asked, Failure> {
        let request = client
            .get(format!("{root}/{path}"))
            .header(FLAVOR.0, FLAVOR.1);
        let (status, headers, text) = send(request, timeout).await.map_err(Failure::NoAnswer)?;
        let flavor = headers.get(FLAVOR.0).and_then(|v| v.to_str().ok());
        if flavor != Some(FLAVOR.1) {
            return Ok(Asked::NotTheServer);
        }
        if !status.is_success() {
            // Its error bodies are short plain text ("Service account not enabled"); a token
            // is only in a successful answer.
            let detail: String = text.trim().chars().take(200).collect();
            return Err(Failure::Status(if detail.is_empty() {
                status.to_string()
            } else {
                format!("{status}: {detail}")
            }));
        }
        Ok(Asked::Answer(text))
    }
}

/// What one root said.
enum Asked {
    Answer(String),
    /// It answered without `Metadata-Flavor: Google`.
    NotTheServer,
}

/// Why one root gave nothing.
enum Failure {
    /// No connection, or no answer in time.
    NoAnswer(String),
    /// The metadata server answered with an error status.
    Status(String),
}

/// `http://{host}/computeMetadata/v1` (a host given with its scheme keeps it).
fn root_of(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.starts_with("http://") || host.starts_with("https://") {
        format!("{host}/computeMetadata/v1")
    } else {
        format!("http://{host}/computeMetadata/v1")
    }
}
