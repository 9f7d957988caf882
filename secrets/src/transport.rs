//! Secrets in transit: the one rule for where a bearer token (admin, auditor) may be sent
//! over plain `http://`. Every client that sends one (`dgsp-manager`, `dgsp-registry
//! backup --registry`) checks it before connecting.
//!
//! A token goes over `https://` anywhere, and over plain `http://` only to a loopback host
//! (`localhost`, `127.0.0.0/8`, `::1`): there it never crosses a network. Anywhere else it
//! would cross the network in clear, for anyone on the path to read and replay, so it is
//! refused unless the user says the network is trusted ([`ALLOW_FLAG`], or its variable
//! [`ALLOW_ENV`]).

use std::net::{IpAddr, Ipv6Addr};

/// The command-line flag that allows a token over plain HTTP to a host that is not
/// loopback.
pub const ALLOW_FLAG: &str = "--allow-plain-http";

/// Its environment variable (`DGSP_ALLOW_PLAIN_HTTP=1`).
pub const ALLOW_ENV: &str = "DGSP_ALLOW_PLAIN_HTTP";

/// A token refused for plain HTTP to a host that is not loopback.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: refusing to send the {token} token over plain http:// to {host}, which is not loopback: anyone on the network could read it; use https:// (with --ca-file for a private CA), or pass {ALLOW_FLAG} ({ALLOW_ENV}=1) if this network is trusted")]
pub struct PlainHttpRefused {
    /// the URL
    pub url: String,
    /// its host
    pub host: String,
    /// which token (`admin`, `auditor`)
    pub token: &'static str,
}

/// Whether `host` (a URL's host: a name, an IPv4 address, or an IPv6 address with or
/// without its brackets) is loopback: `localhost` (any case, an optional final dot),
/// `127.0.0.0/8`, `::1`, or an IPv4-mapped loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.trim_end_matches('.').eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.is_loopback(),
        Ok(IpAddr::V6(v6)) => v6.is_loopback() || mapped_loopback(&v6),
        Err(_) => false,
    }
}

fn mapped_loopback(v6: &Ipv6Addr) -> bool {
    v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
}

/// Checks that the `token` token (`admin`, `auditor`) may be sent to `url`, whose scheme
/// and host the caller parsed: any scheme but `http`, or `http` to a loopback host, or
/// `allow_plain_http`.
pub fn check_token_destination(
    url: &str,
    scheme: &str,
    host: &str,
    token: &'static str,
    allow_plain_http: bool,
) -> Result<(), PlainHttpRefused> {
    if !scheme.eq_ignore_ascii_case("http") || allow_plain_http || is_loopback_host(host) {
        return Ok(());
    }
    Err(PlainHttpRefused {
        url: url.to_owned(),
        host: host.to_owned(),
        token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "127.0.0.1",
            "127.1.2.3",
            "::1",
            "[::1]",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "10.255.255.1",
            "192.168.1.1",
            "0.0.0.0",
            "[::]",
            "registry",
            "localhost.example.com",
            "evil-localhost",
            "128.0.0.1",
            "[fe80::1]",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn plain_http_is_refused_off_loopback_unless_allowed() {
        let check = |scheme, host, allow| {
            check_token_destination("u", scheme, host, "admin", allow).is_ok()
        };
        assert!(check("https", "10.0.0.1", false));
        assert!(check("http", "127.0.0.1", false));
        assert!(check("http", "localhost", false));
        assert!(!check("http", "10.0.0.1", false));
        assert!(!check("HTTP", "registry.example", false));
        assert!(check("http", "10.0.0.1", true));
        let e = check_token_destination("http://10.0.0.1:7300", "http", "10.0.0.1", "admin", false)
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(ALLOW_FLAG) && text.contains("admin token"),
            "{text}"
        );
    }
}
