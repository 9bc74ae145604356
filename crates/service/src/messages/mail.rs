//! Sending email over SMTP (lettre): STARTTLS or TLS as the URL says, a password from a
//! mounted secret, plain text and HTML alternatives, `List-Unsubscribe` pointing at
//! the page where a person chooses what they hear of.

use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, header};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};

use super::letters::Letter;

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
}

impl std::fmt::Debug for MailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettings")
            .field("url", &"<hidden>")
            .field("password", &self.password.as_ref().map(|_| "<secret>"))
            .field("from", &self.from)
            .finish()
    }
}

/// A connection pool to the SMTP server, and the sender.
pub(crate) struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl MailSettings {
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

    /// The mailer, each send giving up after `timeout`.
    pub(crate) fn mailer(&self, timeout: Duration) -> Result<Mailer, String> {
        let issues = self.issues();
        if !issues.is_empty() {
            return Err(issues.join("; "));
        }
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(&self.url)
            .map_err(|error| error.to_string())?
            .timeout(Some(timeout));
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
    ) -> Result<(), String> {
        let to: Mailbox = format!("{name} <{address}>")
            .parse()
            .or_else(|_| address.parse())
            .map_err(|error| format!("the address {address:?} does not read: {error}"))?;
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
            .map_err(|error| format!("the message could not be made: {error}"))?;
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|error| format!("the SMTP server did not take it: {error}"))
    }
}
