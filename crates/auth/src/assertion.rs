//! JWT client assertions (RFC 7523 §2.2 and §3, `private_key_jwt`): an agent client
//! proves who it is by a JWT signed with a private key whose public half its admin
//! registered. The signature is checked with openidconnect's JWK code (RSA, ECDSA,
//! EdDSA); shared-key algorithms are refused, since the server holds no shared keys.

use base64::Engine as _;
use openidconnect::JsonWebKey as _;
use openidconnect::core::{CoreJsonWebKey, CoreJsonWebKeySet, CoreJwsSigningAlgorithm};
use serde::Deserialize;

/// The `client_assertion_type` of a JWT assertion.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The longest an assertion may live, from now until its `exp`.
const MAX_LIFETIME_SECONDS: i64 = 3600;
/// Clock difference tolerated between the client and the server.
const SKEW_SECONDS: i64 = 60;

/// What an accepted assertion says, for the replay check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `jti`.
    pub jti: String,
    /// `exp`, in milliseconds.
    pub expires_at: i64,
}

#[derive(Debug, Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct Claims {
    iss: Option<String>,
    sub: Option<String>,
    aud: Option<Audience>,
    exp: Option<i64>,
    nbf: Option<i64>,
    iat: Option<i64>,
    jti: Option<String>,
}

/// Every reason a JWK Set cannot be registered for `private_key_jwt` (empty when it can).
pub fn jwks_issues(jwks: &serde_json::Value) -> Vec<String> {
    let set: CoreJsonWebKeySet = match serde_json::from_value(jwks.clone()) {
        Ok(set) => set,
        Err(error) => return vec![format!("jwks: not a JWK Set ({error})")],
    };
    let mut issues = Vec::new();
    if set.keys().is_empty() {
        issues.push("jwks: holds no key".to_owned());
    }
    for (index, key) in jwks["keys"].as_array().into_iter().flatten().enumerate() {
        if key["kty"] == "oct" {
            issues.push(format!(
                "jwks.keys[{index}]: a shared (oct) key is not accepted; register a public key"
            ));
        }
        if key.get("d").is_some() || key.get("p").is_some() {
            issues.push(format!(
                "jwks.keys[{index}]: holds private key material; register the public key only"
            ));
        }
    }
    issues
}

/// Checks `assertion` as `client_id`'s, signed by a key of `jwks`, for one of
/// `audiences` (the issuer, or the token endpoint's URL), at `now` (seconds).
pub fn verify(
    assertion: &str,
    jwks: &str,
    client_id: &str,
    audiences: &[String],
    now: i64,
) -> Result<Accepted, String> {
    let mut parts = assertion.split('.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the client assertion is not a signed JWT (three dot-separated parts)".to_owned());
    };
    let header: Header = decode_part(header, "header")?;
    let claims: Claims = decode_part(payload, "claims")?;
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "the client assertion's signature is not base64url".to_owned())?;
    if header.alg == "none" || header.alg.starts_with("HS") {
        return Err(format!(
            "the client assertion's alg {:?} is not accepted: sign with the private key of a registered public key",
            header.alg
        ));
    }
    let alg: CoreJwsSigningAlgorithm = serde_json::from_value(serde_json::Value::String(header.alg.clone()))
        .map_err(|_| format!("the client assertion's alg {:?} is unknown", header.alg))?;
    let set: CoreJsonWebKeySet =
        serde_json::from_str(jwks).map_err(|_| "the client's registered keys cannot be read".to_owned())?;
    let candidates: Vec<&CoreJsonWebKey> = set
        .keys()
        .iter()
        .filter(|key| {
            header
                .kid
                .as_deref()
                .is_none_or(|kid| key.key_id().is_some_and(|id| id.as_str() == kid))
        })
        .collect();
    let message = assertion
        .rsplit_once('.')
        .map(|(signed, _)| signed)
        .unwrap_or_default()
        .as_bytes();
    if !candidates
        .iter()
        .any(|key| key.verify_signature(&alg, message, &signature).is_ok())
    {
        return Err("the client assertion's signature matches none of the client's registered keys".to_owned());
    }
    let mut issues = Vec::new();
    if claims.iss.as_deref() != Some(client_id) {
        issues.push("iss must be the client_id");
    }
    if claims.sub.as_deref() != Some(client_id) {
        issues.push("sub must be the client_id");
    }
    let audience_ok = match &claims.aud {
        Some(Audience::One(one)) => audiences.contains(one),
        Some(Audience::Many(many)) => many.iter().any(|one| audiences.contains(one)),
        None => false,
    };
    if !audience_ok {
        issues.push("aud must name this authorization server (its issuer or its token endpoint)");
    }
    match claims.exp {
        None => issues.push("exp is required"),
        Some(exp) if exp <= now - SKEW_SECONDS => issues.push("the assertion has expired"),
        Some(exp) if exp > now + MAX_LIFETIME_SECONDS => issues.push("exp is more than an hour away"),
        Some(_) => {}
    }
    if claims.nbf.is_some_and(|nbf| nbf > now + SKEW_SECONDS) {
        issues.push("nbf is in the future");
    }
    if claims.iat.is_some_and(|iat| iat > now + SKEW_SECONDS) {
        issues.push("iat is in the future");
    }
    let jti = claims.jti.filter(|jti| !jti.is_empty());
    if jti.is_none() {
        issues.push("jti is required, so the assertion cannot be replayed");
    }
    if !issues.is_empty() {
        return Err(format!("the client assertion is refused: {}", issues.join("; ")));
    }
    Ok(Accepted {
        jti: jti.unwrap_or_default(),
        expires_at: claims
            .exp
            .unwrap_or(now)
            .saturating_add(SKEW_SECONDS)
            .saturating_mul(1000),
    })
}

/// The client an assertion says it is from (`sub`, else `iss`), unverified: only to
/// find the keys to verify it with.
pub fn subject(assertion: &str) -> Option<String> {
    let payload = assertion.split('.').nth(1)?;
    let claims: Claims = decode_part(payload, "claims").ok()?;
    claims.sub.or(claims.iss)
}

fn decode_part<T: serde::de::DeserializeOwned>(part: &str, what: &str) -> Result<T, String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| format!("the client assertion's {what} is not base64url"))?;
    serde_json::from_slice(&bytes)
        .map_err(|_| format!("the client assertion's {what} is not a JSON object of JWT fields"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(value: &serde_json::Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    }

    #[test]
    fn unsigned_and_shared_key_assertions_are_refused_before_any_key_is_tried() {
        let claims = encode(&serde_json::json!({"iss": "c", "sub": "c", "aud": "https://as", "exp": 100, "jti": "1"}));
        for alg in ["none", "HS256"] {
            let token = format!("{}.{claims}.", encode(&serde_json::json!({ "alg": alg })));
            let refused = verify(&token, r#"{"keys":[]}"#, "c", &["https://as".to_owned()], 50).expect_err("refused");
            assert!(refused.contains("not accepted"), "{refused}");
        }
        assert!(verify("a.b", "{}", "c", &[], 0).expect_err("refused").contains("three"));
    }

    #[test]
    fn a_jwk_set_with_private_or_shared_keys_is_not_registered() {
        let shared = serde_json::json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]});
        assert_eq!(jwks_issues(&shared).len(), 1, "{:?}", jwks_issues(&shared));
        assert!(!jwks_issues(&serde_json::json!({"keys": []})).is_empty());
        assert!(!jwks_issues(&serde_json::json!("x")).is_empty());
    }
}
