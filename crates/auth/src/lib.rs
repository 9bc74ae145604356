//! Identity for the process server: organizations that sign up through their own
//! OpenID provider, people who sign in through it, roles, browser sessions, API
//! tokens and the audit log. The rows live in the store ([`agentprocess_store::Directory`]);
//! this crate holds the rules. It reads no clock: every operation is given `now`.

pub mod acting;
pub mod agents;
pub mod assertion;
pub mod audit;
pub mod authorization;
pub mod client_auth;
pub mod clients;
pub mod domains;
mod error;
pub mod forwarded;
pub mod groups;
pub mod idempotency;
pub mod identities;
pub mod limits;
pub mod members;
pub mod metadata_documents;
pub mod oauth_error;
pub mod oidc;
pub mod outbound;
pub mod people_clients;
pub mod redirects;
pub mod secrets;
pub mod sessions;
pub mod signin;
pub mod token_kinds;
pub mod tokens;

use agentprocess_store::SqlStore;
use std::time::Duration;

pub use acting::{Acting, Via};
pub use agentprocess_store::{Identity, IdentityKind, Role};
pub use error::Error;
pub use oidc::{Oidc, OidcSettings};
pub use secrets::{SealError, SecretKey};

/// A role as requests and answers name it (its schema; the type is [`Role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Role)]
pub enum RoleName {
    /// Decides the work items of their groups, starts runs.
    Member,
    /// Also cancels runs, sends events, decides escalations.
    Operator,
    /// Also manages the organization.
    Admin,
}

/// Who may sign up an organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignupPolicy {
    /// Anyone.
    Open,
    /// Whoever holds a sign-up code the operator gave out.
    Invite,
    /// Nobody: an operator creates organizations with `agentprocess admin create-org`.
    Closed,
}

impl std::str::FromStr for SignupPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "open" => Ok(Self::Open),
            "invite" => Ok(Self::Invite),
            "closed" => Ok(Self::Closed),
            other => Err(format!("{other:?} is not a sign-up policy: use open, invite or closed")),
        }
    }
}

/// The rules of identity that an operator sets.
#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// Who may sign up an organization.
    pub signup: SignupPolicy,
    /// SHA-256 hex of each sign-up code accepted under [`SignupPolicy::Invite`].
    pub signup_code_hashes: Vec<String>,
    /// A session unused this long ends.
    pub session_idle: Duration,
    /// A session ends this long after sign-in, used or not.
    pub session_absolute: Duration,
    /// DNS servers that domain ownership is checked against; the system's when empty.
    pub dns_nameservers: Vec<std::net::SocketAddr>,
    /// How long an OAuth access token for `/mcp` lives.
    pub access_token_lifetime: Duration,
    /// Client registrations one address may make per hour, on each API process.
    pub client_registrations_per_hour: u32,
    /// A person decides in the browser only within this long of signing in; later,
    /// they sign in again at their provider first.
    pub decide_sign_in_within: Duration,
    /// What anyone may do without an account, on each API process.
    pub anonymous: AnonymousLimits,
}

impl Default for AuthSettings {
    /// A closed server (`agentprocess admin create-org` only), with the session and
    /// token lifetimes the server's flags default to.
    fn default() -> Self {
        Self {
            signup: SignupPolicy::Closed,
            signup_code_hashes: Vec::new(),
            session_idle: Duration::from_secs(8 * 3600),
            session_absolute: Duration::from_secs(24 * 3600),
            dns_nameservers: Vec::new(),
            access_token_lifetime: Duration::from_secs(3600),
            client_registrations_per_hour: 20,
            decide_sign_in_within: Duration::from_secs(8 * 3600),
            anonymous: AnonymousLimits::default(),
        }
    }
}

/// What anyone may do without an account, per ten minutes on each API process. Behind
/// a proxy every client has the proxy's address: raise the per-address limits there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnonymousLimits {
    /// Sign-ins started from one network address (each sends the server to a provider).
    pub sign_ins_per_address: u32,
    /// Sign-ins of one organization the server tries at its provider first (to report a
    /// refusal on the page); past it, sign-ins go straight to the provider.
    pub sign_ins_per_organization: u32,
    /// Failed requests to the token endpoint from one network address.
    pub token_failures_per_address: u32,
    /// Failed requests to the token endpoint for one client id from one address.
    pub token_failures_per_client: u32,
}

impl AnonymousLimits {
    /// The window each limit counts in.
    pub const WINDOW: Duration = Duration::from_secs(600);
}

impl Default for AnonymousLimits {
    fn default() -> Self {
        Self {
            sign_ins_per_address: 120,
            sign_ins_per_organization: 600,
            token_failures_per_address: 120,
            token_failures_per_client: 30,
        }
    }
}

/// Identity's operations over a store.
#[derive(Debug, Clone)]
pub struct Auth {
    store: SqlStore,
    key: SecretKey,
    oidc: Oidc,
    settings: AuthSettings,
    documents: Option<metadata_documents::MetadataDocuments>,
}

impl Auth {
    /// Identity over `store`, sealing secrets with `key`.
    pub fn new(store: SqlStore, key: SecretKey, oidc: Oidc, settings: AuthSettings) -> Self {
        Self {
            store,
            key,
            oidc,
            settings,
            documents: None,
        }
    }

    /// Lets people's clients be named by the URL of their metadata document, fetched
    /// by `documents`.
    #[must_use]
    pub fn with_metadata_documents(mut self, documents: metadata_documents::MetadataDocuments) -> Self {
        self.documents = Some(documents);
        self
    }

    /// Whether people's clients may be named by a metadata document URL.
    pub fn fetches_metadata_documents(&self) -> bool {
        self.documents.is_some()
    }

    /// The operator's settings.
    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// The client for identity providers.
    pub fn oidc(&self) -> &Oidc {
        &self.oidc
    }

    /// The store.
    pub fn store(&self) -> &SqlStore {
        &self.store
    }
}

/// Every reason `id` cannot name a group or an agent: 1 to 64 lowercase letters,
/// digits, `-`, `_` and `.`, starting with a letter or digit.
pub fn id_issues(id: &str) -> Vec<String> {
    let mut issues = Vec::new();
    if id.is_empty() || id.len() > 64 {
        issues.push(format!("id: {id:?} must have 1 to 64 characters"));
    }
    let allowed = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'-' | b'_' | b'.');
    if !id.bytes().all(allowed) || id.starts_with(['-', '_', '.']) {
        issues.push(format!(
            "id: {id:?} may hold only lowercase letters, digits, '-', '_' and '.', and starts with a letter or digit"
        ));
    }
    issues
}

/// Every reason `id` cannot name an identity: the rules of ids, and the id the
/// platform's operator acts under, which no organization may give to one of its own
/// (the audit log would name two callers alike).
pub fn identity_id_issues(id: &str) -> Vec<String> {
    let mut issues = id_issues(id);
    if id == acting::COMMAND_LINE_ID {
        issues.push(format!(
            "id: {id:?} is the platform's operator's, as the audit log names them"
        ));
    }
    issues
}

/// Milliseconds since the epoch.
pub(crate) fn millis(now: jiff::Timestamp) -> i64 {
    now.as_millisecond()
}
