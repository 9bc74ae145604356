//! The kinds of bearer token, told apart by their public prefixes, and what each
//! surface says of a token that belongs to the other.

use crate::agents::MCP_TOKEN_PREFIX;
use crate::clients::ACCESS_TOKEN_PREFIX;
use crate::tokens::API_TOKEN_PREFIX;

/// Why `/api/v1` refused a bearer token it does not know. A token whose prefix shows
/// it is for `/mcp` (an agent's token, or an OAuth access token) is told where REST's
/// tokens come from; the prefixes are public, so saying so reveals nothing.
pub fn refusal_on_rest(token: &str) -> &'static str {
    if token.starts_with(MCP_TOKEN_PREFIX) || token.starts_with(ACCESS_TOKEN_PREFIX) {
        "the bearer token is for /mcp: /api/v1 takes an API token (apr_…), which a person \
         makes on /account"
    } else {
        "the API token is not valid (unknown, expired or revoked)"
    }
}

/// Why `/mcp` refused a bearer token it does not know, naming `/api/v1` when the
/// token is an API token.
pub fn refusal_on_mcp(token: &str) -> &'static str {
    if token.starts_with(API_TOKEN_PREFIX) {
        "the bearer token is an API token, for /api/v1: /mcp takes an agent's MCP token \
         (apt_…) or an OAuth access token"
    } else {
        "the bearer token is not valid: it is unknown, expired or revoked, or not for this server"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_surface_names_the_other_for_its_tokens_only() {
        assert!(refusal_on_rest("apt_x").contains("/api/v1 takes an API token"));
        assert!(refusal_on_rest("apo_x").contains("/api/v1 takes an API token"));
        assert!(refusal_on_rest("apr_x").contains("not valid"));
        assert!(refusal_on_mcp("apr_x").contains("an API token, for /api/v1"));
        assert!(refusal_on_mcp("apt_x").contains("not valid"));
    }
}
