//! Removing what has outlived its use, a small batch at a time: every purge is one
//! `DELETE` of at most `limit` rows, in a transaction of its own, so no lock is held
//! for long and a busy table is never scanned whole.

use sqlx::AnyConnection;

use crate::{Error, Result};

/// What a purge removes: rows older than its `before` (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purge {
    /// Idempotency records made before `before`: a `requestId` older than that is no
    /// longer recognised, so this is the replay window.
    Requests,
    /// Webhook deliveries delivered or given up, last changed before `before`.
    SettledDeliveries,
    /// Messages to people sent, given up or dropped, last changed before `before`.
    SettledMessages,
    /// Notifications made before `before`, handed to people, with no delivery or
    /// message left.
    Notifications,
    /// Browser sessions that expired before `before`.
    Sessions,
    /// Access tokens that expired before `before`.
    ExpiredTokens,
    /// Access tokens revoked before `before`.
    RevokedTokens,
    /// OAuth authorization codes that expired before `before`.
    AuthorizationCodes,
    /// OAuth refresh tokens that expired before `before`.
    RefreshTokens,
    /// Client assertion ids that expired before `before` (a replay is refused by its
    /// `exp` from then on).
    Assertions,
}

impl Purge {
    /// Every kind, in the order a sweep takes them (deliveries before the notifications
    /// they keep).
    pub const ALL: [Purge; 10] = [
        Purge::Requests,
        Purge::SettledDeliveries,
        Purge::SettledMessages,
        Purge::Notifications,
        Purge::Sessions,
        Purge::ExpiredTokens,
        Purge::RevokedTokens,
        Purge::AuthorizationCodes,
        Purge::RefreshTokens,
        Purge::Assertions,
    ];

    /// A name for logs.
    pub fn name(self) -> &'static str {
        match self {
            Purge::Requests => "idempotency records",
            Purge::SettledDeliveries => "webhook deliveries",
            Purge::SettledMessages => "messages to people",
            Purge::Notifications => "notifications",
            Purge::Sessions => "sessions",
            Purge::ExpiredTokens => "expired access tokens",
            Purge::RevokedTokens => "revoked access tokens",
            Purge::AuthorizationCodes => "authorization codes",
            Purge::RefreshTokens => "refresh tokens",
            Purge::Assertions => "client assertion ids",
        }
    }

    /// The table, its key columns, the age column and any further condition on a row
    /// to go.
    fn target(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Purge::Requests => ("idempotency", "org_id, request_id", "created_at", ""),
            Purge::SettledDeliveries => (
                "deliveries",
                "org_id, notification_id, webhook_id",
                "updated_at",
                " AND status <> 'pending'",
            ),
            Purge::Notifications => (
                "notifications",
                "org_id, id",
                "created_at",
                " AND handed_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM deliveries d \
                 WHERE d.org_id = notifications.org_id AND d.notification_id = notifications.id) \
                 AND NOT EXISTS (SELECT 1 FROM messages m \
                 WHERE m.org_id = notifications.org_id AND m.notification_id = notifications.id)",
            ),
            Purge::SettledMessages => (
                "messages",
                "org_id, notification_id, channel, recipient",
                "updated_at",
                " AND status <> 'pending'",
            ),
            Purge::Sessions => ("sessions", "id_hash", "expires_at", ""),
            Purge::ExpiredTokens => ("access_tokens", "token_hash", "expires_at", ""),
            Purge::RevokedTokens => ("access_tokens", "token_hash", "revoked_at", ""),
            Purge::AuthorizationCodes => ("oauth_codes", "code_hash", "expires_at", ""),
            Purge::RefreshTokens => ("oauth_refresh_tokens", "token_hash", "expires_at", ""),
            Purge::Assertions => ("oauth_assertions", "client_id, jti_hash", "expires_at", ""),
        }
    }

    /// Whether the rows belong to organizations (and are purged one organization at a
    /// time, so each statement names one, as a database sharded by organization
    /// needs) or to the directory of credentials (purged whole).
    pub fn per_organization(self) -> bool {
        matches!(
            self,
            Purge::Requests | Purge::SettledDeliveries | Purge::SettledMessages | Purge::Notifications
        )
    }

    /// One batch: `$1` is `before`, `$2` the limit, `$3` the organization where the
    /// rows have one. The batch is picked oldest first through the index on the age
    /// column, then deleted by primary key.
    fn statement(self) -> String {
        let (table, key, age, also) = self.target();
        let org = if self.per_organization() {
            "org_id = $3 AND "
        } else {
            ""
        };
        format!(
            "DELETE FROM {table} WHERE {org}({key}) IN \
             (SELECT {key} FROM {table} WHERE {org}{age} < $1{also} ORDER BY {age} LIMIT $2)"
        )
    }
}

/// Removes up to `limit` rows of `what` older than `before`, of `org` where the kind
/// is per organization; how many.
pub(crate) async fn purge(
    connection: &mut AnyConnection,
    what: Purge,
    org: Option<&str>,
    before: i64,
    limit: u32,
) -> Result<u64> {
    if what.per_organization() != org.is_some() {
        return Err(Error::Misuse(format!(
            "{} are purged {}",
            what.name(),
            if what.per_organization() {
                "one organization at a time"
            } else {
                "across organizations"
            }
        )));
    }
    let statement = what.statement();
    let mut query = sqlx::query(&statement).bind(before).bind(i64::from(limit));
    if let Some(org) = org {
        query = query.bind(org);
    }
    let done = query.execute(connection).await?;
    Ok(done.rows_affected())
}
