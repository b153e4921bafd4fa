//! Google Vertex AI: Gemini (pi's `google-vertex`, Gemini's wire at
//! `.../publishers/google/models/{model}:streamGenerateContent?alt=sse`) and Claude (pi's
//! `google-vertex-anthropic`, Anthropic's wire at
//! `.../publishers/anthropic/models/{model}:streamRawPredict`, with
//! `anthropic_version: vertex-2023-10-16` in the body and no model there).
//!
//! Both live under `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/
//! locations/{location}`, or `https://aiplatform.googleapis.com/...` for the `global` location,
//! and sign in with a bearer token: Application Default Credentials by default, or a token
//! provider. Gemini also takes a Vertex API key (express mode, `x-goog-api-key`).

#[cfg(feature = "vertex")]
use std::sync::Arc;

use serde_json::{Value, json};

use super::decode::WireDecoder;
use super::settings::{Settings, settings_builder};
use crate::model::{Context, StreamOptions};

/// The project variables, first set wins (Google's libraries read the first two).
const PROJECT_VARIABLES: [&str; 3] = [
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
];
/// The location variables, first set wins.
const LOCATION_VARIABLES: [&str; 2] = ["GOOGLE_CLOUD_LOCATION", "CLOUDSDK_COMPUTE_REGION"];
/// The location used when none is set: the global endpoint serves the current models.
const DEFAULT_LOCATION: &str = "global";
/// The `anthropic_version` of Claude on Vertex.
const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Where and how a Vertex model is reached, shared by Gemini and Claude.
#[derive(Clone)]
struct Vertex {
    project: Option<String>,
    location: Option<String>,
    #[cfg(feature = "vertex")]
    token_provider: Option<Arc<dyn super::GoogleTokenProvider>>,
    #[cfg(feature = "vertex")]
    credentials: Arc<super::google_auth::LazyCredentials>,
}

impl std::fmt::Debug for Vertex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vertex")
            .field("project", &self.project)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Vertex {
    fn new() -> Self {
        Vertex {
            project: None,
            location: None,
            #[cfg(feature = "vertex")]
            token_provider: None,
            #[cfg(feature = "vertex")]
            credentials: Arc::new(super::google_auth::LazyCredentials::new()),
        }
    }

    /// The location: set, else from the environment, else `global`.
    fn location(&self, env: &dyn Fn(&str) -> Option<String>) -> String {
        self.location
            .clone()
            .or_else(|| first(&LOCATION_VARIABLES, env))
            .unwrap_or_else(|| DEFAULT_LOCATION.to_owned())
    }

    /// The URL of a model's method: `{root}/v1/projects/{project}/locations/{location}/
    /// publishers/{publisher}/models/{model}:{method}`, where the root is the location's host
    /// (or the base URL set on the model).
    fn url(
        &self,
        settings: &Settings,
        project: &str,
        publisher: &str,
        method: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> String {
        let location = self.location(env);
        let root = if !settings.base_url.is_empty() {
            settings.base_url.clone()
        } else if location == "global" {
            "https://aiplatform.googleapis.com".to_owned()
        } else {
            format!("https://{location}-aiplatform.googleapis.com")
        };
        format!(
            "{root}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{}:{method}",
            settings.model
        )
    }
}

fn first(names: &[&str], env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    names
        .iter()
        .find_map(|name| env(name).filter(|v| !v.trim().is_empty()))
}

#[cfg(feature = "vertex")]
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The builder methods both Vertex models have.
macro_rules! vertex_builder {
    ($provider:ty) => {
        impl $provider {
            /// The Google Cloud project (default: `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`,
            /// `CLOUDSDK_CORE_PROJECT`, else the credentials file's project).
            pub fn project(mut self, project: impl Into<String>) -> Self {
                self.vertex.project = Some(project.into());
                self
            }

            /// The location (`us-east5`, `europe-west1`, `global`; default:
            /// `GOOGLE_CLOUD_LOCATION`, `CLOUDSDK_COMPUTE_REGION`, else `global`, served at
            /// `https://aiplatform.googleapis.com`).
            pub fn location(mut self, location: impl Into<String>) -> Self {
                self.vertex.location = Some(location.into());
                self
            }

            /// Signs in with tokens from this provider instead of Application Default
            /// Credentials.
            #[cfg(feature = "vertex")]
            pub fn token_provider(mut self, provider: Arc<dyn super::GoogleTokenProvider>) -> Self {
                self.vertex.token_provider = Some(provider);
                self
            }

            /// Signs in with a fixed access token (`gcloud auth print-access-token`; it is not
            /// refreshed, and expires after an hour).
            #[cfg(feature = "vertex")]
            pub fn access_token(self, token: impl Into<String>) -> Self {
                self.token_provider(Arc::new(super::StaticToken::new(token)))
            }
        }
    };
}

/// Gemini on Vertex AI (pi's `google-vertex`): Gemini's wire, Vertex's URL and sign-in.
///
/// ```
/// use pi_runtime::providers::VertexGemini;
///
/// // Signed in with Application Default Credentials (the `vertex` feature) at each request.
/// let model = VertexGemini::new("gemini-2.5-flash").project("my-project").location("global");
/// assert_eq!(
///     model.endpoint().unwrap(),
///     "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct VertexGemini {
    pub(crate) settings: Settings,
    vertex: Vertex,
    #[cfg(feature = "vertex")]
    client: super::http::LazyClient,
}

settings_builder!(VertexGemini);
vertex_builder!(VertexGemini);

impl VertexGemini {
    /// The wire API name (pi's).
    pub const API: &'static str = "google-vertex";

    /// A Gemini model on Vertex AI; the project, location and credentials are read from the
    /// environment at each request unless set. `.api_key(..)` or `GOOGLE_CLOUD_API_KEY` signs
    /// in with a Vertex API key instead of a token.
    pub fn new(model: impl Into<String>) -> Self {
        VertexGemini {
            settings: Settings::new(
                &model.into(),
                "google-vertex",
                "",
                &["GOOGLE_CLOUD_API_KEY"],
            ),
            vertex: Vertex::new(),
            #[cfg(feature = "vertex")]
            client: Default::default(),
        }
    }

    fn gemini(&self) -> super::GoogleGenerativeAi {
        let mut gemini = super::GoogleGenerativeAi::new(self.settings.model.clone());
        gemini.settings = self.settings.clone();
        gemini
    }

    /// The JSON body this model would send for a context (Gemini's, with this API's replay
    /// rules): for tests and debugging.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        self.gemini().request_body_as(Self::API, context, options)
    }

    /// The URL a request goes to, with the project and location as they are now.
    pub fn endpoint(&self) -> Result<String, String> {
        self.endpoint_with(&|name| std::env::var(name).ok(), None)
    }

    fn endpoint_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        fallback_project: Option<&str>,
    ) -> Result<String, String> {
        let project = project(&self.vertex, env, fallback_project)?;
        Ok(self.vertex.url(
            &self.settings,
            &project,
            "google",
            "streamGenerateContent?alt=sse",
            env,
        ))
    }

    fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        self.gemini().wire_decoder()
    }
}

/// Claude on Vertex AI (pi's `google-vertex-anthropic`): Anthropic's Messages wire (the same
/// body, thinking, caching and tools as [`AnthropicMessages`](super::AnthropicMessages)) at
/// Vertex's `:streamRawPredict`, with `anthropic_version: vertex-2023-10-16` in the body.
/// Model ids are Vertex's (`claude-sonnet-4-5@20250929`).
///
/// ```
/// use pi_runtime::providers::VertexAnthropic;
///
/// let model = VertexAnthropic::new("claude-sonnet-4-5@20250929").project("p").location("us-east5");
/// assert_eq!(
///     model.endpoint().unwrap(),
///     "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct VertexAnthropic {
    pub(crate) settings: Settings,
    vertex: Vertex,
    prompt_caching: bool,
    strict: bool,
    #[cfg(feature = "vertex")]
    client: super::http::LazyClient,
}

settings_builder!(VertexAnthropic);
vertex_builder!(VertexAnthropic);

impl VertexAnthropic {
    /// The wire API name: Anthropic's Messages.
    pub const API: &'static str = super::AnthropicMessages::API;

    /// A Claude model on Vertex AI; the project, location and credentials are read from the
    /// environment at each request unless set.
    pub fn new(model: impl Into<String>) -> Self {
        VertexAnthropic {
            settings: Settings::new(&model.into(), "google-vertex-anthropic", "", &[]),
            vertex: Vertex::new(),
            prompt_caching: true,
            strict: false,
            #[cfg(feature = "vertex")]
            client: Default::default(),
        }
    }

    /// As [`AnthropicMessages::prompt_caching`](super::AnthropicMessages::prompt_caching).
    pub fn prompt_caching(mut self, enabled: bool) -> Self {
        self.prompt_caching = enabled;
        self
    }

    /// As [`AnthropicMessages::strict`](super::AnthropicMessages::strict).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    fn anthropic(&self) -> super::AnthropicMessages {
        let mut anthropic = super::AnthropicMessages::new(self.settings.model.clone())
            .prompt_caching(self.prompt_caching)
            .strict(self.strict);
        anthropic.settings = self.settings.clone();
        anthropic
    }

    /// The JSON body this model would send for a context: Anthropic's, without `model` and
    /// with `anthropic_version: vertex-2023-10-16`.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        let mut body = self.anthropic().request_body(context, options);
        if let Value::Object(map) = &mut body {
            map.remove("model");
            map.insert("anthropic_version".into(), json!(VERTEX_ANTHROPIC_VERSION));
        }
        body
    }

    /// The URL a request goes to, with the project and location as they are now.
    pub fn endpoint(&self) -> Result<String, String> {
        self.endpoint_with(&|name| std::env::var(name).ok(), None)
    }

    fn endpoint_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        fallback_project: Option<&str>,
    ) -> Result<String, String> {
        let project = project(&self.vertex, env, fallback_project)?;
        Ok(self.vertex.url(
            &self.settings,
            &project,
            "anthropic",
            "streamRawPredict",
            env,
        ))
    }

    fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        self.anthropic().wire_decoder()
    }
}

/// The project: set, else from the environment, else the credentials' own.
fn project(
    vertex: &Vertex,
    env: &dyn Fn(&str) -> Option<String>,
    fallback: Option<&str>,
) -> Result<String, String> {
    vertex
        .project
        .clone()
        .or_else(|| first(&PROJECT_VARIABLES, env))
        .or_else(|| fallback.map(str::to_owned))
        .ok_or_else(|| {
            "No Google Cloud project for Vertex AI: set GOOGLE_CLOUD_PROJECT (or .project(..))"
                .to_owned()
        })
}

/// How a request signs in, and what to say when that is refused.
#[cfg(feature = "vertex")]
struct SignIn {
    header: (String, String),
    secret: String,
    advice: String,
}

/// The sign-in of one request: the options' or model's API key (Gemini only), the token
/// provider, else Application Default Credentials. Also returns the project the credentials
/// name, for a model without one.
#[cfg(feature = "vertex")]
async fn sign_in(
    vertex: &Vertex,
    settings: &Settings,
    options: &StreamOptions,
    takes_api_key: bool,
) -> Result<(SignIn, Option<String>), String> {
    if takes_api_key && let Some(key) = settings.resolve_key(options.api_key.as_deref()) {
        return Ok((
            SignIn {
                header: ("x-goog-api-key".to_owned(), key.clone()),
                secret: key,
                advice: "check GOOGLE_CLOUD_API_KEY (or the key passed with .api_key(..)): a \
                         Vertex AI API key bound to the project's service account"
                    .to_owned(),
            },
            None,
        ));
    }
    let timeout = settings.first_byte_timeout;
    let lazy;
    let (provider, advice): (&dyn super::GoogleTokenProvider, String) = match &vertex.token_provider
    {
        Some(provider) => (
            provider.as_ref(),
            "check the access token: it must be current and for an account with the Vertex AI \
             User role on the project"
                .to_owned(),
        ),
        None => {
            lazy = vertex.credentials.get()?;
            let advice = format!(
                "check {} (GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default \
                 login`, or the machine's service account): the account needs the Vertex AI User \
                 role on the project",
                lazy.source()
            );
            (lazy.as_ref(), advice)
        }
    };
    let token = tokio::time::timeout(timeout, provider.token())
        .await
        .map_err(|_| {
            format!(
                "No Google Cloud access token within {timeout:?} (the credentials did not answer)"
            )
        })?
        .map_err(|err| match vertex.token_provider {
            Some(_) => format!("Could not get a Google Cloud access token: {err}"),
            None => err,
        })?;
    // The credentials' project only when none is set: the metadata server is asked for it.
    let project = if vertex.project.is_none() && first(&PROJECT_VARIABLES, &env).is_none() {
        tokio::time::timeout(timeout, provider.project())
            .await
            .ok()
            .flatten()
    } else {
        None
    };
    Ok((
        SignIn {
            header: ("authorization".to_owned(), format!("Bearer {token}")),
            secret: token,
            advice,
        },
        project,
    ))
}

/// One Vertex request before it is signed.
#[cfg(feature = "vertex")]
struct Outgoing<'a, U, D> {
    vertex: &'a Vertex,
    client: &'a super::http::LazyClient,
    settings: &'a Settings,
    /// Whether a Vertex API key may sign it (Gemini).
    takes_api_key: bool,
    /// The URL, given the credentials' own project for a model without one.
    url: U,
    body: Value,
    headers: Vec<(String, String)>,
    /// The tools, when strict ones may fall back (Claude).
    strict: Option<&'a [pi_tool::ToolSpec]>,
    decoder: D,
}

/// Signs a request, then streams it as any other (through the strict-tool fallback for
/// Claude), with sign-in and not-found errors that say what to check.
#[cfg(feature = "vertex")]
fn vertex_stream<'a, U, D>(
    outgoing: Outgoing<'a, U, D>,
    options: &'a StreamOptions,
) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent>
where
    U: FnOnce(Option<&str>) -> Result<String, String> + Send + 'a,
    D: Fn() -> super::ResponseDecoder + Send + Sync + 'a,
{
    use futures_util::StreamExt;
    let Outgoing {
        vertex,
        client,
        settings,
        takes_api_key,
        url,
        body,
        headers: extra_headers,
        strict,
        decoder,
    } = outgoing;
    let prepare = async move {
        let (request, hint) = match sign_in(vertex, settings, options, takes_api_key).await {
            Err(message) => (
                Err(message),
                super::sign_in::KeyHint::with_advice("check the Google Cloud credentials", None),
            ),
            Ok((signed, credentials_project)) => {
                let mut hint =
                    super::sign_in::KeyHint::with_advice(signed.advice, Some(signed.secret));
                let request = url(credentials_project.as_deref()).map(|url| {
                    let mut headers = vec![signed.header];
                    headers.extend(extra_headers);
                    super::http::WireRequest { url, headers, body }
                });
                if let Ok(request) = &request {
                    hint = hint.when_not_found(format!(
                        "check the model id \"{}\", the project and the location in {} \
                         (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION; the model must be \
                         enabled in the project's Model Garden and served in that location)",
                        settings.model, request.url
                    ));
                }
                (request, hint)
            }
        };
        let send =
            move |request| super::http::stream(client, settings, request, decoder(), options);
        let events = match strict {
            Some(specs) => super::strict_fallback::stream(
                &settings.strict_tools,
                super::strict_fallback::Dialect::Anthropic,
                request,
                specs,
                options,
                send,
            ),
            None => send(request),
        };
        super::sign_in::with_hint(events, hint)
    };
    futures_util::stream::once(prepare).flatten().boxed()
}

#[cfg(feature = "vertex")]
impl crate::model::Model for VertexGemini {
    model_identity!();

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        let outgoing = Outgoing {
            vertex: &self.vertex,
            client: &self.client,
            settings: &self.settings,
            takes_api_key: true,
            url: move |project: Option<&str>| self.endpoint_with(&env, project),
            body: self.request_body(context, options),
            headers: Vec::new(),
            strict: None,
            decoder: move || self.decoder(),
        };
        vertex_stream(outgoing, options)
    }
}

#[cfg(feature = "vertex")]
impl crate::model::Model for VertexAnthropic {
    model_identity!();

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        let body = self.request_body(context, options);
        let betas = super::anthropic::betas(&body);
        let headers = if betas.is_empty() {
            Vec::new()
        } else {
            vec![("anthropic-beta".to_owned(), betas.join(","))]
        };
        let outgoing = Outgoing {
            vertex: &self.vertex,
            client: &self.client,
            settings: &self.settings,
            takes_api_key: false,
            url: move |project: Option<&str>| self.endpoint_with(&env, project),
            body,
            headers,
            strict: Some(context.tools),
            decoder: move || self.decoder(),
        };
        vertex_stream(outgoing, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn urls_follow_project_location_and_the_global_endpoint() {
        let gemini = VertexGemini::new("gemini-2.5-flash");
        assert_eq!(
            gemini
                .endpoint_with(&lookup(&[("GOOGLE_CLOUD_PROJECT", "acme")]), None)
                .unwrap(),
            "https://aiplatform.googleapis.com/v1/projects/acme/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            gemini
                .endpoint_with(
                    &lookup(&[
                        ("GOOGLE_CLOUD_PROJECT", "acme"),
                        ("GOOGLE_CLOUD_LOCATION", "europe-west4")
                    ]),
                    None
                )
                .unwrap(),
            "https://europe-west4-aiplatform.googleapis.com/v1/projects/acme/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        let claude = VertexAnthropic::new("claude-sonnet-4-5@20250929").location("us-east5");
        assert_eq!(
            claude
                .endpoint_with(&lookup(&[]), Some("from-credentials"))
                .unwrap(),
            "https://us-east5-aiplatform.googleapis.com/v1/projects/from-credentials/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        let err = claude.endpoint_with(&lookup(&[]), None).unwrap_err();
        assert_eq!(
            err,
            "No Google Cloud project for Vertex AI: set GOOGLE_CLOUD_PROJECT (or .project(..))"
        );
    }
}
