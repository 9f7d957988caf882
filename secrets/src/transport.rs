//! Secrets in transit: the one rule for where a bearer token (admin, auditor) may be sent
//! over plain `http://`. Every client that sends one (`dgsp-manager`, `dgsp-registry
//! backup --registry`) checks it before connecting.
//!
//! A token goes over `https://` anywhere, and over plain `http://` only to a loopback host
//! (`localhost`, `127.0.0.0/8`, `::1`): there it never crosses a network. Anywhere else it
//! would cross the network in clear, for anyone on the path to read and replay, so it is
//! refused unless the user says the network is trusted ([`ALLOW_FLAG`], or its variable
//! [`ALLOW_ENV`]).
//!
//! A proxy is a destination too. A client sending a token uses the proxy the environment
//! names for its URL (`HTTP_PROXY`/`http_proxy` for `http://`, `HTTPS_PROXY`/`https_proxy`
//! for `https://`, else `ALL_PROXY`/`all_proxy`; none for a host `NO_PROXY`/`no_proxy`
//! lists: reqwest's own rules, [`token_proxy`]) only when the proxy passes the same rule:
//! an `https://` proxy, or one on a loopback host, or [`ALLOW_FLAG`]. Any other proxy (plain
//! `http://` or SOCKS to another host) is refused before anything is sent
//! ([`ProxyRefused`]), whatever the URL's own scheme: the way to reach such a host directly
//! is to list it in `NO_PROXY`.

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

/// A proxy from the environment that the token may not go through: not `https://`, and
/// not on a loopback host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: refusing to send the {token} token through the proxy {proxy} named by {variables}: it is not https:// and {host} is not loopback, so anyone on the network could read the token; list the URL's host in NO_PROXY to connect directly, use an https:// proxy, or pass {ALLOW_FLAG} ({ALLOW_ENV}=1) if this network is trusted")]
pub struct ProxyRefused {
    /// the URL the token was for
    pub url: String,
    /// the proxy (without any credentials it carries)
    pub proxy: String,
    /// the proxy's host
    pub host: String,
    /// the variables that name a proxy for this URL's scheme
    pub variables: &'static str,
    /// which token (`admin`, `auditor`)
    pub token: &'static str,
}

/// The proxy a client sending the `token` token to `url` may use: `Ok(None)` when the
/// environment names none for `url` (the client then turns the environment's proxies off:
/// `reqwest::ClientBuilder::no_proxy`), `Ok(Some(proxy))` when the one it names passes the
/// rule (the client keeps reqwest's environment proxy, which reads the same variables with
/// the same matcher), and [`ProxyRefused`] otherwise. A `url` that is not an absolute
/// `http://` or `https://` URI has no proxy.
pub fn token_proxy(
    url: &str,
    token: &'static str,
    allow_plain_http: bool,
) -> Result<Option<String>, ProxyRefused> {
    // What reqwest builds its environment proxy from (its `system-proxy` feature also reads
    // macOS and Windows settings through this constructor).
    let matcher = hyper_util::client::proxy::matcher::Matcher::from_system();
    proxy_for(&matcher, url, token, allow_plain_http)
}

fn proxy_for(
    matcher: &hyper_util::client::proxy::matcher::Matcher,
    url: &str,
    token: &'static str,
    allow_plain_http: bool,
) -> Result<Option<String>, ProxyRefused> {
    let Ok(dst) = url.parse::<http::Uri>() else {
        return Ok(None);
    };
    let Some(intercept) = matcher.intercept(&dst) else {
        return Ok(None);
    };
    let proxy = intercept.uri();
    let host = proxy.host().unwrap_or_default();
    let shown = proxy.to_string();
    if proxy.scheme_str() == Some("https") || allow_plain_http || is_loopback_host(host) {
        return Ok(Some(shown));
    }
    Err(ProxyRefused {
        url: url.to_owned(),
        proxy: shown,
        host: host.to_owned(),
        variables: if dst.scheme_str() == Some("https") {
            "HTTPS_PROXY, https_proxy or ALL_PROXY, all_proxy"
        } else {
            "HTTP_PROXY, http_proxy or ALL_PROXY, all_proxy"
        },
        token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::client::proxy::matcher::Matcher;

    #[test]
    fn a_proxy_passes_the_destination_rule_or_is_refused() {
        let via = |http: &str, https: &str, no: &str, url: &str, allow: bool| {
            let m = Matcher::builder().http(http).https(https).no(no).build();
            proxy_for(&m, url, "admin", allow)
        };
        // None named: none used.
        assert_eq!(via("", "", "", "http://127.0.0.1:7300", false), Ok(None));
        // A proxy elsewhere over plain http: refused, for http and https URLs alike.
        for (http, https, url) in [
            ("http://10.0.0.9:3128", "", "http://127.0.0.1:7300"),
            ("10.0.0.9:3128", "", "http://127.0.0.1:7300"),
            ("", "http://10.0.0.9:3128", "https://registry.example"),
            ("socks5://10.0.0.9:1080", "", "http://localhost:7300"),
            ("http://0.0.0.0:3128", "", "http://127.0.0.1:7300"),
        ] {
            let e = via(http, https, "", url, false).unwrap_err();
            assert_eq!(
                e.host,
                if http.contains("0.0.0.0") {
                    "0.0.0.0"
                } else {
                    "10.0.0.9"
                }
            );
            let text = e.to_string();
            assert!(
                text.contains("NO_PROXY")
                    && text.contains(ALLOW_FLAG)
                    && text.contains("admin token"),
                "{text}"
            );
        }
        // A proxy that passes the rule: https anywhere, loopback, or allowed.
        for (http, https, url, allow) in [
            (
                "https://proxy.example:443",
                "",
                "http://127.0.0.1:7300",
                false,
            ),
            ("http://127.0.0.2:3128", "", "http://127.0.0.1:7300", false),
            ("http://[::1]:3128", "", "http://127.0.0.1:7300", false),
            (
                "",
                "http://localhost:3128",
                "https://registry.example",
                false,
            ),
            ("http://10.0.0.9:3128", "", "http://127.0.0.1:7300", true),
        ] {
            assert!(
                via(http, https, "", url, allow).unwrap().is_some(),
                "{http} {https}"
            );
        }
        // NO_PROXY: the host is reached directly, so nothing is refused.
        assert_eq!(
            via(
                "http://10.0.0.9:3128",
                "",
                "127.0.0.1",
                "http://127.0.0.1:7300",
                false
            ),
            Ok(None)
        );
        assert_eq!(
            via(
                "",
                "http://10.0.0.9:3128",
                "example",
                "https://registry.example",
                false
            ),
            Ok(None)
        );
        // Credentials in the proxy's URL are not repeated in the refusal.
        let e = via(
            "http://user:secret@10.0.0.9:3128",
            "",
            "",
            "http://127.0.0.1:1",
            false,
        )
        .unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }

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
