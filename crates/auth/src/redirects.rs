//! Redirect URIs of people's clients: which may be registered (by `application_type`,
//! after OpenID Connect Registration §2 and RFC 8252), and how a requested one
//! matches a registered one (exactly, except loopback redirects, whose port is the
//! client's to pick at run time, RFC 8252 §7.3).

use reqwest::Url;

/// `web` or `native`, as the client said, or as its redirect URIs show when it did
/// not say: a client whose every redirect is on this machine (loopback, or a
/// private-use scheme) is native.
pub fn application_type(said: Option<&str>, redirect_uris: &[String]) -> Result<&'static str, String> {
    match said {
        Some("web") => Ok("web"),
        Some("native") => Ok("native"),
        Some(other) => Err(format!("application_type: {other:?} is neither web nor native")),
        None => {
            let native = !redirect_uris.is_empty() && all_loopback(redirect_uris);
            Ok(if native { "native" } else { "web" })
        }
    }
}

/// Every reason `redirect_uris` cannot be registered for a client of `application_type`.
pub fn issues(redirect_uris: &[String], application_type: &str) -> Vec<String> {
    if redirect_uris.is_empty() {
        return vec!["redirect_uris: at least one is required for the authorization code grant".to_owned()];
    }
    let mut issues = Vec::new();
    for (index, uri) in redirect_uris.iter().enumerate() {
        let at = format!("redirect_uris[{index}]");
        let url = match Url::parse(uri) {
            Ok(url) => url,
            Err(error) => {
                issues.push(format!("{at}: {uri:?} is not an absolute URI ({error})"));
                continue;
            }
        };
        if url.fragment().is_some() {
            issues.push(format!("{at}: {uri:?} must not have a fragment"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            issues.push(format!("{at}: {uri:?} must not carry credentials"));
        }
        let loopback = is_loopback(&url);
        match (application_type, url.scheme()) {
            ("web", "https") if loopback => issues.push(format!(
                "{at}: {uri:?} is on this machine; a web client redirects to its own https host (register as native for a loopback redirect)"
            )),
            ("web", "https") | ("native", "https") => {}
            ("native", "http") if loopback => {}
            ("native", _) if is_private_use(&url) => {}
            ("web", _) => issues.push(format!("{at}: {uri:?} must use https")),
            _ => issues.push(format!(
                "{at}: {uri:?} must be https, http on a loopback address (127.0.0.1, [::1] or localhost), or a private-use scheme such as com.example.app:/callback"
            )),
        }
    }
    issues
}

/// Whether every registered redirect is on the person's own machine, which the consent
/// page warns about: any program there could be the client.
pub fn all_loopback(redirect_uris: &[String]) -> bool {
    redirect_uris
        .iter()
        .all(|uri| Url::parse(uri).is_ok_and(|url| is_loopback(&url) || is_private_use(&url)))
}

/// The registered redirect URI that `requested` names: equal as strings, or, for a
/// loopback one, equal but for the port. With none requested, the client's only one.
pub fn matching(registered: &[String], requested: Option<&str>) -> Result<String, String> {
    let Some(requested) = requested else {
        return match registered {
            [only] => Ok(only.clone()),
            _ => Err("redirect_uri is required: the client has registered several".to_owned()),
        };
    };
    if registered.iter().any(|uri| uri == requested) {
        return Ok(requested.to_owned());
    }
    let matches_loopback = Url::parse(requested).is_ok_and(|asked| {
        is_loopback(&asked)
            && asked.scheme() == "http"
            && registered.iter().any(|uri| {
                Url::parse(uri).is_ok_and(|known| {
                    is_loopback(&known)
                        && known.scheme() == asked.scheme()
                        && known.host_str() == asked.host_str()
                        && known.path() == asked.path()
                        && known.query() == asked.query()
                })
            })
    });
    if matches_loopback {
        Ok(requested.to_owned())
    } else {
        Err(format!("redirect_uri {requested:?} is not registered for this client"))
    }
}

/// The host people are sent back to, as the consent page shows it.
pub fn host_of(uri: &str) -> String {
    match Url::parse(uri) {
        Ok(url) => match url.host_str() {
            Some(host) => host.to_owned(),
            None => format!("{}:", url.scheme()),
        },
        Err(_) => uri.to_owned(),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A private-use URI scheme of a native app (RFC 8252 §7.1): a reverse domain name.
fn is_private_use(url: &Url) -> bool {
    let scheme = url.scheme();
    scheme.contains('.') && !matches!(scheme, "http" | "https")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(uris: &[&str]) -> Vec<String> {
        uris.iter().map(|uri| (*uri).to_owned()).collect()
    }

    #[test]
    fn loopback_redirects_match_on_any_port_and_others_exactly() {
        let registered = owned(&["http://127.0.0.1:3000/callback", "https://app.example.com/cb"]);
        assert!(matching(&registered, Some("http://127.0.0.1:61234/callback")).is_ok());
        assert!(matching(&registered, Some("http://127.0.0.1:3000/other")).is_err());
        assert!(matching(&registered, Some("http://localhost:3000/callback")).is_err());
        assert!(matching(&registered, Some("https://app.example.com/cb")).is_ok());
        assert!(matching(&registered, Some("https://app.example.com:8443/cb")).is_err());
        assert!(matching(&registered, Some("https://app.example.com/cb?x=1")).is_err());
        assert!(matching(&registered, None).is_err());
        assert_eq!(
            matching(&owned(&["https://a.example/cb"]), None).as_deref(),
            Ok("https://a.example/cb")
        );
    }

    #[test]
    fn web_and_native_clients_register_what_their_kind_allows() {
        assert!(issues(&owned(&["https://app.example.com/cb"]), "web").is_empty());
        assert_eq!(issues(&owned(&["http://app.example.com/cb"]), "web").len(), 1);
        assert_eq!(issues(&owned(&["https://localhost/cb"]), "web").len(), 1);
        assert!(issues(&owned(&["http://127.0.0.1/cb", "com.example.app:/cb"]), "native").is_empty());
        let many = issues(&owned(&["http://example.com/cb#x", "not a uri", "ftp://x/y"]), "native");
        assert_eq!(many.len(), 4, "{many:?}");
        assert_eq!(issues(&[], "native").len(), 1);
    }

    #[test]
    fn the_kind_follows_the_redirects_when_the_client_does_not_say() {
        assert_eq!(application_type(None, &owned(&["http://localhost:1/cb"])), Ok("native"));
        assert_eq!(application_type(None, &owned(&["https://a.example/cb"])), Ok("web"));
        assert_eq!(
            application_type(Some("web"), &owned(&["http://localhost/cb"])),
            Ok("web")
        );
        assert!(application_type(Some("desktop"), &[]).is_err());
    }
}
