//! What only the platform grants (an organization, limits in place of the defaults,
//! resealing, a person's static token) answers the command line alone: an
//! organization's admin, by session or by API token, is refused and changes nothing,
//! while `agentprocess-admin` is served and recorded.

use std::sync::Arc;

use agentprocess_auth::tokens::Scope;
use agentprocess_auth::{Acting, Role, Via};
use agentprocess_operations::{Error, Operations};
use agentprocess_service::LimitValues;
use agentprocess_store::{AuditFilter, Directory as _, Limits as _};

use crate::harness::{TestApp, on_both};

fn refusal(result: Result<impl std::fmt::Debug, Error>) -> String {
    match result {
        Err(Error::Auth(agentprocess_auth::Error::Refused(refused))) => {
            format!("{}: {}", refused.code.as_str(), refused.message)
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// The organization's audit log, newest first.
async fn audit_log(store: &agentprocess_store::SqlStore, org: &str) -> Vec<agentprocess_store::AuditRow> {
    let filter = AuditFilter {
        limit: 200,
        ..AuditFilter::default()
    };
    store.audit(org, &filter).await.expect("log").0
}

on_both!(only_the_command_line_reaches_what_the_platform_grants, platform_only);
async fn platform_only(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("bob", Role::Member, &[])
        .await;
    let operations = Operations::new(Arc::clone(&app.auth), Arc::clone(&app.service));
    let ann = app.auth.member("acme", "ann").await.expect("ann");
    let more = LimitValues {
        open_runs: Some(1_000_000),
        ..LimitValues::default()
    };
    let forbidden = "forbidden: only the platform's operators do this, with `agentprocess admin`";
    for via in [Via::Session, Via::Token(Scope::Admin)] {
        let admin = Acting {
            identity: ann.clone(),
            via,
            address: Some("192.0.2.1".to_owned()),
        };
        assert_eq!(refusal(operations.grant_limits(&admin, &more, false).await), forbidden);
        assert_eq!(refusal(operations.reseal(&admin).await), forbidden);
        assert_eq!(refusal(operations.issue_token(&admin, "bob").await), forbidden);
        let elsewhere = admin.in_org("globex");
        assert_eq!(
            refusal(operations.create_organization(&elsewhere, "Globex").await),
            forbidden
        );
    }
    let store = app.service.store();
    assert_eq!(
        store.org_limits("acme").await.expect("limits").granted,
        LimitValues::default()
    );
    assert!(store.organization("globex").await.expect("read").is_none());
    let entries = audit_log(store, "acme").await;
    assert!(entries.is_empty(), "{entries:?}");

    let platform = Acting::command_line("acme");
    let granted = operations.grant_limits(&platform, &more, false).await.expect("granted");
    assert_eq!(granted.granted.open_runs, Some(1_000_000));
    let entries = audit_log(store, "acme").await;
    let entries: Vec<(&str, &str, Option<&str>)> = entries
        .iter()
        .map(|entry| (entry.actor.as_str(), entry.kind.as_str(), entry.target.as_deref()))
        .collect();
    assert_eq!(entries, [("agentprocess-admin", "limits.granted", Some("acme"))]);
    app
}
