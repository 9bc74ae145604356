//! Rotating the key that seals secrets at rest: an identity provider's client secret
//! sealed with the old key is sealed again with the new one, and then opens without
//! the old key.

use agentprocess_auth::SecretKey;
use agentprocess_store::{Directory as _, DirectoryTx as _, Provider, Store as _, StoreTx as _};

use crate::harness::{AUTH_KEY, PUBLIC_URL, TestApp, auth_over, on_both};

/// Where an organization's client secret is sealed (as the sign-in settings seal it).
fn context(org: &str) -> String {
    format!("idp-secret:{org}")
}

on_both!(a_provider_secret_is_resealed_with_the_new_key, provider_resealed);
async fn provider_resealed(app: TestApp) -> TestApp {
    let app = app.with_org("acme").await;
    let store = app.service.store().clone();
    let old = SecretKey::new(&AUTH_KEY).expect("the old key");
    let new = || SecretKey::new(&[8; 32]).expect("the new key");
    let mut tx = store.begin().await.expect("tx");
    let provider = Provider {
        org: app.org.clone(),
        issuer: "https://idp.example.com".to_owned(),
        client_id: "agentprocess".to_owned(),
        sealed_secret: Some(old.seal("client-secret", &context(&app.org))),
    };
    tx.put_provider(&provider, 0).await.expect("provider");
    tx.commit().await.expect("commit");
    let kept = || async {
        store
            .provider(&app.org)
            .await
            .expect("read")
            .expect("a provider")
            .sealed_secret
    };

    // The new key alone cannot open it, and changes nothing.
    let stranger = auth_over(store.clone(), PUBLIC_URL, new());
    assert!(
        stranger
            .reseal_provider(&app.org, jiff::Timestamp::now())
            .await
            .is_err()
    );
    assert_eq!(kept().await, provider.sealed_secret);

    let rotated = auth_over(store.clone(), PUBLIC_URL, new().with_previous([old.clone()]));
    assert!(
        rotated
            .reseal_provider(&app.org, jiff::Timestamp::now())
            .await
            .expect("resealed")
    );
    let resealed = kept().await.expect("still a secret");
    assert_ne!(Some(&resealed), provider.sealed_secret.as_ref());
    assert_eq!(
        new().open(&resealed, &context(&app.org)).as_deref(),
        Ok("client-secret"),
        "opens without the old key"
    );
    assert!(
        old.open(&resealed, &context(&app.org)).is_err(),
        "the old key no longer opens it"
    );
    assert!(
        !rotated
            .reseal_provider(&app.org, jiff::Timestamp::now())
            .await
            .expect("nothing to do"),
        "sealed with the current key already"
    );
    app
}
