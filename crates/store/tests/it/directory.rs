//! Organizations' people, logins, sessions, tokens and the audit log.

use agentprocess_store::{
    Audience, AuditFilter, AuditRow, Directory as _, DirectoryTx as _, Domain, Provider, Role, SessionRow, Store,
    StoreTx as _,
};

use crate::support::{TestDb, mcp_token, on_both, person};

async fn org_with_ann(db: &TestDb) {
    let mut tx = db.store.begin().await.expect("begin");
    tx.create_org("o", "acme", "Acme", 1).await.expect("org");
    tx.create_group("o", "finance", 1).await.expect("group");
    tx.create_identity(&person("o", "ann", Role::Admin, &["finance"]), 1)
        .await
        .expect("ann");
    tx.commit().await.expect("commit");
}

on_both!(tokens_stop_at_expiry_revocation_deactivation_and_audience, tokens);
async fn tokens(db: &TestDb) {
    org_with_ann(db).await;
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    tx.add_token(&mcp_token("o", "ann", "live")).await.expect("token");
    tx.add_token(&agentprocess_store::TokenRow {
        expires_at: Some(100),
        ..mcp_token("o", "ann", "expiring")
    })
    .await
    .expect("token");
    tx.add_token(&agentprocess_store::TokenRow {
        audience: Audience::Api,
        scope: Some("read".to_owned()),
        ..mcp_token("o", "ann", "rest")
    })
    .await
    .expect("token");
    tx.commit().await.expect("commit");
    assert!(store.identity_by_token("live", 50).await.expect("read").is_some());
    assert!(store.identity_by_token("expiring", 99).await.expect("read").is_some());
    assert_eq!(
        store.identity_by_token("expiring", 100).await.expect("read"),
        None,
        "expired"
    );
    assert_eq!(
        store.identity_by_token("rest", 50).await.expect("read"),
        None,
        "another surface's token"
    );
    let rest = store.token_by_hash("rest").await.expect("read").expect("row");
    assert_eq!((rest.audience, rest.scope.as_deref()), (Audience::Api, Some("read")));
    assert_eq!(store.tokens("o", Audience::Api).await.expect("list").len(), 1);

    let mut tx = store.begin().await.expect("begin");
    assert!(tx.revoke_token("o", "tok-rest", 60).await.expect("revoke"));
    assert!(!tx.revoke_token("o", "tok-rest", 61).await.expect("revoke twice"));
    assert!(!tx.revoke_token("other", "tok-live", 61).await.expect("another org's"));
    tx.set_person("o", "ann", Some(Role::Admin), Some(70))
        .await
        .expect("deactivate");
    tx.commit().await.expect("commit");
    assert_eq!(
        store.identity_by_token("live", 80).await.expect("read"),
        None,
        "deactivated"
    );
    assert!(
        store
            .token_by_hash("rest")
            .await
            .expect("read")
            .expect("row")
            .revoked_at
            .is_some()
    );
}

on_both!(logins_domains_providers_and_admins, logins);
async fn logins(db: &TestDb) {
    org_with_ann(db).await;
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    assert_eq!(tx.lock_org("o").await.expect("lock"), Some(1));
    assert_eq!(tx.lock_org("nobody").await.expect("lock"), None);
    tx.add_login("o", "https://idp", "sub-1", "ann", 2)
        .await
        .expect("login");
    tx.put_provider(
        &Provider {
            org: "o".to_owned(),
            issuer: "https://idp".to_owned(),
            client_id: "c".to_owned(),
            sealed_secret: Some("v1.x.y".to_owned()),
        },
        2,
    )
    .await
    .expect("provider");
    let domain = |verified_at| Domain {
        domain: "acme.com".to_owned(),
        token: "t".to_owned(),
        verified_at,
    };
    tx.put_domain("o", &domain(None), 2).await.expect("domain");
    assert_eq!(tx.active_admins("o").await.expect("admins"), 1);
    tx.commit().await.expect("commit");
    assert_eq!(
        store
            .login("o", "https://idp", "sub-1")
            .await
            .expect("login")
            .map(|i| i.id)
            .as_deref(),
        Some("ann")
    );
    assert_eq!(
        store.login("o", "https://other", "sub-1").await.expect("login"),
        None,
        "keyed on the issuer too"
    );
    assert_eq!(
        store.org_of_verified_domain("acme.com").await.expect("read"),
        None,
        "not verified yet"
    );
    assert_eq!(
        store
            .organization_by_slug("acme")
            .await
            .expect("slug")
            .map(|o| o.id)
            .as_deref(),
        Some("o")
    );

    let mut tx = store.begin().await.expect("begin");
    tx.put_domain("o", &domain(Some(5)), 5).await.expect("verify");
    tx.create_org("p", "beta", "Beta", 5).await.expect("org");
    tx.commit().await.expect("commit");
    assert_eq!(
        store.org_of_verified_domain("acme.com").await.expect("read").as_deref(),
        Some("o")
    );
    // A verified domain belongs to one organization at a time.
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.put_domain("p", &domain(Some(6)), 6).await.is_err());
    drop(tx);
    let mut tx = store.begin().await.expect("begin");
    assert!(
        tx.create_org("q", "acme", "Acme again", 6).await.is_err(),
        "slugs are unique"
    );
}

on_both!(sessions_are_kept_by_hash_and_end, sessions);
async fn sessions(db: &TestDb) {
    org_with_ann(db).await;
    let store = &db.store;
    let row = |hash: &str, signed_in: Option<(&str, &str)>| SessionRow {
        id_hash: hash.to_owned(),
        signed_in: signed_in.map(|(org, id)| (org.to_owned(), id.to_owned())),
        data: "{}".to_owned(),
        expires_at: 1_000,
    };
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.put_session(&row("a", None), true).await.expect("new"));
    assert!(!tx.put_session(&row("a", None), true).await.expect("taken"));
    assert!(
        tx.put_session(&row("a", Some(("o", "ann"))), false)
            .await
            .expect("update")
    );
    assert!(
        tx.put_session(&row("b", Some(("o", "ann"))), true)
            .await
            .expect("second")
    );
    tx.commit().await.expect("commit");
    assert_eq!(
        store.session("a", 999).await.expect("read").and_then(|s| s.signed_in),
        Some(("o".to_owned(), "ann".to_owned()))
    );
    assert_eq!(store.session("a", 1_000).await.expect("read"), None, "expired");
    let mut tx = store.begin().await.expect("begin");
    assert_eq!(tx.delete_sessions_of("o", "ann").await.expect("delete"), 2);
    tx.commit().await.expect("commit");
    assert_eq!(store.session("b", 10).await.expect("read"), None);
}

on_both!(the_audit_log_filters_and_pages_in_order, audit);
async fn audit(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    for (index, (actor, kind)) in [
        ("ann", "member.invited"),
        ("bob", "signin.failed"),
        ("ann", "token.created"),
    ]
    .into_iter()
    .enumerate()
    {
        let at = 10 * (index as i64 + 1);
        tx.append_audit(
            "o",
            &AuditRow {
                id: format!("{at:015}-x"),
                at,
                actor: actor.to_owned(),
                kind: kind.to_owned(),
                target: (actor == "ann").then(|| format!("r_{index}")),
                detail: "{}".to_owned(),
                address: Some("127.0.0.1".to_owned()),
            },
        )
        .await
        .expect("append");
    }
    tx.commit().await.expect("commit");
    let read = |filter: AuditFilter| async move { store.audit("o", &filter).await.expect("audit") };
    let (all, more) = read(AuditFilter {
        limit: 10,
        ..AuditFilter::default()
    })
    .await;
    assert_eq!((all.len(), more), (3, false));
    let (page, more) = read(AuditFilter {
        limit: 2,
        ..AuditFilter::default()
    })
    .await;
    assert_eq!((page.len(), more), (2, true));
    let (rest, _) = read(AuditFilter {
        limit: 2,
        after: Some(page[1].id.clone()),
        ..AuditFilter::default()
    })
    .await;
    assert_eq!(
        rest.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        ["token.created"]
    );
    let (ann, _) = read(AuditFilter {
        limit: 10,
        actor: Some("ann".to_owned()),
        since: Some(15),
        ..AuditFilter::default()
    })
    .await;
    assert_eq!(ann.iter().map(|e| e.at).collect::<Vec<_>>(), [30]);
    let (failed, _) = read(AuditFilter {
        limit: 10,
        kind: Some("signin.failed".to_owned()),
        until: Some(30),
        ..AuditFilter::default()
    })
    .await;
    assert_eq!(failed.len(), 1);
    let (about, _) = read(AuditFilter {
        limit: 10,
        target: Some("r_2".to_owned()),
        ..AuditFilter::default()
    })
    .await;
    assert_eq!(
        about.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        ["token.created"]
    );
    assert!(
        store
            .audit(
                "other",
                &AuditFilter {
                    limit: 10,
                    ..AuditFilter::default()
                }
            )
            .await
            .expect("audit")
            .0
            .is_empty()
    );
}

/// The audit log is append-only: no statement of the server changes or removes an
/// entry.
#[test]
fn nothing_updates_or_deletes_the_audit_log() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut offenders = Vec::new();
    let mut folders = vec![root.join("crates"), root.join("services"), root.join("migrations")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("target") {
                    folders.push(path);
                }
                continue;
            }
            if !matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "sql"))
                || path.ends_with("directory.rs") && path.to_string_lossy().contains("tests")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default().to_ascii_uppercase();
            let squeezed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if squeezed.contains("UPDATE AUDIT_LOG")
                || squeezed.contains("DELETE FROM AUDIT_LOG")
                || squeezed.contains("TRUNCATE AUDIT_LOG")
            {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(offenders.is_empty(), "the audit log is changed in {offenders:?}");
}
