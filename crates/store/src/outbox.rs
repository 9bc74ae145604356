//! Webhook endpoints, the notification outbox and its deliveries.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::model::{AttemptResult, Delivery, DeliveryRecord, NewNotification, Webhook};
use crate::runs::Query;
use crate::{Error, Result};

pub(crate) async fn add_webhook(connection: &mut AnyConnection, org: &str, webhook: &Webhook) -> Result<()> {
    sqlx::query("INSERT INTO webhooks (org_id, id, url, secret, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(org)
        .bind(&webhook.id)
        .bind(&webhook.url)
        .bind(&webhook.secret)
        .bind(webhook.created_at)
        .execute(connection)
        .await?;
    Ok(())
}

/// Removes an endpoint; its pending deliveries are given up.
pub(crate) async fn set_webhook_secret(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    secret: &str,
) -> Result<()> {
    sqlx::query("UPDATE webhooks SET secret = $3 WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .bind(secret)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn remove_webhook(connection: &mut AnyConnection, org: &str, id: &str, now: i64) -> Result<bool> {
    let removed = sqlx::query("DELETE FROM webhooks WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .execute(&mut *connection)
        .await?;
    sqlx::query(
        "UPDATE deliveries SET status = 'failed', last_error = 'endpoint removed', updated_at = $3 \
         WHERE org_id = $1 AND webhook_id = $2 AND status = 'pending'",
    )
    .bind(org)
    .bind(id)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(removed.rows_affected() == 1)
}

pub(crate) async fn redeliver(
    connection: &mut AnyConnection,
    org: &str,
    notification_id: &str,
    webhook_id: &str,
    now: i64,
) -> Result<bool> {
    // A delivery that had used up its attempts gets one more: the loop gives up again
    // if that one fails too.
    let done = sqlx::query(
        "UPDATE deliveries SET status = 'pending', next_at = $4, updated_at = $4 \
         WHERE org_id = $1 AND notification_id = $2 AND webhook_id = $3 \
         AND EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = $1 AND w.id = $3)",
    )
    .bind(org)
    .bind(notification_id)
    .bind(webhook_id)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub(crate) async fn webhooks(connection: &mut AnyConnection, org: &str) -> Result<Vec<Webhook>> {
    let rows =
        sqlx::query("SELECT id, url, secret, created_at FROM webhooks WHERE org_id = $1 ORDER BY created_at, id")
            .bind(org)
            .fetch_all(connection)
            .await?;
    rows.iter()
        .map(|row| {
            Ok(Webhook {
                id: row.try_get("id")?,
                url: row.try_get("url")?,
                secret: row.try_get("secret")?,
                created_at: row.try_get("created_at")?,
            })
        })
        .collect()
}

/// Puts a notification in the outbox with a pending delivery for each endpoint;
/// returns how many deliveries.
pub(crate) const NOTIFICATION_INSERT: &str =
    "INSERT INTO notifications (org_id, id, run_id, event, body, created_at, trace_parent)";

pub(crate) const DELIVERY_INSERT: &str =
    "INSERT INTO deliveries (org_id, notification_id, webhook_id, status, attempts, next_at, updated_at)";

pub(crate) async fn add_notification(
    connection: &mut AnyConnection,
    org: &str,
    notification: &NewNotification<'_>,
) -> Result<u64> {
    execute_notification(
        connection,
        &format!("{NOTIFICATION_INSERT} VALUES ($1, $2, $3, $4, $5, $6, $7)"),
        org,
        notification,
    )
    .await?;
    let deliveries = sqlx::query(&format!(
        "{DELIVERY_INSERT} SELECT org_id, $2, id, 'pending', 0, $3, $3 FROM webhooks WHERE org_id = $1"
    ))
    .bind(org)
    .bind(notification.id)
    .bind(notification.created_at)
    .execute(connection)
    .await?;
    Ok(deliveries.rows_affected())
}

/// Runs `sql` with `$1`–`$7` = the notification's organization, id, run, event, body,
/// time and trace context; returns the rows it affected.
async fn execute_notification(
    connection: &mut AnyConnection,
    sql: &str,
    org: &str,
    notification: &NewNotification<'_>,
) -> Result<u64> {
    let done = sqlx::query(sql)
        .bind(org)
        .bind(notification.id)
        .bind(notification.run_id)
        .bind(notification.event)
        .bind(notification.body)
        .bind(notification.created_at)
        .bind(notification.trace_parent)
        .execute(connection)
        .await?;
    Ok(done.rows_affected())
}

/// The organizations with deliveries due at `now`, the one whose oldest due delivery
/// has waited longest first, at most `limit`: what a pass shares between
/// organizations, each then taken by [`take_deliveries`] on its own.
pub(crate) async fn due_delivery_organizations(
    connection: &mut AnyConnection,
    now: i64,
    limit: u32,
) -> Result<Vec<String>> {
    let sweep = "/* all organizations: the delivery loop finds which organizations have deliveries due */ \
                 SELECT org_id FROM deliveries WHERE status = 'pending' AND next_at <= $1 \
                 GROUP BY org_id ORDER BY MIN(next_at), org_id LIMIT $2";
    due_organizations(connection, sweep, now, limit).await
}

/// The organizations a `sweep` (a statement over all organizations, binding `now` and
/// `limit`) names, in its order.
pub(crate) async fn due_organizations(
    connection: &mut AnyConnection,
    sweep: &'static str,
    now: i64,
    limit: u32,
) -> Result<Vec<String>> {
    let rows = sqlx::query(sweep)
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(connection)
        .await?;
    rows.iter().map(|row| Ok(row.try_get("org_id")?)).collect()
}

/// Takes up to `limit` of `org`'s pending deliveries due at `now`, oldest first, for
/// an attempt: each counts one more attempt and is hidden from other loops until
/// `hold_until`, so a loop that dies mid-attempt delays a delivery and never loses it.
/// Every statement names the one organization (as a database sharded by
/// organization needs: a locking read across shards is not possible).
pub(crate) async fn take_deliveries(
    connection: &mut AnyConnection,
    org: &str,
    now: i64,
    hold_until: i64,
    limit: u32,
) -> Result<Vec<Delivery>> {
    let due = sqlx::query(
        "SELECT notification_id, webhook_id FROM deliveries \
         WHERE org_id = $1 AND status = 'pending' AND next_at <= $2 ORDER BY next_at LIMIT $3",
    )
    .bind(org)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(&mut *connection)
    .await?;
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let keys = due
        .iter()
        .map(|row| Ok((row.try_get("notification_id")?, row.try_get("webhook_id")?)))
        .collect::<Result<Vec<(String, String)>>>()?;
    take_of_organization(connection, org, &keys, now, hold_until).await
}

/// Takes those of `keys` still pending and due (another loop may have taken some
/// since they were found: the conditions are checked again on the row, under its
/// lock), and reads what their attempts need.
async fn take_of_organization(
    connection: &mut AnyConnection,
    org: &str,
    keys: &[(String, String)],
    now: i64,
    hold_until: i64,
) -> Result<Vec<Delivery>> {
    let mut take = Query::new("");
    let org_bind = take.text(org);
    let now_bind = take.int(now);
    let hold_bind = take.int(hold_until);
    let listed = key_rows(&mut take, keys);
    take.push(&format!(
        "UPDATE deliveries SET next_at = {hold_bind}, attempts = attempts + 1, updated_at = {now_bind} \
         WHERE org_id = {org_bind} AND status = 'pending' AND next_at <= {now_bind} \
         AND (notification_id, webhook_id) IN ({listed}) RETURNING notification_id, webhook_id"
    ));
    let rows = take.fetch(&mut *connection).await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let taken = rows
        .iter()
        .map(|row| Ok((row.try_get("notification_id")?, row.try_get("webhook_id")?)))
        .collect::<Result<Vec<(String, String)>>>()?;
    let mut read = Query::new("");
    let org_bind = read.text(org);
    let listed = key_rows(&mut read, &taken);
    read.push(&format!(
        "SELECT d.org_id, d.notification_id, d.webhook_id, d.attempts, w.url, w.secret, n.body, n.trace_parent \
         FROM deliveries d \
         JOIN notifications n ON n.org_id = d.org_id AND n.id = d.notification_id \
         JOIN webhooks w ON w.org_id = d.org_id AND w.id = d.webhook_id \
         WHERE d.org_id = {org_bind} AND (d.notification_id, d.webhook_id) IN ({listed})"
    ));
    read.fetch(connection).await?.iter().map(delivery).collect()
}

/// `($n, $m), …` for (notification, webhook) pairs.
fn key_rows(query: &mut Query, keys: &[(String, String)]) -> String {
    query.text_rows(
        keys.iter()
            .map(|(notification, webhook)| [notification.as_str(), webhook.as_str()]),
    )
}

fn delivery(row: &AnyRow) -> Result<Delivery> {
    Ok(Delivery {
        org: row.try_get("org_id")?,
        notification_id: row.try_get("notification_id")?,
        webhook_id: row.try_get("webhook_id")?,
        url: row.try_get("url")?,
        secret: row.try_get("secret")?,
        body: row.try_get("body")?,
        attempts: count(row.try_get("attempts")?)?,
        trace_parent: row.try_get("trace_parent")?,
    })
}

fn count(value: i64) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::Corrupt(format!("attempt count {value}")))
}

/// Records how an attempt ended.
pub(crate) async fn record_attempt(
    connection: &mut AnyConnection,
    delivery: &Delivery,
    result: &AttemptResult,
) -> Result<()> {
    sqlx::query(
        "UPDATE deliveries SET status = $4, next_at = $5, last_status_code = $6, last_error = $7, updated_at = $8 \
         WHERE org_id = $1 AND notification_id = $2 AND webhook_id = $3",
    )
    .bind(&delivery.org)
    .bind(&delivery.notification_id)
    .bind(&delivery.webhook_id)
    .bind(result.status.as_str())
    .bind(result.next_at)
    .bind(result.status_code.map(i64::from))
    .bind(result.error.as_deref())
    .bind(result.at)
    .execute(connection)
    .await?;
    Ok(())
}

/// The organization's latest deliveries, newest first.
pub(crate) async fn deliveries(connection: &mut AnyConnection, org: &str, limit: u32) -> Result<Vec<DeliveryRecord>> {
    let rows = sqlx::query(
        "SELECT d.notification_id, n.event, n.run_id, d.webhook_id, d.status, d.attempts, \
         d.last_status_code, d.last_error, n.created_at, d.updated_at \
         FROM deliveries d JOIN notifications n ON n.org_id = d.org_id AND n.id = d.notification_id \
         WHERE d.org_id = $1 ORDER BY n.created_at DESC, d.notification_id DESC, d.webhook_id LIMIT $2",
    )
    .bind(org)
    .bind(i64::from(limit))
    .fetch_all(connection)
    .await?;
    rows.iter()
        .map(|row| {
            let code: Option<i64> = row.try_get("last_status_code")?;
            let status: String = row.try_get("status")?;
            Ok(DeliveryRecord {
                notification_id: row.try_get("notification_id")?,
                event: row.try_get("event")?,
                run_id: row.try_get("run_id")?,
                webhook_id: row.try_get("webhook_id")?,
                status: DeliveryRecord::status_from(&status)?,
                attempts: count(row.try_get("attempts")?)?,
                last_status_code: code.and_then(|code| u16::try_from(code).ok()),
                last_error: row.try_get("last_error")?,
                created_at: row.try_get("created_at")?,
                updated_at: row.try_get("updated_at")?,
            })
        })
        .collect()
}
