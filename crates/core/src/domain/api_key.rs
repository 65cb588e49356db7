//! API keys: how a key looks, how it is stored (only its SHA-256), and constant-time checks.
//! A key holds 256 random bits, so a fast hash is enough: there is nothing to brute-force.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::Body;
use crate::domain::rate_limit::parse_pair;
use crate::string_enum::string_enum;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::net::IpAddr;

pub const KEY_PREFIX: &str = "ec_";

/// A fresh key: the prefix and 64 hex digits of randomness.
pub fn generate_key() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{KEY_PREFIX}{}", hex(&bytes)))
}

pub fn hash_key(key: &str) -> String {
    sha256_hex(key.as_bytes())
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The first characters of a key, kept so a person can tell keys apart in a list.
pub fn display_prefix(key: &str) -> String {
    key.chars().take(KEY_PREFIX.len() + 6).collect()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

/// Equality whose time does not depend on where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `Authorization: Bearer <token>`; `None` when absent or of another scheme.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let value = header?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

string_enum! {
    /// What a key may do. Every route declares the scope it needs (`api::routes`); see
    /// `Scope::grants` for which scopes cover which.
    pub enum Scope {
        /// Everything, keys included: what every key could do before scopes existed.
        Admin = "admin",
        /// Chatbots, agents, sources, tools and the rest of the configuration, sessions and
        /// messages too: everything but keys.
        Manage = "manage",
        /// Sessions and messages only: what a backend that chats needs.
        Chat = "chat",
        /// Any `GET` but keys: what a dashboard needs.
        Read = "read",
    }
}

impl Scope {
    /// Whether a key with this scope may call a route that declares `needed`, with `method`
    /// (`HEAD` is a `GET` without its body).
    pub fn grants(self, needed: Scope, method: &str) -> bool {
        match self {
            Scope::Admin => true,
            Scope::Manage => needed != Scope::Admin,
            Scope::Chat => needed == Scope::Chat,
            Scope::Read => matches!(method, "GET" | "HEAD") && needed != Scope::Admin,
        }
    }

    /// Whether a key holding `self` may give a new key `other`: only what it could do itself.
    pub fn covers(self, other: Scope) -> bool {
        match self {
            Scope::Admin => true,
            Scope::Manage => other != Scope::Admin,
            Scope::Chat | Scope::Read => other == self,
        }
    }
}

/// Whether any of `scopes` opens a route that declares `needed`.
pub fn scopes_grant(scopes: &[Scope], needed: Scope, method: &str) -> bool {
    scopes.iter().any(|s| s.grants(needed, method))
}

/// The 403 for a key whose scopes do not open the route: it names the scope needed.
pub fn missing_scope(scopes: &[Scope], needed: Scope, method: &str) -> ApiError {
    let held = scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let also =
        if matches!(method, "GET" | "HEAD") && needed != Scope::Admin && needed != Scope::Read {
            " (or `read`, as it only reads)"
        } else {
            ""
        };
    ApiError::Forbidden(format!(
        "This endpoint needs the `{}` scope{also}; this key has: {held}.",
        needed.as_str()
    ))
}

/// A network in `allowed_ips`: an address and how many leading bits must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl IpNet {
    /// `203.0.113.0/24`, `2001:db8::/32`, or one address (all its bits).
    pub fn parse(text: &str) -> Option<IpNet> {
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((addr, bits)) => (addr, Some(bits)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(bits) if !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()) => {
                bits.parse::<u8>().ok().filter(|&p| p <= max)?
            }
            Some(_) => return None,
            None => max,
        };
        // Written as an IPv4-mapped IPv6 network (`::ffff:203.0.113.9`), it is the IPv4
        // network a client's address is compared with (`contains` maps clients the same way);
        // kept as IPv6 it could never match.
        let (addr, prefix) = match addr {
            IpAddr::V6(v6) => match (v6.to_ipv4_mapped(), prefix >= 96) {
                (Some(v4), true) => (IpAddr::V4(v4), prefix - 96),
                _ => (addr, prefix),
            },
            v4 => (v4, prefix),
        };
        // Stored as the network it names: "203.0.113.7/24" is 203.0.113.0/24.
        let addr = match addr {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V4((u32::from(v4) & mask).into())
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
        };
        Some(IpNet { addr, prefix })
    }

    /// Whether every address of `net` is in this network.
    pub fn holds(&self, net: &IpNet) -> bool {
        net.prefix >= self.prefix && self.contains(net.addr)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 client may reach an IPv6 socket as ::ffff:a.b.c.d.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_matches(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(ip)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_matches(u128::from(net), u128::from(ip), self.prefix)
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn prefix_matches(a: u128, b: u128, prefix: u8) -> bool {
    match prefix {
        0 => true,
        p => (a ^ b) >> (128 - u32::from(p.min(128))) == 0,
    }
}

/// Whether `client` (the `CF-Connecting-IP` header) may use a key restricted to `allowed`. An
/// empty list restricts nothing; a restricted key with no readable client address is refused.
pub fn ip_allowed(allowed: &[IpNet], client: Option<&str>) -> bool {
    if allowed.is_empty() {
        return true;
    }
    client
        .and_then(|c| c.trim().parse::<IpAddr>().ok())
        .is_some_and(|ip| allowed.iter().any(|net| net.contains(ip)))
}

/// The network a client address stands for when counting what one client does: an IPv4
/// address itself, an IPv6 address its /64 (one subscriber's usual allotment, so a host cannot
/// become a new client by changing its low 64 bits), an IPv4-mapped one its IPv4 address.
/// Text that is no address is kept as it is, trimmed.
pub fn client_network(address: &str) -> String {
    let address = address.trim();
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.to_string(),
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let network = u128::from(v6) >> 64 << 64;
                format!("{}/64", std::net::Ipv6Addr::from(network))
            }
        },
        Err(_) => address.to_string(),
    }
}

pub const MAX_ALLOWED_IPS: usize = 50;
/// What a key's own `rate_limit` may be: requests, and seconds.
pub const KEY_RATE_LIMIT_COUNT_RANGE: (i64, i64) = (1, 100_000);
pub const KEY_RATE_LIMIT_WINDOW_RANGE: (i64, i64) = (1, 3_600);

/// What limits a key, beside its account: set when it is created.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPolicy {
    pub scopes: Vec<Scope>,
    /// `time::format`ted; `None`: never.
    pub expires_at: Option<String>,
    pub allowed_ips: Vec<IpNet>,
    /// `[requests, seconds]`; `None`: the service's default (`Config::key_rate_limit`).
    pub rate_limit: Option<(i64, i64)>,
}

impl Default for KeyPolicy {
    /// A key as every key was before scopes: all of it, forever, from anywhere.
    fn default() -> Self {
        KeyPolicy {
            scopes: vec![Scope::Admin],
            expires_at: None,
            allowed_ips: Vec::new(),
            rate_limit: None,
        }
    }
}

impl KeyPolicy {
    /// Reads `scopes`, `expires_at`, `allowed_ips` and `rate_limit` of a create body. `granter`
    /// is what the creating key may do (`None` for the operator), with the rate its own
    /// `rate_limit: None` stands for (the service's default): a key only hands out scopes it
    /// has. `now` is `time::format`ted.
    pub fn from_body(
        body: &Body,
        granter: Option<(&KeyPolicy, (i64, i64))>,
        now: &str,
    ) -> ApiResult<KeyPolicy> {
        let mut policy = KeyPolicy::default();
        if let Some(names) = body.opt_string_array("scopes", Scope::ALL.len())? {
            let mut scopes = Vec::new();
            for name in names {
                let scope = Scope::parse(&name).ok_or_else(|| {
                    ApiError::invalid(
                        "scopes",
                        format!("Each scope must be one of: {}.", Scope::NAMES.join(", ")),
                    )
                })?;
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            if scopes.is_empty() {
                return Err(ApiError::invalid(
                    "scopes",
                    "A key needs at least one scope.",
                ));
            }
            policy.scopes = scopes;
        }
        if let Some((granter, _)) = granter {
            if let Some(wider) = policy
                .scopes
                .iter()
                .find(|wanted| !granter.scopes.iter().any(|held| held.covers(**wanted)))
            {
                return Err(ApiError::Forbidden(format!(
                    "A key can only create keys with scopes it has; this one cannot give `{}`.",
                    wider.as_str()
                )));
            }
        }
        match body.raw("expires_at") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => {
                let at = crate::time::parse(text).ok_or_else(|| {
                    ApiError::invalid(
                        "expires_at",
                        "`expires_at` must be a timestamp such as 2030-01-31T12:00:00Z.",
                    )
                })?;
                // Both are the same fixed-width format, so text order is time order.
                if at.as_str() <= now {
                    return Err(ApiError::invalid(
                        "expires_at",
                        "`expires_at` must be in the future.",
                    ));
                }
                policy.expires_at = Some(at);
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    "expires_at",
                    "`expires_at` must be a timestamp string or null.",
                ))
            }
        }
        if let Some(entries) = body.opt_string_array("allowed_ips", MAX_ALLOWED_IPS)? {
            policy.allowed_ips = entries
                .iter()
                .map(|e| {
                    IpNet::parse(e).ok_or_else(|| {
                        ApiError::invalid(
                            "allowed_ips",
                            format!(
                                "`{e}` is not an address or a CIDR network such as 203.0.113.0/24."
                            ),
                        )
                    })
                })
                .collect::<ApiResult<_>>()?;
        }
        match body.raw("rate_limit") {
            None | Some(Value::Null) => {}
            Some(value) => {
                policy.rate_limit = Some(parse_pair(
                    "rate_limit",
                    "requests",
                    value,
                    KEY_RATE_LIMIT_COUNT_RANGE,
                    KEY_RATE_LIMIT_WINDOW_RANGE,
                )?)
            }
        }
        if let Some((granter, default_rate)) = granter {
            policy.stay_within(granter, default_rate)?;
        }
        Ok(policy)
    }

    /// A key made by a key is held to its maker's other limits too, or a key limited in time,
    /// place or rate could make itself an unlimited twin. What the body leaves out is taken
    /// from the maker; what it asks beyond the maker is refused.
    fn stay_within(&mut self, granter: &KeyPolicy, default_rate: (i64, i64)) -> ApiResult<()> {
        let beyond = |what: &str| {
            Err(ApiError::Forbidden(format!(
                "A key can only create keys within its own limits; this one cannot give {what}."
            )))
        };
        if let Some(limit) = &granter.expires_at {
            match &self.expires_at {
                None => self.expires_at = Some(limit.clone()),
                Some(at) if at > limit => {
                    return beyond(&format!("an `expires_at` later than its own ({limit})"))
                }
                Some(_) => {}
            }
        }
        if !granter.allowed_ips.is_empty() {
            if self.allowed_ips.is_empty() {
                self.allowed_ips = granter.allowed_ips.clone();
            } else if let Some(outside) = self
                .allowed_ips
                .iter()
                .find(|net| !granter.allowed_ips.iter().any(|held| held.holds(net)))
            {
                return beyond(&format!("`{outside}` in `allowed_ips`"));
            }
        }
        if self.rate_limit.is_none() {
            self.rate_limit = granter.rate_limit;
        }
        if let Some((c, w)) = self.rate_limit {
            let (count, window) = granter.rate_limit.unwrap_or(default_rate);
            // More requests in one window, or more per second (compared without division),
            // than the maker: a burst or a pace it does not have.
            if c > count || c * window > count * w {
                return beyond(&format!(
                    "a `rate_limit` above its own ({count} requests in {window} s)"
                ));
            }
        }
        Ok(())
    }

    /// Whether the key has expired at `now` (`time::format`ted).
    pub fn expired(&self, now: &str) -> bool {
        self.expires_at.as_deref().is_some_and(|at| at <= now)
    }
}

/// A stored key, never with its secret.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKey {
    pub uuid: String,
    pub account_uuid: String,
    pub name: String,
    pub prefix: String,
    pub created_at: String,
    pub policy: KeyPolicy,
    /// When it last opened a request, to the minute (`LAST_USED_RESOLUTION_SECS`).
    pub last_used_at: Option<String>,
}

/// `last_used_at` is written at most this often per key, so reading with a key does not turn
/// every request into a write.
pub const LAST_USED_RESOLUTION_SECS: i64 = 60;

impl ApiKey {
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "name": self.name,
            "account_uuid": self.account_uuid,
            "prefix": self.prefix,
            "created_at": self.created_at,
            "scopes": self.policy.scopes,
            "expires_at": self.policy.expires_at,
            "allowed_ips": self.policy.allowed_ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "rate_limit": self.policy.rate_limit,
            "last_used_at": self.last_used_at,
        })
    }

    /// The create answer: the only time the key itself is shown.
    pub fn to_json_with_secret(&self, key: &str) -> Value {
        let mut v = self.to_json();
        v["key"] = Value::String(key.to_string());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_prefixed_and_hash_stably() {
        let a = generate_key().unwrap();
        let b = generate_key().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(KEY_PREFIX));
        assert_eq!(a.len(), KEY_PREFIX.len() + 64);
        assert_eq!(hash_key(&a), hash_key(&a));
        assert_ne!(hash_key(&a), hash_key(&b));
        assert!(!hash_key(&a).contains(&a[KEY_PREFIX.len()..]));
        // SHA-256 of "abc", a published test vector.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(display_prefix(&a).len(), KEY_PREFIX.len() + 6);
    }

    #[test]
    fn constant_time_eq_compares_whole_inputs() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer   abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic abc")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(Some("abc")), None);
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn listed_keys_carry_no_secret() {
        let k = ApiKey {
            uuid: "u".into(),
            account_uuid: "a".into(),
            name: "n".into(),
            prefix: "ec_123456".into(),
            created_at: "t".into(),
            policy: KeyPolicy::default(),
            last_used_at: None,
        };
        assert!(k.to_json().get("key").is_none());
        assert_eq!(k.to_json_with_secret("ec_secret")["key"], "ec_secret");
    }

    fn body(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    const NOW: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn scopes_open_what_they_say() {
        use Scope::*;
        assert!(Admin.grants(Admin, "DELETE"));
        assert!(!Manage.grants(Admin, "GET"));
        assert!(Manage.grants(Manage, "POST") && Manage.grants(Chat, "POST"));
        assert!(Chat.grants(Chat, "POST") && Chat.grants(Chat, "GET"));
        assert!(!Chat.grants(Manage, "GET") && !Chat.grants(Read, "GET"));
        assert!(Read.grants(Manage, "GET") && Read.grants(Chat, "GET") && Read.grants(Read, "GET"));
        assert!(!Read.grants(Chat, "POST") && !Read.grants(Admin, "GET"));
        assert!(Read.grants(Manage, "HEAD") && !Read.grants(Admin, "HEAD"));
        assert!(scopes_grant(&[Chat, Read], Manage, "GET"));
        let err = missing_scope(&[Chat], Manage, "GET");
        assert_eq!(err.status(), 403);
        assert!(
            err.public_message().contains("`manage`"),
            "{}",
            err.public_message()
        );
        assert!(err.public_message().contains("`read`"));
        assert!(missing_scope(&[Read], Chat, "POST")
            .public_message()
            .contains("`chat`"));
    }

    #[test]
    fn a_key_hands_out_only_what_it_has() {
        use Scope::*;
        let make = |v: Value, scopes: Option<&[Scope]>| {
            let granter = scopes.map(|scopes| KeyPolicy {
                scopes: scopes.to_vec(),
                ..KeyPolicy::default()
            });
            KeyPolicy::from_body(
                &Body(&body(v)),
                granter.as_ref().map(|g| (g, DEFAULT_RATE)),
                NOW,
            )
        };
        assert_eq!(
            make(json!({}), Some(&[Admin])).unwrap(),
            KeyPolicy::default()
        );
        assert_eq!(
            make(json!({"scopes": ["chat", "read", "chat"]}), Some(&[Admin]))
                .unwrap()
                .scopes,
            vec![Chat, Read]
        );
        assert!(make(json!({"scopes": ["read"]}), Some(&[Manage])).is_ok());
        for (wanted, granter) in [
            (json!({"scopes": ["admin"]}), &[Manage][..]),
            (json!({}), &[Manage][..]),
            (json!({"scopes": ["manage"]}), &[Chat, Read][..]),
            (json!({"scopes": ["read"]}), &[Chat][..]),
        ] {
            assert_eq!(make(wanted, Some(granter)).unwrap_err().status(), 403);
        }
        assert!(
            make(json!({"scopes": ["admin"]}), None).is_ok(),
            "the operator gives anything"
        );
        for bad in [
            json!({"scopes": []}),
            json!({"scopes": ["root"]}),
            json!({"scopes": "read"}),
        ] {
            assert_eq!(make(bad, None).unwrap_err().field(), Some("scopes"));
        }
    }

    /// The service's default key rate in these tests.
    const DEFAULT_RATE: (i64, i64) = (600, 60);

    #[test]
    fn a_key_on_the_default_rate_makes_keys_within_it() {
        let granter = KeyPolicy::default();
        let make =
            |v: Value| KeyPolicy::from_body(&Body(&body(v)), Some((&granter, DEFAULT_RATE)), NOW);
        assert_eq!(make(json!({})).unwrap().rate_limit, None);
        assert_eq!(
            make(json!({"rate_limit": [100, 60]})).unwrap().rate_limit,
            Some((100, 60))
        );
        let err = make(json!({"rate_limit": [36000, 3600]})).unwrap_err();
        assert_eq!(err.status(), 403);
    }

    #[test]
    fn a_key_made_by_a_limited_key_stays_within_its_limits() {
        let granter = KeyPolicy {
            scopes: vec![Scope::Admin],
            expires_at: Some("2026-01-02T00:00:00Z".into()),
            allowed_ips: vec![IpNet::parse("10.0.0.0/8").unwrap()],
            rate_limit: Some((5, 60)),
        };
        let make =
            |v: Value| KeyPolicy::from_body(&Body(&body(v)), Some((&granter, DEFAULT_RATE)), NOW);
        let inherited = make(json!({})).unwrap();
        assert_eq!(
            (inherited.expires_at.as_deref(), inherited.rate_limit),
            (Some("2026-01-02T00:00:00Z"), Some((5, 60)))
        );
        assert_eq!(inherited.allowed_ips, granter.allowed_ips);
        let narrower = make(json!({"expires_at": "2026-01-01T12:00:00Z", "allowed_ips": ["10.1.0.0/16", "10.2.3.4"], "rate_limit": [5, 120]})).unwrap();
        assert_eq!(narrower.allowed_ips.len(), 2);
        assert_eq!(narrower.rate_limit, Some((5, 120)));
        for wider in [
            json!({"expires_at": "2026-01-03T00:00:00Z"}),
            json!({"allowed_ips": ["10.1.0.0/16", "192.0.2.1"]}),
            json!({"allowed_ips": ["0.0.0.0/0"]}),
            json!({"rate_limit": [1, 10]}),
            json!({"rate_limit": [6, 60]}),
            // The same pace, but a burst of 60 where the maker has 5.
            json!({"rate_limit": [60, 720]}),
        ] {
            let err = make(wider.clone()).unwrap_err();
            assert_eq!(err.status(), 403, "{wider}");
            assert!(err.public_message().contains("within its own limits"));
        }
    }

    #[test]
    fn expiry_addresses_and_rate_are_validated() {
        let make = |v: Value| KeyPolicy::from_body(&Body(&body(v)), None, NOW);
        let p = make(json!({"expires_at": "2026-01-01T01:00:00+01:00"}));
        assert_eq!(
            p.unwrap_err().field(),
            Some("expires_at"),
            "an hour ago in UTC"
        );
        let p = make(json!({"expires_at": "2026-01-02T00:00:00Z", "allowed_ips": ["10.0.0.0/8", "2001:db8::1"], "rate_limit": [100, 60]})).unwrap();
        assert_eq!(p.expires_at.as_deref(), Some("2026-01-02T00:00:00Z"));
        assert!(!p.expired(NOW) && p.expired("2026-01-02T00:00:00Z"));
        assert_eq!(
            p.allowed_ips
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec!["10.0.0.0/8", "2001:db8::1/128"]
        );
        assert_eq!(p.rate_limit, Some((100, 60)));
        for (bad, field) in [
            (json!({"expires_at": "soon"}), "expires_at"),
            (json!({"expires_at": 5}), "expires_at"),
            (json!({"allowed_ips": ["10.0.0.0/33"]}), "allowed_ips"),
            (json!({"allowed_ips": ["10.0.0/8"]}), "allowed_ips"),
            (json!({"allowed_ips": ["::/129"]}), "allowed_ips"),
            (json!({"allowed_ips": ["1.2.3.4/"]}), "allowed_ips"),
            (json!({"rate_limit": [0, 60]}), "rate_limit"),
            (json!({"rate_limit": [10, 3601]}), "rate_limit"),
        ] {
            assert_eq!(make(bad).unwrap_err().field(), Some(field));
        }
    }

    #[test]
    fn addresses_match_their_networks() {
        let nets: Vec<IpNet> = ["203.0.113.0/24", "2001:db8::/32", "192.0.2.7"]
            .iter()
            .map(|n| IpNet::parse(n).unwrap())
            .collect();
        assert!(ip_allowed(&nets, Some("203.0.113.200")));
        assert!(ip_allowed(&nets, Some("::ffff:203.0.113.9")));
        assert!(ip_allowed(&nets, Some("2001:db8:1::5")));
        assert!(ip_allowed(&nets, Some("192.0.2.7")));
        assert!(!ip_allowed(&nets, Some("192.0.2.8")));
        assert!(!ip_allowed(&nets, Some("203.0.114.1")));
        assert!(!ip_allowed(&nets, Some("2001:db9::1")));
        assert!(!ip_allowed(&nets, None));
        assert!(!ip_allowed(&nets, Some("not an address")));
        assert!(ip_allowed(&[], None), "no list, no restriction");
        let everything = [IpNet::parse("0.0.0.0/0").unwrap()];
        assert!(ip_allowed(&everything, Some("8.8.8.8")));
        assert!(!ip_allowed(&everything, Some("::1")));
    }

    #[test]
    fn mapped_networks_are_read_as_ipv4() {
        let one = IpNet::parse("::ffff:203.0.113.9").unwrap();
        assert_eq!(one.to_string(), "203.0.113.9/32");
        assert!(ip_allowed(&[one], Some("203.0.113.9")));
        assert!(ip_allowed(&[one], Some("::ffff:203.0.113.9")));
        assert!(!ip_allowed(&[one], Some("203.0.113.10")));
        let all_v4 = IpNet::parse("::ffff:0:0/96").unwrap();
        assert_eq!(all_v4.to_string(), "0.0.0.0/0");
        assert!(ip_allowed(&[all_v4], Some("198.51.100.1")));
        let wider = IpNet::parse("::/64").unwrap();
        assert_eq!(
            wider.to_string(),
            "::/64",
            "not a mapped network: kept as IPv6"
        );
        // A network is kept as the network it names, whatever host bits were written.
        assert_eq!(
            IpNet::parse("203.0.113.7/24").unwrap().to_string(),
            "203.0.113.0/24"
        );
        assert_eq!(
            IpNet::parse("2001:db8::5/32").unwrap().to_string(),
            "2001:db8::/32"
        );
        assert_eq!(IpNet::parse("0.0.0.0/0").unwrap().to_string(), "0.0.0.0/0");
    }

    #[test]
    fn clients_are_counted_by_network() {
        assert_eq!(client_network(" 198.51.100.50 "), "198.51.100.50");
        assert_eq!(client_network("2001:db8::1"), "2001:db8::/64");
        assert_eq!(
            client_network("2001:db8:0:0:ffff:1:2:3"),
            client_network("2001:db8::2")
        );
        assert_ne!(
            client_network("2001:db8:0:1::1"),
            client_network("2001:db8::1")
        );
        assert_eq!(client_network("::ffff:198.51.100.50"), "198.51.100.50");
        assert_eq!(client_network("unknown"), "unknown");
    }
}
