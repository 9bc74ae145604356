//! Sharing the sends of a pass between organizations: the loops ask which
//! organizations have work due (each named once, the longest waiting first), then take
//! a bounded share of each one's oldest due rows, so one organization's backlog never
//! fills a pass and hides another's newer work.

use agentprocess_store::{Channel, Messages as _, NewMessage, NewNotification, Store as _, StoreTx as _, Webhook};

use crate::support::{TestDb, on_both};

/// A busy organization's backlog: this many rows due before the quiet one's.
const BACKLOG: usize = 40;

/// Notification `id`, made at `at`.
fn notification(id: &str, at: i64) -> NewNotification<'_> {
    NewNotification {
        id,
        run_id: "r",
        event: "work_item.created",
        body: "{}",
        created_at: at,
        trace_parent: None,
    }
}

/// The busy organization's notifications at 10, 11, …; the quiet one's at 100.
fn backlog() -> Vec<(String, &'static str, i64)> {
    let mut all: Vec<(String, &'static str, i64)> = (0..BACKLOG)
        .map(|index| (format!("b{index:02}"), "busy", 10 + index as i64))
        .collect();
    all.push(("q00".to_owned(), "quiet", 100));
    all
}

on_both!(
    a_busy_organizations_backlog_leaves_room_for_another_organizations_message,
    fair_messages
);
async fn fair_messages(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    for (id, org, at) in &backlog() {
        tx.add_notification(org, &notification(id, *at)).await.expect("notify");
    }
    tx.commit().await.expect("commit");
    for (id, org, at) in &backlog() {
        let message = NewMessage {
            channel: Channel::Chat,
            recipient: "people".to_owned(),
            kind: "waiting".to_owned(),
            digest: false,
            next_at: *at,
        };
        store.hand_over(org, id, &[message], *at).await.expect("hand over");
    }

    // Each organization with messages due is named once, the longest waiting first,
    // however many each has; the sweep is bounded.
    let due = store.due_message_organizations(200, 10).await.expect("due");
    assert_eq!(due, ["busy", "quiet"]);
    assert_eq!(store.due_message_organizations(200, 1).await.expect("due"), ["busy"]);
    assert!(
        store.due_message_organizations(5, 10).await.expect("due").is_empty(),
        "nothing due yet"
    );

    // A take names one organization and takes at most its share, oldest first.
    let busy = store.take_messages("busy", 200, 1_000, 4).await.expect("take");
    let ids: Vec<&str> = busy.iter().map(|m| m.notification_id.as_str()).collect();
    assert_eq!(ids, ["b00", "b01", "b02", "b03"]);
    assert!(busy.iter().all(|m| m.org == "busy" && m.attempts == 1));
    let quiet = store.take_messages("quiet", 200, 1_000, 4).await.expect("take");
    let ids: Vec<(&str, &str)> = quiet
        .iter()
        .map(|m| (m.org.as_str(), m.notification_id.as_str()))
        .collect();
    assert_eq!(
        ids,
        [("quiet", "q00")],
        "the quiet organization's message, in the same pass"
    );

    // What was taken is held: the next pass, while those sends are under way, takes
    // the busy organization's next share and never one taken before.
    assert_eq!(store.due_message_organizations(300, 10).await.expect("due"), ["busy"]);
    let next = store.take_messages("busy", 300, 1_000, 4).await.expect("take");
    let ids: Vec<&str> = next.iter().map(|m| m.notification_id.as_str()).collect();
    assert_eq!(ids, ["b04", "b05", "b06", "b07"]);
    assert!(
        store
            .take_messages("quiet", 300, 1_000, 4)
            .await
            .expect("take")
            .is_empty()
    );
}

on_both!(
    a_busy_organizations_backlog_leaves_room_for_another_organizations_delivery,
    fair_deliveries
);
async fn fair_deliveries(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    for org in ["busy", "quiet"] {
        let webhook = Webhook {
            id: "wh".to_owned(),
            url: format!("https://{org}.example/hook"),
            secret: "whsec_a2V5".to_owned(),
            created_at: 1,
        };
        tx.add_webhook(org, &webhook).await.expect("webhook");
    }
    for (id, org, at) in &backlog() {
        tx.add_notification(org, &notification(id, *at)).await.expect("notify");
    }
    tx.commit().await.expect("commit");

    let due = store.due_delivery_organizations(200, 10).await.expect("due");
    assert_eq!(due, ["busy", "quiet"]);
    assert_eq!(store.due_delivery_organizations(200, 1).await.expect("due"), ["busy"]);

    let busy = store.take_deliveries("busy", 200, 1_000, 4).await.expect("take");
    let mut ids: Vec<&str> = busy.iter().map(|d| d.notification_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["b00", "b01", "b02", "b03"], "the oldest four");
    assert!(
        busy.iter()
            .all(|d| d.org == "busy" && d.url == "https://busy.example/hook")
    );
    let quiet = store.take_deliveries("quiet", 200, 1_000, 4).await.expect("take");
    let ids: Vec<(&str, &str)> = quiet
        .iter()
        .map(|d| (d.org.as_str(), d.notification_id.as_str()))
        .collect();
    assert_eq!(ids, [("quiet", "q00")]);

    assert_eq!(store.due_delivery_organizations(300, 10).await.expect("due"), ["busy"]);
    let next = store.take_deliveries("busy", 300, 1_000, 4).await.expect("take");
    let mut ids: Vec<&str> = next.iter().map(|d| d.notification_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["b04", "b05", "b06", "b07"], "never one taken before");
}
