//! Messages to people: a notification is handed over once, with its messages; due
//! messages are taken once (a recipient's digest whole) and hidden while sent; a sent
//! overdue message comes back as a reminder; what people chose is kept per identity.

use agentprocess_store::{
    Channel, MessageOutcome, Messages as _, MessagesTx as _, NewMessage, Store as _, StoreTx as _,
};

use crate::support::{TestDb, on_both, seed};

const ROWS: &str = "
INSERT INTO organizations (id, name, created_at) VALUES ('o', 'O', 1), ('p', 'P', 1);
INSERT INTO notifications (org_id, id, run_id, event, body, created_at) VALUES
  ('o', 'n1', 'r1', 'work_item.created', '{\"step\": \"s\"}', 10),
  ('o', 'n2', 'r1', 'step.overdue', '{}', 20),
  ('p', 'n3', 'r2', 'run.ended', '{}', 30);
";

fn email(recipient: &str, kind: &str, digest: bool, next_at: i64) -> NewMessage {
    NewMessage {
        channel: Channel::Email,
        recipient: recipient.to_owned(),
        kind: kind.to_owned(),
        digest,
        next_at,
    }
}

on_both!(
    a_notification_is_handed_over_once_and_its_messages_taken_once,
    handed_and_taken
);
async fn handed_and_taken(db: &TestDb) {
    seed(db, ROWS).await;
    let store = &db.store;
    let unhanded = store.unhanded(10).await.expect("unhanded");
    let ids: Vec<&str> = unhanded.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["n1", "n2", "n3"], "oldest first, across organizations");
    assert_eq!(unhanded[0].body, r#"{"step": "s"}"#);

    let messages = [
        email("ann", "waiting", false, 100),
        email("bea", "waiting", true, 500),
        NewMessage {
            channel: Channel::Chat,
            recipient: "finance".to_owned(),
            kind: "waiting".to_owned(),
            digest: false,
            next_at: 100,
        },
    ];
    store.hand_over("o", "n1", &messages, 50).await.expect("hand over");
    // A second loop handing the same notification over adds nothing.
    store
        .hand_over("o", "n1", &[email("cid", "waiting", false, 100)], 60)
        .await
        .expect("hand over again");
    store
        .hand_over("o", "n2", &[email("bea", "overdue", true, 500)], 60)
        .await
        .expect("hand over");
    let left: Vec<String> = store
        .unhanded(10)
        .await
        .expect("unhanded")
        .into_iter()
        .map(|n| n.id)
        .collect();
    assert_eq!(left, ["n3"]);

    // At 100 the two immediate messages are due; bea's digest waits for 500.
    let taken = store.take_messages("o", 100, 1000, 10).await.expect("take");
    let mut keys: Vec<(&str, Channel)> = taken.iter().map(|m| (m.recipient.as_str(), m.channel)).collect();
    keys.sort();
    assert_eq!(keys, [("ann", Channel::Email), ("finance", Channel::Chat)]);
    assert!(taken.iter().all(|m| m.attempts == 1 && m.sent == 0 && m.run_id == "r1"));
    // Held until 1000: taken by no other loop meanwhile.
    assert!(store.take_messages("o", 200, 1000, 10).await.expect("take").is_empty());

    // One limit's worth finds one digest message; the rest of the digest comes with it.
    let digest = store.take_messages("o", 500, 2000, 1).await.expect("take");
    let notifications: Vec<&str> = digest.iter().map(|m| m.notification_id.as_str()).collect();
    assert_eq!(notifications, ["n1", "n2"], "bea's whole digest, oldest first");
    assert!(digest.iter().all(|m| m.digest && m.recipient == "bea"));

    // Sent, and sent again later (a reminder); a failure retried; one dropped.
    let ann = taken.iter().find(|m| m.recipient == "ann").expect("ann's");
    let chat = taken.iter().find(|m| m.channel == Channel::Chat).expect("the chat's");
    store
        .settle_message(ann, &MessageOutcome::Sent { again_at: Some(3000) }, 110)
        .await
        .expect("settle");
    store
        .settle_message(
            chat,
            &MessageOutcome::Retry {
                at: 150,
                error: "the hook answered 500".to_owned(),
            },
            110,
        )
        .await
        .expect("settle");
    for message in &digest {
        let outcome = MessageOutcome::Dropped {
            reason: "the work item was decided".to_owned(),
        };
        store.settle_message(message, &outcome, 510).await.expect("settle");
    }
    let again = store.take_messages("o", 3000, 4000, 10).await.expect("take");
    let mut keys: Vec<(&str, u32, u32)> = again
        .iter()
        .map(|m| (m.recipient.as_str(), m.sent, m.attempts))
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [("ann", 1, 1), ("finance", 0, 2)],
        "the reminder counts its sending"
    );

    let listed = store.messages("o", 10).await.expect("messages");
    assert_eq!(listed.len(), 4);
    let dropped: Vec<&str> = listed
        .iter()
        .filter(|m| m.status == "dropped")
        .filter_map(|m| m.last_error.as_deref())
        .collect();
    assert_eq!(dropped, ["the work item was decided"; 2]);
    assert!(store.messages("p", 10).await.expect("messages").is_empty());
}

on_both!(choices_and_chat_hooks_are_kept_per_organization, choices_and_hooks);
async fn choices_and_hooks(db: &TestDb) {
    seed(db, ROWS).await;
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    tx.put_message_choices("o", "", r#"{"defaults": {}}"#, 1)
        .await
        .expect("put");
    tx.put_message_choices("o", "ann", r#"{"waiting": "off"}"#, 1)
        .await
        .expect("put");
    tx.put_message_choices("o", "ann", r#"{"waiting": "daily"}"#, 2)
        .await
        .expect("put");
    tx.put_message_choices("p", "ann", r#"{"ended": "off"}"#, 1)
        .await
        .expect("put");
    let hook = agentprocess_store::ChatHook {
        group: "finance".to_owned(),
        sealed_url: "sealed".to_owned(),
        kind: Some("markdown".to_owned()),
        created_at: 5,
    };
    tx.put_chat_hook("o", &hook).await.expect("hook");
    // A hook set before kinds were told has none.
    let untold = agentprocess_store::ChatHook {
        group: "ops".to_owned(),
        kind: None,
        ..hook.clone()
    };
    tx.put_chat_hook("o", &untold).await.expect("hook");
    tx.commit().await.expect("commit");
    let chosen = store.message_choices("o").await.expect("choices");
    assert_eq!(chosen.len(), 2);
    assert_eq!(chosen["ann"], r#"{"waiting": "daily"}"#, "replaced");
    assert_eq!(store.chat_hooks("o").await.expect("hooks"), [hook, untold]);
    assert!(store.chat_hooks("p").await.expect("hooks").is_empty());

    // Removing a hook drops what it had not yet posted.
    store
        .hand_over(
            "o",
            "n1",
            &[NewMessage {
                channel: Channel::Chat,
                recipient: "finance".to_owned(),
                kind: "waiting".to_owned(),
                digest: false,
                next_at: 100,
            }],
            50,
        )
        .await
        .expect("hand over");
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.remove_chat_hook("o", "finance", 60).await.expect("remove"));
    assert!(!tx.remove_chat_hook("o", "finance", 60).await.expect("remove"));
    tx.commit().await.expect("commit");
    assert!(store.take_messages("o", 100, 1000, 10).await.expect("take").is_empty());
}

/// The migration that stopped keeping the mail server's replies, whose `UPDATE` replaces
/// the replies kept before it.
const MAIL_FAILURES: &str = include_str!("../../../../migrations/20261214000002_chat_kinds_and_mail_failures.sql");

on_both!(a_mail_servers_reply_kept_before_gives_way_to_words, replies_replaced);
async fn replies_replaced(db: &TestDb) {
    seed(db, ROWS).await;
    // As a server before it kept them: the relay's host, address and software.
    seed(
        db,
        "INSERT INTO messages (org_id, notification_id, channel, recipient, kind, status, digest, attempts, sent, \
         next_at, last_error, updated_at) VALUES \
         ('o', 'n1', 'email', 'ann', 'waiting', 'failed', 0, 5, 0, 1, 'the SMTP server did not take it: permanent \
         error (550): 5.1.1 <ann@o.test>: Recipient address rejected: relay-7.internal.example.net (Postfix 3.7.2) \
         10.1.2.3', 1), \
         ('o', 'n1', 'chat', 'finance', 'waiting', 'dropped', 0, 1, 0, 1, 'chat hook removed', 1)",
    )
    .await;
    let update = MAIL_FAILURES
        .split(';')
        .find(|statement| statement.contains("UPDATE messages"))
        .expect("the migration replaces kept replies");
    seed(db, update).await;
    let kept: Vec<Option<String>> = db
        .store
        .messages("o", 10)
        .await
        .expect("messages")
        .into_iter()
        .map(|message| message.last_error)
        .collect();
    assert_eq!(kept.len(), 2);
    assert!(
        kept.contains(&Some("the mail server did not take the message".to_owned())),
        "{kept:?}"
    );
    assert!(
        kept.contains(&Some("chat hook removed".to_owned())),
        "another reason is kept"
    );
    assert!(!format!("{kept:?}").contains("relay-7"), "{kept:?}");
}
