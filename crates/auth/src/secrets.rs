//! Secrets the server makes and keeps: random tokens (kept only as SHA-256), and
//! secrets that must be read back (an IdP's client secret), sealed with the server's
//! key.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

/// The key that seals secrets at rest, with the keys it replaced: every server
/// process of a deployment shares it. It seals with the current key and opens what
/// any of them sealed, so a key is rotated by making the old one a previous key,
/// resealing (`agentprocess admin reseal`), and then dropping it.
#[derive(Clone)]
pub struct SecretKey {
    current: KeyPart,
    previous: Vec<KeyPart>,
}

#[derive(Clone)]
struct KeyPart {
    cipher: Aes256Gcm,
    /// Names the key in sealed values, so a value sealed with another key is told apart
    /// from a tampered one.
    id: String,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let previous: Vec<&str> = self.previous.iter().map(|part| part.id.as_str()).collect();
        f.debug_struct("SecretKey")
            .field("id", &self.current.id)
            .field("previous", &previous)
            .finish_non_exhaustive()
    }
}

/// Why a sealed value could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Sealed with a key this server does not have.
    #[error("the value was sealed with another secret key ({0})")]
    OtherKey(String),
    /// Not a value this server sealed, or altered since.
    #[error("the sealed value is damaged")]
    Damaged,
}

const SEALED_PREFIX: &str = "v1";

impl SecretKey {
    /// A key from at least 32 bytes of secret material.
    pub fn new(material: &[u8]) -> Result<Self, String> {
        if material.len() < 32 {
            return Err(format!(
                "the secret key must hold at least 32 bytes, not {}",
                material.len()
            ));
        }
        Ok(Self::keyed(material))
    }

    /// The key of a server given no key of its own: derived from its URL-signing
    /// secret, as [`derived_key_material`] says.
    pub fn derived_from_url_secret(url_secret: &[u8]) -> Self {
        Self::keyed(&derived_key_material(url_secret))
    }

    fn keyed(material: &[u8]) -> Self {
        let key: [u8; 32] = Sha256::digest(material).into();
        let id = sha256_hex(&key)[..8].to_owned();
        Self {
            current: KeyPart {
                cipher: Aes256Gcm::new(&key.into()),
                id,
            },
            previous: Vec::new(),
        }
    }

    /// This key, opening also what `previous` keys sealed.
    #[must_use]
    pub fn with_previous(mut self, previous: impl IntoIterator<Item = SecretKey>) -> Self {
        for key in previous {
            if key.current.id != self.current.id {
                self.previous.push(key.current);
            }
        }
        self
    }

    /// Whether `sealed` was sealed with a previous key, so that sealing it again with
    /// the current one lets that key be dropped.
    pub fn sealed_with_previous(&self, sealed: &str) -> bool {
        split_sealed(sealed).is_some_and(|(id, _)| self.previous.iter().any(|part| part.id == id))
    }

    /// Seals `plaintext` for the place named by `context` (for example
    /// `idp-secret:<org>`): opening it under another context fails, so a sealed value
    /// copied to another row is useless.
    pub fn seal(&self, plaintext: &str, context: &str) -> String {
        let nonce_bytes = random_bytes::<12>();
        let nonce = Nonce::from(nonce_bytes);
        let sealed = self
            .current
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: context.as_bytes(),
                },
            )
            // AES-GCM fails only past 64 GiB of plaintext.
            .unwrap_or_default();
        let mut bytes = nonce_bytes.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{SEALED_PREFIX}.{}.{}", self.current.id, URL_SAFE_NO_PAD.encode(bytes))
    }

    /// Whether `value` has the form of a sealed value (it may still fail to open).
    pub fn is_sealed(value: &str) -> bool {
        value
            .strip_prefix(SEALED_PREFIX)
            .is_some_and(|rest| rest.starts_with('.'))
    }

    /// Opens a value [`SecretKey::seal`] made under the same `context`.
    pub fn open(&self, sealed: &str, context: &str) -> Result<String, SealError> {
        let Some((id, body)) = split_sealed(sealed) else {
            return Err(SealError::Damaged);
        };
        let Some(part) = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|part| part.id == id)
        else {
            return Err(SealError::OtherKey(id.to_owned()));
        };
        let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| SealError::Damaged)?;
        if bytes.len() < 12 {
            return Err(SealError::Damaged);
        }
        let (nonce, message) = bytes.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().map_err(|_| SealError::Damaged)?;
        let plain = part
            .cipher
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: message,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SealError::Damaged)?;
        String::from_utf8(plain).map_err(|_| SealError::Damaged)
    }
}

/// The id of the key that sealed `sealed` and the sealed bytes (base64), if it has the
/// form of a sealed value.
fn split_sealed(sealed: &str) -> Option<(&str, &str)> {
    let mut parts = sealed.splitn(3, '.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(SEALED_PREFIX), Some(id), Some(body)) => Some((id, body)),
        _ => None,
    }
}

/// Key material derived from the URL-signing secret, for servers given no key of
/// their own (the two uses never share the key itself). 64 bytes.
pub fn derived_key_material(url_secret: &[u8]) -> Vec<u8> {
    sha256_hex(&[b"agentprocess seal key:".as_slice(), url_secret].concat()).into_bytes()
}

/// `N` bytes from the operating system's generator.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // Without an entropy source the server cannot make a single safe secret.
    #[allow(clippy::expect_used)]
    getrandom::fill(&mut bytes).expect("the operating system's random generator failed");
    bytes
}

/// A new secret token: `prefix` then 32 random bytes, URL-safe.
pub fn new_token(prefix: &str) -> String {
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(random_bytes::<32>()))
}

/// A short random id: `prefix` then 12 random bytes as hex.
pub fn new_id(prefix: &str) -> String {
    let bytes = random_bytes::<12>();
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{prefix}{hex}")
}

pub use agentprocess_engine::sha256_hex;

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SecretKey {
        SecretKey::new(&[byte; 32]).expect("key")
    }

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_context() {
        let sealed = key(1).seal("client-secret", "idp-secret:acme");
        assert!(!sealed.contains("client-secret"));
        assert_eq!(key(1).open(&sealed, "idp-secret:acme").as_deref(), Ok("client-secret"));
        assert_eq!(key(1).open(&sealed, "idp-secret:other"), Err(SealError::Damaged));
        assert!(matches!(
            key(2).open(&sealed, "idp-secret:acme"),
            Err(SealError::OtherKey(_))
        ));
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(key(1).open(&tampered, "idp-secret:acme"), Err(SealError::Damaged));
        assert_ne!(key(1).seal("x", "c"), key(1).seal("x", "c"), "a fresh nonce each time");
    }

    #[test]
    fn a_rotated_key_opens_what_its_previous_keys_sealed_and_seals_with_the_new_one() {
        let old = key(1).seal("client-secret", "c");
        let rotated = key(2).with_previous([key(1)]);
        assert_eq!(rotated.open(&old, "c").as_deref(), Ok("client-secret"));
        assert!(rotated.sealed_with_previous(&old));
        let resealed = rotated.seal("client-secret", "c");
        assert!(!rotated.sealed_with_previous(&resealed));
        assert!(
            matches!(key(1).open(&resealed, "c"), Err(SealError::OtherKey(_))),
            "sealed with the new key"
        );
        assert!(
            matches!(key(2).open(&old, "c"), Err(SealError::OtherKey(_))),
            "once the old key is dropped, what it sealed no longer opens"
        );
        assert!(!rotated.sealed_with_previous("whsec_not-sealed"));
    }

    #[test]
    fn short_key_material_is_refused() {
        assert!(SecretKey::new(&[0; 31]).is_err());
    }

    #[test]
    fn tokens_are_random_and_compared_in_full() {
        let token = new_token("ap_");
        assert!(token.starts_with("ap_") && token.len() > 40);
        assert_ne!(token, new_token("ap_"));
        assert!(same(&token, &token.clone()));
        assert!(!same(&token, &token[..token.len() - 1]));
        assert!(!same("abc", "abd"));
    }
}
