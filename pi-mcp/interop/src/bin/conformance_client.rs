//! `pi-mcp-conformance-client <server-url>`: the client the MCP conformance suite's client mode
//! drives (`conformance client --command ...`). The suite starts a mock server (and an
//! authorization server) per scenario, names the scenario in `MCP_CONFORMANCE_SCENARIO` and
//! passes scenario data (pre-registered credentials, tool calls) in `MCP_CONFORMANCE_CONTEXT`.
//!
//! Everything goes through `McpClient`'s public API, configured as an application would: OAuth
//! with an authorizer that plays the browser (it follows the authorization page to its
//! redirect), a client ID metadata document URL, pre-registered credentials or client
//! credentials when the scenario gives them, an elicitation handler that accepts with an empty
//! form (so the client's own defaults are what the server sees). Then it lists the tools and
//! calls them through a `ToolRegistry`, as the agent loop would.

use std::process::ExitCode;

use pi_mcp::{
    AuthorizationPrompt, AuthorizeError, Authorizer, ElicitationRequest, ElicitationResponse,
    IdentityProvider, McpClient, McpTool, OAuthConfig, SigningAlgorithm,
};
use pi_tool::{AgentTool, BoxFuture, ToolCall, ToolRegistry};
use serde_json::{Map, Value, json};

/// The URL the suite accepts as a client ID metadata document (it does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The redirect URI the suite's authorization server sends the code to.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// `MCP_CONFORMANCE_CONTEXT`, the fields some scenarios set.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context {
    #[serde(default, alias = "client_id")]
    client_id: Option<String>,
    #[serde(default, alias = "client_secret")]
    client_secret: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ContextCall>,
    /// auth/client-credentials-jwt: the client's key (PKCS#8 PEM) and its algorithm.
    #[serde(default, alias = "private_key_pem")]
    private_key_pem: Option<String>,
    #[serde(default, alias = "signing_algorithm")]
    signing_algorithm: Option<String>,
    /// auth/wif-jwt-bearer: the workload's identity token.
    #[serde(default, alias = "valid_jwt")]
    valid_jwt: Option<String>,
    /// auth/enterprise-managed-authorization: the identity provider and the user's ID token.
    #[serde(default, alias = "idp_client_id")]
    idp_client_id: Option<String>,
    #[serde(default, alias = "idp_id_token")]
    idp_id_token: Option<String>,
    #[serde(default, alias = "idp_issuer")]
    idp_issuer: Option<String>,
    #[serde(default, alias = "idp_token_endpoint")]
    idp_token_endpoint: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct ContextCall {
    name: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// Plays the browser: fetches the authorization page without following its redirect and
/// returns where it sends the user (the suite's authorization server approves at once).
struct HeadlessBrowser {
    http: reqwest::Client,
}

impl Authorizer for HeadlessBrowser {
    fn redirect_uri(&self) -> String {
        REDIRECT_URI.to_owned()
    }

    fn authorize(
        &self,
        prompt: AuthorizationPrompt,
    ) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        Box::pin(async move {
            let response = self.http.get(&prompt.url).send().await?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .ok_or_else(|| {
                    format!(
                        "the authorization page answered {} without a redirect",
                        response.status()
                    )
                })?
                .to_str()?
                .to_owned();
            Ok(location)
        })
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("pi-mcp-conformance-client: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: pi-mcp-conformance-client <server-url>")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => {
            serde_json::from_str(&text).map_err(|err| format!("MCP_CONFORMANCE_CONTEXT: {err}"))?
        }
        Err(_) => Context::default(),
    };
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|err| err.to_string())?;

    let mut builder = McpClient::http(&url)
        .client_info("pi-mcp-conformance-client", env!("CARGO_PKG_VERSION"))
        .elicitation(|request: ElicitationRequest| async move {
            eprintln!("elicitation from {}: {}", request.server, request.message);
            // An empty form: the client fills in the form's defaults (SEP-1034).
            ElicitationResponse::Accept(json!({}))
        });
    if scenario.starts_with("auth/") {
        let oauth = oauth_config(&scenario, &context, http)?;
        builder = builder.oauth(oauth);
    }
    let client = builder.connect().await.map_err(|err| err.to_string())?;
    eprintln!(
        "connected: protocol {}, {} tools",
        client.protocol_version().unwrap_or_default(),
        client.mcp_tools().len()
    );

    let mut registry = ToolRegistry::new();
    client.add_to(&mut registry);
    let tools = client.mcp_tools();
    let find = |name: &str| tools.iter().find(|tool| tool.mcp_name() == name);
    let calls: Vec<(String, Value)> = match scenario.as_str() {
        // The scenario's mock answers tools/list only.
        "json-schema-ref-no-deref" => Vec::new(),
        // Echo the focal tool's input schema as the client keeps it.
        "json-schema-2020-12-preservation" => {
            let focal = find("json_schema_2020_12_tool").ok_or("the focal tool is not listed")?;
            let echo = find("json_schema_echo").ok_or("the echo tool is not listed")?;
            vec![(
                echo.spec().name.clone(),
                json!({"schema": focal.input_schema()}),
            )]
        }
        _ if !context.tool_calls.is_empty() => context
            .tool_calls
            .iter()
            .map(|call| {
                let name = find(&call.name)
                    .map_or_else(|| call.name.clone(), |tool| tool.spec().name.clone());
                (name, Value::Object(call.arguments.clone()))
            })
            .collect(),
        _ => tools
            .iter()
            .map(|tool| (tool.spec().name.clone(), sample_arguments(tool)))
            .collect(),
    };
    for (index, (name, arguments)) in calls.into_iter().enumerate() {
        let result = registry
            .run(&ToolCall::new(format!("call-{index}"), &name, arguments))
            .await;
        eprintln!(
            "{name}: {}{}",
            if result.is_error { "error: " } else { "" },
            result.text_content()
        );
    }
    client.close();
    Ok(())
}

/// The sign-in each `auth/*` scenario asks for, from what its context carries.
fn oauth_config(
    scenario: &str,
    context: &Context,
    http: reqwest::Client,
) -> Result<OAuthConfig, String> {
    let missing = |what: &str| format!("{scenario}: the context carries no {what}");
    let oauth = match scenario {
        "auth/client-credentials-jwt" => {
            let id = context
                .client_id
                .as_ref()
                .ok_or_else(|| missing("client_id"))?;
            let key = (context.private_key_pem.as_ref()).ok_or_else(|| missing("private key"))?;
            let algorithm = context.signing_algorithm.as_deref().unwrap_or("ES256");
            let algorithm = SigningAlgorithm::from_name(algorithm)
                .ok_or_else(|| format!("{scenario}: unknown algorithm {algorithm}"))?;
            OAuthConfig::client_credentials_private_key(id, key, algorithm)
        }
        _ if scenario.starts_with("auth/client-credentials") => {
            let (Some(id), Some(secret)) = (&context.client_id, &context.client_secret) else {
                return Err(missing("client credentials"));
            };
            OAuthConfig::client_credentials(id, secret)
        }
        "auth/wif-jwt-bearer" => {
            let token = context
                .valid_jwt
                .clone()
                .ok_or_else(|| missing("workload token"))?;
            let mut oauth = OAuthConfig::workload_identity(move || {
                let token = token.clone();
                async move { Ok::<_, AuthorizeError>(token) }
            });
            if let Some(id) = &context.client_id {
                oauth = oauth.client_id(id);
            }
            oauth
        }
        "auth/enterprise-managed-authorization" => {
            let (Some(issuer), Some(endpoint), Some(idp_client), Some(id_token)) = (
                &context.idp_issuer,
                &context.idp_token_endpoint,
                &context.idp_client_id,
                context.idp_id_token.clone(),
            ) else {
                return Err(missing("identity provider"));
            };
            let (Some(id), Some(secret)) = (&context.client_id, &context.client_secret) else {
                return Err(missing("client credentials"));
            };
            let idp = IdentityProvider::new(issuer, endpoint, idp_client, move || {
                let id_token = id_token.clone();
                async move { Ok::<_, AuthorizeError>(id_token) }
            });
            OAuthConfig::enterprise(idp)
                .client_id(id)
                .client_secret(secret)
        }
        _ => {
            let mut oauth = OAuthConfig::new(HeadlessBrowser { http })
                .client_name("pi-mcp-conformance-client")
                .client_metadata_url(CLIENT_METADATA_URL);
            if scenario.starts_with("auth/dpop") {
                oauth = oauth.dpop();
            }
            if let Some(id) = &context.client_id {
                oauth = oauth.client_id(id);
                if let Some(secret) = &context.client_secret {
                    oauth = oauth.client_secret(secret);
                }
            }
            oauth
        }
    };
    Ok(oauth)
}

/// Arguments that satisfy a tool's required properties.
fn sample_arguments(tool: &McpTool) -> Value {
    let schema = tool.input_schema();
    let mut arguments = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let property = &schema["properties"][name];
        let value = match property["type"].as_str() {
            Some("number" | "integer") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("test"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
