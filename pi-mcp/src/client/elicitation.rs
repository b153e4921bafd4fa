//! A server asking the user for input during a tool call (elicitation): as a request of its own
//! (2025-11-25) or inside an `input_required` result (2026-07-28, multi round-trip requests). Both
//! reach the handler the application set; without one, the answer is "decline".

use std::sync::Arc;

use pi_tool::{ArgumentValidator, BoxFuture, ToolSpec};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use super::interaction::UserWaits;

/// What a server asks the user for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Fill in a form: a flat object schema of strings, numbers, booleans and enums, each
    /// property with its `title`, `description` and perhaps a `default`.
    Form {
        /// The `requestedSchema`, as the server sent it.
        schema: Value,
    },
    /// Visit a URL (to sign in somewhere, to pay, ...), outside the client; the server learns the
    /// outcome on its own.
    Url {
        /// The page to open.
        url: String,
    },
}

/// A server's request for input from the user, given to an [`ElicitationHandler`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// Which server asks: its prefix (`MCP server "github"`) or its command or URL.
    pub server: String,
    /// What the server tells the user it needs, to show as it is.
    pub message: String,
    /// A form to fill in, or a URL to visit.
    pub kind: ElicitationKind,
}

impl ElicitationRequest {
    /// A request (the client makes them from what servers send; hosts make them in tests).
    pub fn new(
        server: impl Into<String>,
        message: impl Into<String>,
        kind: ElicitationKind,
    ) -> Self {
        ElicitationRequest {
            server: server.into(),
            message: message.into(),
            kind,
        }
    }

    /// The answer that will be sent for `content`: the form's defaults filled in for every
    /// property the user left out (SEP-1034), then checked against the form's schema and
    /// normalized as tool arguments are (`"30"` for an integer becomes `30`). `Err` says what does
    /// not fit, so a host can ask again. A URL request takes no content (`Ok(Value::Null)`).
    pub fn complete(&self, content: Value) -> Result<Value, String> {
        let ElicitationKind::Form { schema } = &self.kind else {
            return Ok(Value::Null);
        };
        let mut content = match content {
            Value::Object(content) => content,
            Value::Null => Map::new(),
            other => return Err(format!("the answer must be an object, got {other}")),
        };
        if let Some(Value::Object(properties)) = schema.get("properties") {
            for (name, property) in properties {
                if let Some(default) = property.get("default")
                    && !content.contains_key(name)
                {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        let spec = ToolSpec {
            name: "elicitation".to_owned(),
            description: String::new(),
            parameters: schema.clone(),
        };
        ArgumentValidator::new(&spec)
            .validate(Value::Object(content))
            .map_err(|err| err.to_string())
    }
}

/// The user's answer to an [`ElicitationRequest`].
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationResponse {
    /// The user answered: the form's content (an object; what they left out is filled in from the
    /// form's defaults), or `Value::Null` for a URL they visited.
    Accept(Value),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// Answers a server's requests for user input during tool calls
/// ([`McpClientBuilder::elicitation`](crate::McpClientBuilder::elicitation)).
///
/// The `pi` command asks on the terminal; a library answers however it likes. A closure
/// `Fn(ElicitationRequest) -> impl Future<Output = ElicitationResponse>` is a handler.
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Asks the user; the call that caused the request waits for the answer (its timeout does
    /// not run meanwhile).
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationResponse>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ElicitationResponse> + Send + 'static,
{
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationResponse> {
        Box::pin(self(request))
    }
}

/// The application's handler (if any) with what a request needs around it.
#[derive(Clone)]
pub(crate) struct Elicitation {
    pub(crate) handler: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) server: String,
    pub(crate) waits: Arc<UserWaits>,
}

impl Elicitation {
    /// One request, answered by the handler: declined without one, and when the handler's
    /// answer does not fit the form (said in a warning).
    pub(crate) async fn answer(&self, params: ElicitRequestParams) -> ElicitResult {
        let Some(handler) = &self.handler else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let (message, kind) = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                ElicitationKind::Form {
                    schema: serde_json::to_value(requested_schema).unwrap_or(Value::Null),
                },
            ),
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                (message, ElicitationKind::Url { url })
            }
            // A kind of request newer than this client: the user cannot be asked it.
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        let request = ElicitationRequest {
            server: self.server.clone(),
            message,
            kind,
        };
        let response = {
            let _waiting = self.waits.begin();
            handler.elicit(request.clone()).await
        };
        match response {
            ElicitationResponse::Accept(content) => match request.complete(content) {
                Ok(Value::Null) => ElicitResult::new(ElicitationAction::Accept),
                Ok(content) => ElicitResult::new(ElicitationAction::Accept).with_content(content),
                Err(problem) => {
                    tracing::warn!(
                        "{}: the answer to \"{}\" does not fit the server's form, so it was declined: {problem}",
                        self.server,
                        request.message
                    );
                    ElicitResult::new(ElicitationAction::Decline)
                }
            },
            ElicitationResponse::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationResponse::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> ElicitationRequest {
        ElicitationRequest {
            server: "MCP server \"t\"".into(),
            message: "who are you?".into(),
            kind: ElicitationKind::Form { schema },
        }
    }

    #[test]
    fn left_out_fields_take_the_forms_defaults() {
        let request = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }
        }));
        assert_eq!(
            request.complete(json!({})).unwrap(),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        // What the user gave stays; a string the form wants as an integer becomes one.
        assert_eq!(
            request
                .complete(json!({"name": "Ada", "age": "36", "verified": false}))
                .unwrap(),
            json!({"name": "Ada", "age": 36, "verified": false, "score": 95.5, "status": "active"})
        );
        assert_eq!(request.complete(Value::Null).unwrap()["age"], 30);
    }

    #[test]
    fn an_answer_that_does_not_fit_says_why() {
        let request = form(json!({
            "type": "object",
            "properties": {"status": {"type": "string", "enum": ["active", "inactive"]}},
            "required": ["status"]
        }));
        let missing = request.complete(json!({})).unwrap_err();
        assert!(
            missing.contains("status: missing required property"),
            "{missing}"
        );
        let wrong = request.complete(json!({"status": "gone"})).unwrap_err();
        assert!(
            wrong.contains(r#"expected one of "active", "inactive"; got "gone""#),
            "{wrong}"
        );
        assert!(request.complete(json!([1])).is_err());
        let url = ElicitationRequest {
            kind: ElicitationKind::Url {
                url: "https://example.com/pay".into(),
            },
            ..request
        };
        assert_eq!(url.complete(json!({"x": 1})), Ok(Value::Null));
    }
}
