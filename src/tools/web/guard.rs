//! Which addresses the model may not reach, and the check of a URL's host against them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;

use super::{WebSettings, host_listed};
use crate::tools::ToolError;

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressRule {
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, `fc00::/7`.
    Private,
    /// `169.254/16` (the cloud metadata service at `169.254.169.254`), `fe80::/10`.
    LinkLocal,
    /// `100.64/10`, the carriers' shared space.
    Cgnat,
    /// `224/4`, `ff00::/8`, and the broadcast address.
    Multicast,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `192.0.0.0/24` (protocol assignments, some clouds' services), `198.18.0.0/15`
    /// (benchmarking), `240.0.0.0/4` (reserved), `fec0::/10` (the old site-local).
    Reserved,
}

impl AddressRule {
    /// The rule's name in messages.
    pub fn describe(self) -> &'static str {
        match self {
            AddressRule::Loopback => "a loopback address",
            AddressRule::Private => "a private-network address",
            AddressRule::LinkLocal => "a link-local address (cloud metadata services live there)",
            AddressRule::Cgnat => "a carrier-grade NAT address (100.64.0.0/10)",
            AddressRule::Multicast => "a multicast or broadcast address",
            AddressRule::Unspecified => "an unspecified address",
            AddressRule::Reserved => "a reserved address",
        }
    }
}

/// The rule that refuses `ip`, if one does. IPv4 addresses inside IPv6 (mapped, NAT64,
/// compatible) are judged as the IPv4 address they carry.
pub fn address_rule(ip: IpAddr) -> Option<AddressRule> {
    match ip {
        IpAddr::V4(v4) => v4_rule(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_rule(v4),
            None => v6_rule(v6),
        },
    }
}

fn v4_rule(ip: Ipv4Addr) -> Option<AddressRule> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some(AddressRule::Loopback)
    } else if ip.is_private() {
        Some(AddressRule::Private)
    } else if ip.is_link_local() {
        Some(AddressRule::LinkLocal)
    } else if a == 100 && (64..128).contains(&b) {
        Some(AddressRule::Cgnat)
    } else if ip.is_multicast() || ip.is_broadcast() {
        Some(AddressRule::Multicast)
    } else if a == 0 {
        Some(AddressRule::Unspecified)
    } else if (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b & 0xfe) == 18)
        || a >= 240
    {
        Some(AddressRule::Reserved)
    } else {
        None
    }
}

fn v6_rule(ip: Ipv6Addr) -> Option<AddressRule> {
    if ip.is_loopback() {
        Some(AddressRule::Loopback)
    } else if ip.is_unspecified() {
        Some(AddressRule::Unspecified)
    } else if ip.is_unique_local() {
        Some(AddressRule::Private)
    } else if ip.is_unicast_link_local() {
        Some(AddressRule::LinkLocal)
    } else if ip.is_multicast() {
        Some(AddressRule::Multicast)
    } else if ip.segments()[0] & 0xffc0 == 0xfec0 {
        Some(AddressRule::Reserved)
    } else if ip.segments()[..3] == [0x64, 0xff9b, 1] {
        // Local-use NAT64 (RFC 8215): translated to whatever IPv4 the network chose.
        Some(AddressRule::Private)
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address carries: `::ffff:a.b.c.d`, `::ffff:0:a.b.c.d`
/// (IPv4-translated), `64:ff9b::a.b.c.d` (NAT64), `2002:AABB:CCDD::/48` (6to4), a Teredo
/// client's (`2001:0::/32`, the last 32 bits inverted), an ISATAP interface's
/// (`…:0:5efe:a.b.c.d`), `::a.b.c.d` (the deprecated compatible form; not `::` and `::1`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Some(tail);
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some(Ipv4Addr::from(!u32::from(tail)));
    }
    if s[5] == 0x5efe && (s[4] == 0 || s[4] == 0x0200) {
        return Some(tail);
    }
    if s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return Some(tail);
    }
    None
}

/// A URL's host and port and the addresses its host resolves to (an IP literal is its own
/// one address).
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The host as the URL names it (IPv6 literals in brackets).
    pub host: String,
    /// The port, the scheme's default when the URL names none.
    pub port: u16,
    /// Every address, never empty.
    pub addrs: Vec<SocketAddr>,
    /// True when the host is an IP literal (nothing was resolved).
    pub literal: bool,
}

/// Resolves `url`'s host (http and https only); errors start with `tool`.
pub async fn resolve(url: &Url, tool: &str) -> Result<Resolved, ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError(format!(
            "{tool}: {} is not an http or https URL",
            url.scheme()
        )));
    }
    let host = url
        .host_str()
        .ok_or_else(|| ToolError(format!("{tool}: {url} has no host")))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| ToolError(format!("{tool}: {url} has no port")))?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let literal = bare.parse::<IpAddr>().ok();
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| ToolError(format!("{tool}: cannot resolve {host}: {e}")))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(ToolError(format!("{tool}: {host} resolves to no address")));
    }
    Ok(Resolved {
        host: host.to_string(),
        port,
        addrs,
        literal: literal.is_some(),
    })
}

impl Resolved {
    /// The first address a rule refuses whose rule is not in `allowed`, worded for a
    /// message: `127.0.0.1 is a loopback address`, `localhost resolves to ::1, which is …`.
    pub fn refused(&self, allowed: &[AddressRule]) -> Option<(AddressRule, String)> {
        let (ip, rule) = self.addrs.iter().find_map(|a| {
            let rule = address_rule(a.ip())?;
            (!allowed.contains(&rule)).then_some((a.ip(), rule))
        })?;
        let host = &self.host;
        let text = if self.literal {
            format!("{host} is {}", rule.describe())
        } else {
            format!("{host} resolves to {ip}, which is {}", rule.describe())
        };
        Some((rule, text))
    }
}

/// The addresses `url` may be fetched from: its host resolved, every address checked
/// (unless the host is listed in `web.allow_private_hosts`). The connection is then pinned
/// to exactly these.
pub async fn checked_addresses(
    url: &Url,
    settings: &WebSettings,
) -> Result<Vec<SocketAddr>, ToolError> {
    let resolved = resolve(url, "web_fetch").await?;
    if !host_listed(&settings.allow_private_hosts, &resolved.host, resolved.port)
        && let Some((_, why)) = resolved.refused(&[])
    {
        return Err(ToolError(format!(
            "web_fetch: refused: {why}; odek does not fetch from loopback, private, link-local, CGNAT, multicast, unspecified or reserved addresses unless the host is listed in web.allow_private_hosts"
        )));
    }
    Ok(resolved.addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Option<AddressRule> {
        address_rule(text.parse().expect("ip"))
    }

    #[test]
    fn every_inside_range_is_named() {
        use AddressRule::*;
        for (ip, expected) in [
            ("127.0.0.1", Some(Loopback)),
            ("127.255.0.9", Some(Loopback)),
            ("::1", Some(Loopback)),
            ("10.1.2.3", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("192.168.1.1", Some(Private)),
            ("fd00::1", Some(Private)),
            ("169.254.169.254", Some(LinkLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("100.64.0.1", Some(Cgnat)),
            ("100.127.255.255", Some(Cgnat)),
            ("224.0.0.1", Some(Multicast)),
            ("255.255.255.255", Some(Multicast)),
            ("ff02::1", Some(Multicast)),
            ("0.0.0.0", Some(Unspecified)),
            ("::", Some(Unspecified)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("64:ff9b::10.0.0.1", Some(Private)),
            ("::10.0.0.1", Some(Private)),
            ("2002:7f00:1::", Some(Loopback)),
            ("2002:5db8:d822::1", None),
            ("64:ff9b:1::a00:1", Some(Private)),
            ("fec0::1", Some(Reserved)),
            ("192.0.0.192", Some(Reserved)),
            ("198.18.0.1", Some(Reserved)),
            ("198.19.255.255", Some(Reserved)),
            ("240.0.0.1", Some(Reserved)),
            ("192.0.2.1", None),
            ("93.184.216.34", None),
            ("172.32.0.1", None),
            ("100.128.0.1", None),
            ("2606:4700::1111", None),
            ("::ffff:8.8.8.8", None),
            ("::ffff:0:7f00:1", Some(Loopback)),
            ("::ffff:0:a9fe:a9fe", Some(LinkLocal)),
            // Teredo: the client's address inverted (127.0.0.1 → 80ff:fffe).
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", Some(Loopback)),
            ("fe80::5efe:10.0.0.1", Some(Private)),
            ("2001:db8::5efe:192.168.1.1", Some(Private)),
        ] {
            assert_eq!(rule(ip), expected, "{ip}");
        }
    }

    #[tokio::test]
    async fn literal_and_resolved_inside_addresses_are_refused_unless_listed() {
        let settings = WebSettings::default();
        for url in [
            "http://127.0.0.1:9/",
            "http://[::1]:9/",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:9/",
        ] {
            let e = checked_addresses(&Url::parse(url).expect("url"), &settings)
                .await
                .expect_err(url);
            assert!(e.0.starts_with("web_fetch: refused: "), "{e}");
            assert!(e.0.contains("web.allow_private_hosts"), "{e}");
        }
        let e = checked_addresses(&Url::parse("http://localhost:9/").expect("url"), &settings)
            .await
            .expect_err("localhost");
        assert!(e.0.contains("localhost resolves to "), "{e}");
        let listed = WebSettings {
            allow_private_hosts: vec!["localhost".into(), "127.0.0.1".into()],
            ..WebSettings::default()
        };
        for url in ["http://127.0.0.1:9/", "http://localhost:9/"] {
            let addrs = checked_addresses(&Url::parse(url).expect("url"), &listed)
                .await
                .expect(url);
            assert!(addrs.iter().all(|a| a.port() == 9), "{addrs:?}");
        }
        let e = checked_addresses(&Url::parse("file:///etc/passwd").expect("url"), &listed)
            .await
            .expect_err("file");
        assert!(e.0.contains("not an http or https URL"), "{e}");
    }
}
