//! Sending email over SMTP (lettre): STARTTLS or TLS as the URL says, a password from a
//! mounted secret, plain text and HTML alternatives, `List-Unsubscribe` pointing at
//! the page where a person chooses what they hear of.
//!
//! The mail server is the platform's, not the organization's: its replies name its
//! hosts, addresses and software. A failure reaches the organization as its class
//! ([`MailFailure`], in words); the reply itself only the operators' logs.

use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, header};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};

use super::letters::Letter;
use super::medium::{Medium, Said};

/// How email is sent.
#[derive(Clone)]
pub struct MailSettings {
    /// The SMTP server: `smtps://host:465` (TLS), `smtp://host:587?tls=required`
    /// (STARTTLS), `smtp://host:25` (neither: only on a trusted network). A user name
    /// may be given in it (`smtp://user@host`).
    pub url: String,
    /// The password for the user of `url`, read from a mounted secret.
    pub password: Option<String>,
    /// The sender (`Process server <process@example.com>`).
    pub from: String,
    /// How long connecting to the SMTP server, and each of its answers, may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for MailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettings")
            .field("url", &"<hidden>")
            .field("password", &self.password.as_ref().map(|_| "<secret>"))
            .field("from", &self.from)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A connection pool to the SMTP server, and the sender.
pub(crate) struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl MailSettings {
    /// The SMTP timeout when none is chosen: longer than a chat post's, as an SMTP
    /// server is the operator's own, answers each command in turn, and may greet
    /// slowly on purpose (anti-spam delays).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// Every issue with these settings, in words (a URL that does not read, a sender
    /// that is no address); checked when a server starts.
    pub fn issues(&self) -> Vec<String> {
        let mut issues = Vec::new();
        if let Err(error) = AsyncSmtpTransport::<Tokio1Executor>::from_url(&self.url) {
            issues.push(format!(
                "--smtp-url: {error} (smtps://host:465, smtp://host:587?tls=required)"
            ));
        }
        if let Err(error) = self.from.parse::<Mailbox>() {
            issues.push(format!(
                "--mail-from: {error} (an address such as Processes <processes@example.com>)"
            ));
        }
        issues
    }

    /// The mailer, each connection and answer waited for at most `self.timeout`.
    pub(crate) fn mailer(&self) -> Result<Mailer, String> {
        let issues = self.issues();
        if !issues.is_empty() {
            return Err(issues.join("; "));
        }
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(&self.url)
            .map_err(|error| error.to_string())?
            .timeout(Some(self.timeout));
        if let Some(password) = &self.password {
            let user = url::Url::parse(&self.url)
                .map(|url| percent_decoded(url.username()))
                .unwrap_or_default();
            builder = builder.credentials(Credentials::new(user, password.clone()));
        }
        Ok(Mailer {
            transport: builder.build(),
            from: self
                .from
                .parse()
                .map_err(|error: lettre::address::AddressError| error.to_string())?,
        })
    }
}

/// A URL's percent-encoded user name, decoded (a `+` stays a plus).
fn percent_decoded(text: &str) -> String {
    url::form_urlencoded::parse(format!("u={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// `List-Unsubscribe` (RFC 2369).
#[derive(Clone)]
struct ListUnsubscribe(String);

impl header::Header for ListUnsubscribe {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe")
    }

    fn parse(text: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self(text.to_owned()))
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

impl Mailer {
    /// Sends `letter` to `name <address>`; `id` makes its `Message-ID`, `settings` is
    /// the page where the person chooses what they hear of.
    pub(crate) async fn send(
        &self,
        name: &str,
        address: &str,
        letter: &Letter,
        id: &str,
        settings: &str,
    ) -> Result<(), MailError> {
        let unmade = |detail: String| MailError {
            failure: MailFailure::Unmade,
            detail,
        };
        let email = address
            .parse()
            .map_err(|error| unmade(format!("the address {address:?} does not read: {error}")))?;
        // The name as a mailbox's display name: lettre quotes it, on one line.
        let to = Mailbox::new(Some(Medium::Text.put(&Said::new(name))), email);
        let domain = self.from.email.domain().to_owned();
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(&letter.subject)
            .message_id(Some(format!("<{id}@{domain}>")))
            .header(ListUnsubscribe(format!("<{settings}>")))
            .multipart(MultiPart::alternative_plain_html(
                letter.text.clone(),
                letter.html.clone(),
            ))
            .map_err(|error| unmade(format!("the message could not be made: {error}")))?;
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|error| MailError {
                failure: MailFailure::of(&error),
                detail: error.to_string(),
            })
    }
}

/// Why an email was not sent: its class, and what the mail server or lettre said.
#[derive(Debug)]
pub(crate) struct MailError {
    /// The class of failure, which the organization reads.
    pub(crate) failure: MailFailure,
    /// The mail server's reply or lettre's error, for the operators' logs only.
    pub(crate) detail: String,
}

/// The class of an email's failure, as the organization's admins read it: in words
/// that name nothing of the platform's mail server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MailFailure {
    /// The server refused the recipient's address (550, 551, 553, or an X.1.x status).
    RecipientRefused,
    /// The server refused the message as too large (552, X.2.3, X.3.4).
    TooLarge,
    /// The server refused the message for another lasting reason (554, a policy).
    MessageRefused,
    /// The server refused this server's sign-in (530, 534, 535, 538, X.7.8).
    SignInRefused,
    /// The server failed for the time being (a 4xx reply).
    Temporary,
    /// No connection could be made, or it broke, or it timed out.
    Unreachable,
    /// No secure connection could be made.
    Insecure,
    /// The server's answer did not read, or the client failed on its own.
    Unexpected,
    /// The message could not be made (an address that does not read).
    Unmade,
}

impl MailFailure {
    /// The class of lettre's `error`.
    fn of(error: &lettre::transport::smtp::Error) -> Self {
        if let Some(code) = error.status() {
            let reply = std::error::Error::source(error)
                .map(ToString::to_string)
                .unwrap_or_default();
            Self::of_reply(u16::from(code), &reply)
        } else if error.is_tls() {
            Self::Insecure
        } else if error.is_response() || error.is_client() {
            Self::Unexpected
        } else {
            Self::Unreachable
        }
    }

    /// The class of a negative reply: its three-digit `code`, and its text, which may
    /// start with an enhanced status code (RFC 3463: `5.1.1`), more telling than the
    /// basic one (a 550 may refuse an address or, as `5.7.1`, a message).
    fn of_reply(code: u16, text: &str) -> Self {
        let enhanced: Option<(u16, u16)> = text.split_whitespace().next().and_then(|first| {
            let mut parts = first.split('.');
            let class = parts.next()?;
            let subject = parts.next()?.parse().ok()?;
            let detail = parts.next()?.parse().ok()?;
            (parts.next().is_none() && class.len() == 1 && code.to_string().starts_with(class))
                .then_some((subject, detail))
        });
        match (code, enhanced) {
            (400..=499, _) => Self::Temporary,
            (530 | 534 | 535 | 538, _) | (_, Some((7, 8))) => Self::SignInRefused,
            (_, Some((1, _))) => Self::RecipientRefused,
            (_, Some((2, 3) | (3, 4))) => Self::TooLarge,
            (_, Some(_)) => Self::MessageRefused,
            (550 | 551 | 553, None) => Self::RecipientRefused,
            (552, None) => Self::TooLarge,
            _ => Self::MessageRefused,
        }
    }

    /// Whether sending again cannot help: the server refused this message or this
    /// address for good (a refused sign-in, a server out of reach, are the platform's
    /// to mend, and tried again).
    pub(crate) fn is_final(self) -> bool {
        matches!(
            self,
            Self::RecipientRefused | Self::TooLarge | Self::MessageRefused | Self::Unmade
        )
    }

    /// A name for logs and metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::RecipientRefused => "recipient_refused",
            Self::TooLarge => "too_large",
            Self::MessageRefused => "message_refused",
            Self::SignInRefused => "sign_in_refused",
            Self::Temporary => "temporary",
            Self::Unreachable => "unreachable",
            Self::Insecure => "insecure",
            Self::Unexpected => "unexpected",
            Self::Unmade => "unmade",
        }
    }
}

impl std::fmt::Display for MailFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::RecipientRefused => "the mail server refused the recipient address",
            Self::TooLarge => "the mail server refused the message as too large",
            Self::MessageRefused => "the mail server refused the message",
            Self::SignInRefused => "the mail server refused this server's sign-in",
            Self::Temporary => "temporary failure at the mail server",
            Self::Unreachable => "the mail server could not be reached",
            Self::Insecure => "no secure connection to the mail server could be made",
            Self::Unexpected => "the mail server's answer could not be read",
            Self::Unmade => "the message could not be made for the recipient's address",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_classed_by_its_enhanced_status_first() {
        for (code, text, class) in [
            (
                550,
                "5.1.1 <x@acme.test>: Recipient address rejected: relay-7.internal.example.net (Postfix 3.7.2) 10.1.2.3",
                MailFailure::RecipientRefused,
            ),
            (
                550,
                "Requested action not taken: mailbox unavailable",
                MailFailure::RecipientRefused,
            ),
            (553, "mailbox name not allowed", MailFailure::RecipientRefused),
            (550, "5.7.1 Message rejected as spam", MailFailure::MessageRefused),
            (552, "Message size exceeds fixed maximum", MailFailure::TooLarge),
            (552, "5.3.4 Message too big for system", MailFailure::TooLarge),
            (
                554,
                "5.2.3 Message length exceeds administrative limit",
                MailFailure::TooLarge,
            ),
            (554, "Transaction failed", MailFailure::MessageRefused),
            (
                535,
                "5.7.8 Authentication credentials invalid",
                MailFailure::SignInRefused,
            ),
            (530, "5.7.0 Authentication required", MailFailure::SignInRefused),
            (
                451,
                "4.3.0 Temporary lookup failure at relay-7.internal",
                MailFailure::Temporary,
            ),
            (421, "Service not available, closing channel", MailFailure::Temporary),
            (
                550,
                "4.1.1 a code of another class is no enhanced status",
                MailFailure::RecipientRefused,
            ),
        ] {
            assert_eq!(MailFailure::of_reply(code, text), class, "{code} {text}");
        }
    }

    #[test]
    fn the_classes_words_name_nothing_of_the_server_and_only_lasting_refusals_are_final() {
        let all = [
            MailFailure::RecipientRefused,
            MailFailure::TooLarge,
            MailFailure::MessageRefused,
            MailFailure::SignInRefused,
            MailFailure::Temporary,
            MailFailure::Unreachable,
            MailFailure::Insecure,
            MailFailure::Unexpected,
            MailFailure::Unmade,
        ];
        for failure in all {
            let words = failure.to_string();
            assert!(words.starts_with("the ") || words.starts_with("temporary") || words.starts_with("no "));
            assert!(!words.contains(['<', ':', '@']), "{words}");
        }
        let finals: Vec<&str> = all.iter().filter(|f| f.is_final()).map(|f| f.as_str()).collect();
        assert_eq!(finals, ["recipient_refused", "too_large", "message_refused", "unmade"]);
    }
}
