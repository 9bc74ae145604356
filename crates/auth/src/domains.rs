//! Proving that an organization owns an email domain: a DNS TXT record at
//! `_agentprocess.<domain>` holding the token the server gave. A verified domain routes
//! sign-in by email to its organization, and belongs to one organization at a time.

use agentprocess_engine::Code;
use agentprocess_store::{DirectoryTx, Domain, Store, StoreTx};
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;
use hickory_resolver::{Resolver, TokioResolver};

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::{Auth, Error, millis};
use agentprocess_store::Directory;

/// Whether `name` is a domain name DNS can hold: at least two labels, each 1 to 63 of
/// letters, digits and inner dashes, 253 characters at most.
pub fn is_domain_name(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|label| {
            (1..=63).contains(&label.len())
                && label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The name of the TXT record that proves ownership of `domain`.
pub fn record_name(domain: &str) -> String {
    format!("_agentprocess.{domain}")
}

impl Auth {
    fn resolver(&self) -> Result<TokioResolver, Error> {
        let unavailable = |error: String| Error::refused(Code::Retry, "DNS cannot be asked right now", vec![error]);
        if self.settings.dns_nameservers.is_empty() {
            return TokioResolver::builder_tokio()
                .and_then(hickory_resolver::ResolverBuilder::build)
                .map_err(|error| unavailable(error.to_string()));
        }
        let servers = self
            .settings
            .dns_nameservers
            .iter()
            .map(|address| {
                let mut udp = ConnectionConfig::udp();
                udp.port = address.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = address.port();
                NameServerConfig::new(address.ip(), true, vec![udp, tcp])
            })
            .collect();
        Resolver::builder_with_config(
            ResolverConfig::from_name_servers(servers),
            TokioRuntimeProvider::default(),
        )
        .build()
        .map_err(|error| unavailable(error.to_string()))
    }

    /// The texts of the TXT records at `name` (none when there is no such record).
    async fn txt_records(&self, name: &str) -> Result<Vec<String>, Error> {
        let resolver = self.resolver()?;
        match resolver.txt_lookup(format!("{name}.")).await {
            Ok(lookup) => Ok(lookup
                .answers()
                .iter()
                .filter_map(|record| match &record.data {
                    RData::TXT(txt) => Some(
                        txt.txt_data
                            .iter()
                            .map(|part| String::from_utf8_lossy(part).into_owned())
                            .collect::<String>(),
                    ),
                    _ => None,
                })
                .collect()),
            Err(error) if error.is_no_records_found() || error.is_nx_domain() => Ok(Vec::new()),
            Err(error) => Err(Error::refused(
                Code::Retry,
                "DNS cannot be asked right now; try again shortly",
                vec![format!("{name}: {error}")],
            )),
        }
    }

    /// Verifies a domain the organization added: its TXT record must hold the token.
    pub async fn verify_domain(
        &self,
        actor: &Actor,
        org: &str,
        domain: &str,
        now: jiff::Timestamp,
    ) -> Result<Domain, Error> {
        let Some(mut known) = self
            .store
            .domains(org)
            .await?
            .into_iter()
            .find(|known| known.domain == domain)
        else {
            return Err(Error::not_found(format!("the organization has no domain {domain:?}")));
        };
        if known.verified_at.is_some() {
            return Ok(known);
        }
        let name = record_name(domain);
        let texts = self.txt_records(&name).await?;
        if !texts.iter().any(|text| crate::secrets::same(text.trim(), &known.token)) {
            return Err(Error::refused(
                Code::NotAccepted,
                format!("{domain} is not verified; nothing changed"),
                vec![format!(
                    "{name}: {} (add a TXT record holding {}, wait for DNS to serve it, and verify again)",
                    if texts.is_empty() {
                        "no TXT record"
                    } else {
                        "no TXT record holds the token"
                    },
                    known.token
                )],
            ));
        }
        let at = millis(now);
        known.verified_at = Some(at);
        let mut tx = self.store.begin().await?;
        match tx.put_domain(org, &known, at).await {
            Err(error) if error.is_unique_violation() => {
                return Err(Error::conflict(format!(
                    "{domain} is verified by another organization; it must remove it first"
                )));
            }
            other => other?,
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::DomainVerified,
            Some(domain),
            detail([]),
            at,
        )
        .await?;
        tx.commit().await?;
        Ok(known)
    }
}

#[cfg(test)]
mod tests {
    use super::is_domain_name;

    #[test]
    fn domain_names_are_what_dns_can_hold() {
        assert!(is_domain_name("acme.com") && is_domain_name("mail.acme-corp.co.uk"));
        for bad in [
            "acme",
            "-acme.com",
            "acme-.com",
            "a..com",
            "ac me.com",
            "acme.com\0",
            "",
        ] {
            assert!(!is_domain_name(bad), "{bad:?}");
        }
        assert!(!is_domain_name(&format!("{}.com", "a".repeat(64))));
        assert!(!is_domain_name(&format!("{}com", "abc.".repeat(64))));
    }
}
