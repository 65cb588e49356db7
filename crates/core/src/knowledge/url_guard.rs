//! Which URLs the Worker may fetch (web-page sources, tool functions). Only http and https, no
//! credentials in the URL, and no loopback, private, link-local (cloud metadata), multicast or
//! reserved addresses unless the operator allows private URLs. Every redirect hop is checked
//! again by the caller.
//!
//! A Worker cannot resolve DNS before it fetches, so a public name that resolves to a private
//! address is not caught here; on Cloudflare's network such addresses are not reachable from a
//! Worker anyway, and locally the operator opts in with `ALLOW_PRIVATE_URLS`, or opens single
//! hosts with `ALLOW_PRIVATE_HOSTS`.

use std::net::{Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

fn private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..=127).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..=19).contains(&b)) // benchmarking
        || a >= 240 // reserved
}

fn private_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return private_v4(v4);
    }
    let seg = ip.segments();
    // NAT64 (64:ff9b::/96) embeds an IPv4 address in the last 32 bits.
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6].iter().all(|s| *s == 0) {
        let v4 = Ipv4Addr::new(
            (seg[6] >> 8) as u8,
            seg[6] as u8,
            (seg[7] >> 8) as u8,
            seg[7] as u8,
        );
        return private_v4(v4);
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local
        || (seg[0] & 0xffc0) == 0xfe80 // link-local
        || (seg[0] == 0 && seg[1] == 0 && seg[2] == 0 && seg[3] == 0 && seg[4] == 0 && seg[5] == 0)
    // IPv4-compatible
}

fn private_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    // A single label ("intranet") only resolves inside a private network.
    !host.contains('.')
        || host == "localhost"
        || [
            ".localhost",
            ".local",
            ".internal",
            ".intranet",
            ".lan",
            ".home.arpa",
        ]
        .iter()
        .any(|suffix| host.ends_with(suffix))
}

/// Which private addresses the operator lets the Worker call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrivateAccess {
    /// Every private address (`ALLOW_PRIVATE_URLS=true`).
    pub all: bool,
    /// Single hosts, as `host` (any port) or `host:port` (`ALLOW_PRIVATE_HOSTS`).
    pub hosts: Vec<String>,
}

impl PrivateAccess {
    pub fn everything() -> Self {
        PrivateAccess {
            all: true,
            hosts: Vec::new(),
        }
    }

    /// From the operator's settings: `all` as given, `hosts` a comma-separated list.
    pub fn from_settings(all: bool, hosts: &str) -> Self {
        PrivateAccess {
            all,
            hosts: hosts
                .split(',')
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
        }
    }

    fn permits(&self, url: &Url) -> bool {
        if self.all {
            return true;
        }
        let Some(host) = url.host_str().map(str::to_ascii_lowercase) else {
            return false;
        };
        let with_port = url.port_or_known_default().map(|p| format!("{host}:{p}"));
        self.hosts
            .iter()
            .any(|h| *h == host || Some(h) == with_port.as_ref())
    }
}

/// The parsed URL if the Worker may fetch it, else the reason in a sentence.
pub fn check_url(raw: &str, access: &PrivateAccess) -> Result<Url, String> {
    let url = crate::idn::parse_url(raw.trim())
        .map_err(|_| format!("{raw:?} is not a valid absolute URL."))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "Only http and https URLs can be fetched, not {}:.",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("URLs with a user name or password are not accepted.".to_string());
    }
    check_address(&url, access)?;
    Ok(url)
}

/// `Ok` when the URL's host is public or one the operator opened, else the reason in a
/// sentence: the address rule of `check_url` alone, for a URL checked where it is saved (a
/// tool function's, which may carry credentials for its endpoint).
pub fn check_address(url: &Url, access: &PrivateAccess) -> Result<(), String> {
    let private = match url.host() {
        None => return Err("The URL has no host.".to_string()),
        Some(Host::Ipv4(ip)) => private_v4(ip),
        Some(Host::Ipv6(ip)) => private_v6(ip),
        Some(Host::Domain(name)) => private_name(name),
    };
    if private && !access.permits(url) {
        return Err(
            "The URL points to a private, loopback or link-local address, which this service does not fetch."
                .to_string(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_http_urls_pass() {
        for u in [
            "https://example.com/a?b=c",
            "http://93.184.216.34/",
            "https://[2606:2800:220:1:248:1893:25c8:1946]/",
        ] {
            assert!(check_url(u, &PrivateAccess::default()).is_ok(), "{u}");
        }
    }

    #[test]
    fn single_private_hosts_can_be_opened() {
        let access = PrivateAccess::from_settings(false, " 127.0.0.1:4545, Intranet ,");
        assert_eq!(access.hosts, ["127.0.0.1:4545", "intranet"]);
        assert!(check_url("http://127.0.0.1:4545/page", &access).is_ok());
        assert!(check_url("http://127.0.0.1:4546/page", &access).is_err());
        assert!(check_url("http://127.0.0.1/page", &access).is_err());
        assert!(check_url("https://intranet/x", &access).is_ok());
        assert!(check_url("http://intranet:8080/x", &access).is_ok());
        assert!(check_url("http://169.254.169.254/latest/meta-data/", &access).is_err());
        let none = PrivateAccess::from_settings(false, "");
        assert_eq!(none, PrivateAccess::default());
    }

    #[test]
    fn other_schemes_and_credentials_are_refused() {
        for u in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/html,hi",
            "gopher://x.com",
            "https://user:pw@example.com/",
        ] {
            assert!(check_url(u, &PrivateAccess::everything()).is_err(), "{u}");
        }
        assert!(check_url("not a url", &PrivateAccess::everything()).is_err());
        assert!(check_url("/relative/path", &PrivateAccess::everything()).is_err());
    }

    #[test]
    fn private_addresses_are_refused_unless_allowed() {
        let private = [
            "http://127.0.0.1:8080/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://localhost/",
            "http://app.localhost/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://172.31.255.255/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://metadata.google.internal/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://intranet/",
            "http://printer.local/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
        ];
        for u in private {
            assert!(
                check_url(u, &PrivateAccess::default()).is_err(),
                "{u} should be refused"
            );
            assert!(
                check_url(u, &PrivateAccess::everything()).is_ok(),
                "{u} should pass when allowed"
            );
        }
        assert!(check_url("http://172.32.0.1/", &PrivateAccess::default()).is_ok());
    }
}
