//! Random ids and tokens, and the hashes the store keeps of secrets.

use agentprocess_engine::Ids;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// `prefix` and `bytes` random bytes as lowercase hex: `r_3f9c…`.
pub fn random_id(prefix: &str, bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    fill(&mut buffer);
    format!("{prefix}{}", hex(&buffer))
}

/// Bytes as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A secret: 32 random bytes, base64url.
pub(crate) fn secret() -> String {
    let mut buffer = [0u8; 32];
    fill(&mut buffer);
    URL_SAFE_NO_PAD.encode(buffer)
}

/// A webhook signing key: `whsec_` and 24 random bytes in standard base64, as
/// Standard Webhooks libraries expect.
pub(crate) fn webhook_secret() -> String {
    let mut buffer = [0u8; 24];
    fill(&mut buffer);
    format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(buffer))
}

fn fill(buffer: &mut [u8]) {
    // Without the operating system's randomness no id or token is safe to hand out.
    getrandom::fill(buffer).expect("the operating system's random source failed");
}

pub use agentprocess_engine::sha256_hex;

/// Ids for one run: work items, and claim tokens that start with the run id, so a
/// token leads to its run without a lookup table.
pub(crate) struct RunIds {
    pub(crate) run: String,
}

impl Ids for RunIds {
    fn work_item(&mut self) -> String {
        random_id("w_", 8)
    }

    fn token(&mut self) -> String {
        format!("{}.{}", self.run, secret())
    }
}

/// The run a claim token belongs to, if the token has the shape this server gives.
pub fn token_run(token: &str) -> Option<&str> {
    let (run, secret) = token.split_once('.')?;
    (run.starts_with("r_") && run.len() > 2 && secret.len() >= 32).then_some(run)
}
