//! What people hear of: the organization's defaults, reminders and digest hour; one's
//! own choices; the groups' chat hooks; the latest messages sent; and the
//! organization's policies of who decides.

use std::sync::Arc;

use agentprocess_service::{ChatHookView, ChatKind, Choice, Choices, MessageKind, OrgMessageSettings, Policies};
use agentprocess_store::MessageRecord;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{AdminReads, AdminWrites, Body, Items, MemberReads, MemberWrites, needs, query, time_text};
use agentprocess_web::errors::ApiError;
use agentprocess_web::session::{Authenticated, Web};

pub(super) fn routes() -> OpenApiRouter<Arc<Web>> {
    OpenApiRouter::new()
        .routes(needs::<MemberReads>(routes!(organization_settings)))
        .routes(needs::<AdminWrites>(routes!(set_organization_settings)))
        .routes(needs::<MemberReads>(routes!(own_choices)))
        .routes(needs::<MemberWrites>(routes!(choose)))
        .routes(needs::<AdminReads>(routes!(chat_hooks)))
        .routes(needs::<AdminWrites>(routes!(set_chat_hook)))
        .routes(needs::<AdminWrites>(routes!(remove_chat_hook)))
        .routes(needs::<AdminReads>(routes!(sent)))
        .routes(needs::<MemberReads>(routes!(policies)))
        .routes(needs::<AdminWrites>(routes!(set_policies)))
}

/// What one person chose, by kind; a kind left out (or `null`) follows the
/// organization's default.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct MessageChoices {
    /// A work item waits for you.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting: Option<Choice>,
    /// A work item you may decide is overdue, and its reminders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    overdue: Option<Choice>,
    /// An escalation waits for the operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    escalation: Option<Choice>,
    /// A run you started ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ended: Option<Choice>,
}

impl MessageChoices {
    fn slot(&mut self, kind: MessageKind) -> &mut Option<Choice> {
        match kind {
            MessageKind::Waiting => &mut self.waiting,
            MessageKind::Overdue => &mut self.overdue,
            MessageKind::Escalation => &mut self.escalation,
            MessageKind::Ended => &mut self.ended,
        }
    }

    fn of(choices: &Choices) -> Self {
        let mut view = Self::default();
        for kind in MessageKind::ALL {
            *view.slot(kind) = choices.get(kind);
        }
        view
    }

    fn into_choices(mut self) -> Choices {
        let mut choices = Choices::default();
        for kind in MessageKind::ALL {
            if let Some(choice) = *self.slot(kind) {
                choices.0.insert(kind, choice);
            }
        }
        choices
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/organization/messages",
    tag = "organization",
    responses((status = 200, description = "The organization's defaults, reminder cadence and digest hour", body = OrgMessageSettings))
)]
pub(super) async fn organization_settings(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<OrgMessageSettings>, ApiError> {
    Ok(Json(web.operations.message_settings(&caller).await?.0))
}

#[utoipa::path(
    put,
    path = "/api/v1/organization/messages",
    tag = "organization",
    request_body = OrgMessageSettings,
    responses((status = 200, description = "The settings as saved", body = OrgMessageSettings))
)]
pub(super) async fn set_organization_settings(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Body(settings): Body<OrgMessageSettings>,
) -> Result<Json<OrgMessageSettings>, ApiError> {
    web.operations.set_message_settings(&caller, &settings).await?;
    Ok(Json(settings))
}

#[utoipa::path(
    get,
    path = "/api/v1/account/messages",
    tag = "account",
    responses((status = 200, description = "What the caller chose to hear of", body = MessageChoices))
)]
pub(super) async fn own_choices(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<MessageChoices>, ApiError> {
    Ok(Json(MessageChoices::of(
        &web.operations.message_settings(&caller).await?.1,
    )))
}

#[utoipa::path(
    put,
    path = "/api/v1/account/messages",
    operation_id = "choose_messages",
    tag = "account",
    request_body = MessageChoices,
    responses((status = 200, description = "The choices as saved", body = MessageChoices))
)]
pub(super) async fn choose(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Body(chosen): Body<MessageChoices>,
) -> Result<Json<MessageChoices>, ApiError> {
    let choices = chosen.into_choices();
    web.operations.choose_messages(&caller, &choices).await?;
    Ok(Json(MessageChoices::of(&choices)))
}

#[utoipa::path(
    get,
    path = "/api/v1/organization/chat-hooks",
    tag = "organization",
    responses((status = 200, description = "The groups' chat hooks (hosts only: a hook's URL is its credential)", body = Items<ChatHookView>))
)]
pub(super) async fn chat_hooks(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Items<ChatHookView>>, ApiError> {
    Ok(Json(web.operations.chat_hooks(&caller).await?.into_iter().collect()))
}

/// A Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat).
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewChatHook {
    /// The incoming-webhook URL, https:// (plain http:// only on a server whose operator
    /// allows it); kept sealed and never shown again.
    #[schema(pattern = "^https?://[^\\s]+$")]
    url: String,
    /// The markup its chat reads posts in: `slack`, or `markdown` (Mattermost,
    /// Rocket.Chat). Left out, Slack's own hosts are `slack` and any other `markdown`.
    #[serde(default)]
    kind: Option<ChatKind>,
}

#[utoipa::path(
    put,
    path = "/api/v1/organization/chat-hooks/{group}",
    tag = "organization",
    params(("group" = String, Path, description = "The group (`operators` for the operators)")),
    request_body = NewChatHook,
    responses((status = 200, description = "The group's hook", body = ChatHookView))
)]
pub(super) async fn set_chat_hook(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(group): Path<String>,
    Body(hook): Body<NewChatHook>,
) -> Result<Json<ChatHookView>, ApiError> {
    Ok(Json(
        web.operations
            .set_chat_hook(&caller, &group, &hook.url, hook.kind)
            .await?,
    ))
}

#[utoipa::path(
    delete,
    path = "/api/v1/organization/chat-hooks/{group}",
    tag = "organization",
    params(("group" = String, Path, description = "The group")),
    responses((status = 204, description = "Removed; its messages not yet posted are dropped"))
)]
pub(super) async fn remove_chat_hook(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Path(group): Path<String>,
) -> Result<StatusCode, ApiError> {
    web.operations.remove_chat_hook(&caller, &group).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A message to a person or a chat hook.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct MessageView {
    notification: String,
    run_id: String,
    /// `email` or `chat`.
    channel: &'static str,
    /// An identity id (email) or a group (chat).
    recipient: String,
    /// `waiting`, `overdue`, `escalation` or `ended`.
    kind: String,
    /// `pending`, `sent`, `failed` or `dropped`.
    status: String,
    /// Part of a daily digest.
    digest: bool,
    attempts: u32,
    /// How many times it was sent (an overdue message's reminders).
    sent: u32,
    /// Why the latest attempt failed, or why it was dropped, in words: for email, the
    /// class of failure (the mail server's own reply is in the operators' logs).
    last_error: Option<String>,
    updated_at: String,
}

impl From<&MessageRecord> for MessageView {
    fn from(record: &MessageRecord) -> Self {
        Self {
            notification: record.notification_id.clone(),
            run_id: record.run_id.clone(),
            channel: record.channel.as_str(),
            recipient: record.recipient.clone(),
            kind: record.kind.clone(),
            status: record.status.clone(),
            digest: record.digest,
            attempts: record.attempts,
            sent: record.sent,
            last_error: record.last_error.clone(),
            updated_at: time_text(record.updated_at),
        }
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct SentQuery {
    limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/api/v1/organization/messages/sent",
    tag = "organization",
    params(SentQuery),
    responses((status = 200, description = "The latest messages to people, newest first", body = Items<MessageView>))
)]
pub(super) async fn sent(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    sent: Result<Query<SentQuery>, QueryRejection>,
) -> Result<Json<Items<MessageView>>, ApiError> {
    let limit = query(sent, "the query is not valid")?.limit.unwrap_or(50);
    let records = web.operations.messages(&caller, limit).await?;
    Ok(Json(records.iter().map(MessageView::from).collect()))
}

#[utoipa::path(
    get,
    path = "/api/v1/organization/policies",
    tag = "organization",
    responses((status = 200, description = "The organization's policies of who decides (all off unless turned on)", body = Policies))
)]
pub(super) async fn policies(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
) -> Result<Json<Policies>, ApiError> {
    Ok(Json(web.operations.policies(&caller).await?))
}

#[utoipa::path(
    put,
    path = "/api/v1/organization/policies",
    tag = "organization",
    request_body = Policies,
    responses((status = 200, description = "The policies as saved", body = Policies))
)]
pub(super) async fn set_policies(
    State(web): State<Arc<Web>>,
    Authenticated(caller): Authenticated,
    Body(policies): Body<Policies>,
) -> Result<Json<Policies>, ApiError> {
    web.operations.set_policies(&caller, &policies).await?;
    Ok(Json(policies))
}
