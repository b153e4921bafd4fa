//! A served call that needs approval asks the client, through MCP elicitation: a form with one
//! yes/no field. On a 2025 session the server sends `elicitation/create` and waits for the
//! answer; on a 2026-07-28 session, which forbids server-to-client requests, the call's result
//! is `input_required` with the same form, and the client's retry carries the answer. A client
//! that did not declare the capability cannot approve: the call is refused with an error
//! result saying so. An external tool's call cannot be answered over MCP at all.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use pi_tool::{Decision, ToolResult, WaitKind, WaitingCall, external_unanswered_message};
use rmcp::RoleServer;
use rmcp::model::{
    BooleanSchema, CallToolRequestParams, ClientCapabilities, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationSchema, InputRequest, InputRequiredResult,
    PrimitiveSchemaDefinition, ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::Value;

/// The key of the approval form among a 2026-07-28 result's `inputRequests`.
pub(crate) const APPROVAL_INPUT: &str = "pi_approval";
/// The form's one field: `true` approves the call.
pub(crate) const APPROVE_FIELD: &str = "approve";
/// The most of the arguments' JSON the form's message shows.
const MAX_SHOWN_ARGUMENTS: usize = 4_096;

/// What asking the client gave.
pub(crate) enum Asked {
    /// The client's user decided.
    Decided(Decision),
    /// The call cannot be approved here: its result.
    Refused(ToolResult),
    /// A 2026-07-28 client must answer the form and call again.
    InputRequired(InputRequiredResult),
}

/// The text of a call refused because the client cannot approve it.
pub(crate) fn cannot_approve_message(tool: &str) -> String {
    format!(
        "Tool {tool} was not run: it needs approval before it runs, and this MCP client cannot \
         give it (it did not declare the elicitation capability in form mode)"
    )
}

/// Asks the client about a call that waits.
pub(crate) async fn ask_client(
    waiting: &WaitingCall,
    params: &CallToolRequestParams,
    request: &RequestContext<RoleServer>,
) -> Asked {
    if waiting.kind == WaitKind::External {
        return Asked::Refused(ToolResult::error(external_unanswered_message(
            &waiting.tool,
        )));
    }
    if !asks_forms(request.client_capabilities().as_ref()) {
        return Asked::Refused(ToolResult::error(cannot_approve_message(&waiting.tool)));
    }
    let form = approval_form(waiting);
    let without_requests = request
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    if without_requests {
        return from_retry(waiting, params, form);
    }
    let asked = request.peer.create_elicitation(form);
    tokio::select! {
        answer = asked => match answer {
            Ok(answer) => Asked::Decided(decision_of(answer)),
            Err(err) => Asked::Refused(ToolResult::error(format!(
                "Tool {} was not run: it needs approval, and the client's answer to the approval \
                 request failed: {err}",
                waiting.tool
            ))),
        },
        () = request.ct.cancelled() => Asked::Refused(ToolResult::error(pi_tool::ABORTED)),
    }
}

/// Whether the client takes form elicitations (declaring `elicitation` with neither mode means
/// form, as the spec keeps for older clients).
fn asks_forms(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// On a 2026-07-28 session: the decision the client's retry carries for this very call, or the
/// form to answer first.
fn from_retry(
    waiting: &WaitingCall,
    params: &CallToolRequestParams,
    form: ElicitRequestParams,
) -> Asked {
    let state = request_state(waiting);
    let answered = params
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get(APPROVAL_INPUT));
    // An answer counts only with the state of this call: one given for other arguments (or
    // another tool) is asked again, not taken.
    if let Some(answer) = answered
        && params.request_state.as_deref() == Some(state.as_str())
    {
        return match serde_json::from_value::<ElicitResult>(answer.clone()) {
            Ok(answer) => Asked::Decided(decision_of(answer)),
            Err(err) => Asked::Refused(ToolResult::error(format!(
                "Tool {} was not run: the client's answer to the approval request is not an \
                 elicitation result: {err}",
                waiting.tool
            ))),
        };
    }
    let mut requests = BTreeMap::new();
    requests.insert(
        APPROVAL_INPUT.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(form)),
    );
    Asked::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
}

/// The `requestState` of a call's approval: names the tool and its arguments, so that an answer
/// is taken only for the call it was given for. Not a secret: the client is the approver.
fn request_state(waiting: &WaitingCall) -> String {
    let mut hasher = DefaultHasher::new();
    waiting.tool.hash(&mut hasher);
    waiting.arguments.to_string().hash(&mut hasher);
    format!("pi-approval-1:{:016x}", hasher.finish())
}

/// The yes/no form for a waiting call: its tool, reason and arguments in the message.
fn approval_form(waiting: &WaitingCall) -> ElicitRequestParams {
    let mut arguments = serde_json::to_string_pretty(&waiting.arguments)
        .unwrap_or_else(|_| waiting.arguments.to_string());
    if arguments.len() > MAX_SHOWN_ARGUMENTS {
        let mut cut = MAX_SHOWN_ARGUMENTS;
        while !arguments.is_char_boundary(cut) {
            cut -= 1;
        }
        let dropped = arguments.len() - cut;
        arguments.truncate(cut);
        arguments.push_str(&format!("\n[{dropped} more bytes not shown]"));
    }
    let message = format!(
        "Approve the call of tool {}?\n{}\nArguments:\n{arguments}",
        waiting.tool, waiting.reason
    );
    let approve = BooleanSchema::new()
        .title("Approve")
        .description(format!("Run {} with these arguments", waiting.tool));
    let mut properties = BTreeMap::new();
    properties.insert(
        APPROVE_FIELD.to_owned(),
        PrimitiveSchemaDefinition::Boolean(approve),
    );
    let mut schema = ElicitationSchema::new(properties);
    schema.required = Some(vec![APPROVE_FIELD.to_owned()]);
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    }
}

/// The client's answer as a decision: the call runs only on an accepted form that says
/// `approve: true`.
fn decision_of(answer: ElicitResult) -> Decision {
    let reason = match answer.action {
        ElicitationAction::Accept => {
            let approved = answer
                .content
                .as_ref()
                .and_then(|content| content.get(APPROVE_FIELD))
                .and_then(Value::as_bool);
            match approved {
                Some(true) => return Decision::Approve,
                Some(false) => "the client's user declined it",
                None => "the client's answer did not say approve: true",
            }
        }
        ElicitationAction::Decline => "the client's user declined it",
        ElicitationAction::Cancel => "the client's user cancelled the approval request",
        // An action this server does not know approves nothing.
        _ => "the client's answer was neither accept, decline nor cancel",
    };
    Decision::Deny {
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn waiting(arguments: Value) -> WaitingCall {
        WaitingCall::new(
            "1",
            "refund",
            arguments,
            "Tool refund needs approval",
            WaitKind::Approval,
        )
    }

    #[test]
    fn only_an_accepted_yes_approves() {
        let accept =
            |content: Value| ElicitResult::new(ElicitationAction::Accept).with_content(content);
        assert_eq!(
            decision_of(accept(json!({"approve": true}))),
            Decision::Approve
        );
        for answer in [
            accept(json!({"approve": false})),
            accept(json!({"approve": "yes"})),
            ElicitResult::new(ElicitationAction::Accept),
            ElicitResult::new(ElicitationAction::Decline),
            ElicitResult::new(ElicitationAction::Cancel),
        ] {
            assert!(matches!(decision_of(answer), Decision::Deny { .. }));
        }
    }

    #[test]
    fn the_request_state_names_the_tool_and_its_arguments() {
        let one = request_state(&waiting(json!({"order": "A"})));
        assert_eq!(one, request_state(&waiting(json!({"order": "A"}))));
        assert_ne!(one, request_state(&waiting(json!({"order": "B"}))));
    }

    #[test]
    fn a_retry_is_taken_only_with_the_state_of_its_call() {
        let call = waiting(json!({"order": "A"}));
        let form = || approval_form(&call);
        let yes = serde_json::to_value(
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})),
        )
        .unwrap();
        let answered = |state: &str| {
            CallToolRequestParams::new("refund")
                .with_input_responses(BTreeMap::from([(APPROVAL_INPUT.to_owned(), yes.clone())]))
                .with_request_state(state)
        };
        // The first call: the form, with this call's state.
        let Asked::InputRequired(first) =
            from_retry(&call, &CallToolRequestParams::new("refund"), form())
        else {
            panic!("the form first");
        };
        let state = first.request_state.clone().expect("a state");
        assert!(
            first
                .input_requests
                .as_ref()
                .is_some_and(|r| r.contains_key(APPROVAL_INPUT))
        );
        // The retry with it: approved.
        assert!(matches!(
            from_retry(&call, &answered(&state), form()),
            Asked::Decided(Decision::Approve)
        ));
        // An answer given for other arguments is not taken: the form again.
        let other = request_state(&waiting(json!({"order": "B"})));
        assert!(matches!(
            from_retry(&call, &answered(&other), form()),
            Asked::InputRequired(_)
        ));
        // An answer that is not an elicitation result is refused.
        let garbled = CallToolRequestParams::new("refund")
            .with_input_responses(BTreeMap::from([(APPROVAL_INPUT.to_owned(), json!(7))]))
            .with_request_state(state);
        assert!(matches!(
            from_retry(&call, &garbled, form()),
            Asked::Refused(_)
        ));
    }

    #[test]
    fn the_form_shows_long_arguments_cut() {
        let long = "x".repeat(10_000);
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = approval_form(&waiting(json!({ "note": long })))
        else {
            panic!("a form");
        };
        assert!(
            message.len() < MAX_SHOWN_ARGUMENTS + 200,
            "{}",
            message.len()
        );
        assert!(message.contains("more bytes not shown"));
        assert_eq!(requested_schema.required, Some(vec!["approve".to_owned()]));
    }
}
