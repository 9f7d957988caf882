//! This process's memory as Linux reports it in `/proc/self/status` (`None` elsewhere).

/// A `/proc/self/status` field in KiB (`VmRSS`, `VmHWM`, ...).
pub fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&status, field)
}

/// The resident set now, in bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS").map(|k| k * 1024)
}

fn parse_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_lines() {
        let s = "Name:\tx\nVmHWM:\t  1234 kB\nVmRSS:\t  999 kB\n";
        assert_eq!(parse_kib(s, "VmHWM"), Some(1234));
        assert_eq!(parse_kib(s, "VmRSS"), Some(999));
        assert_eq!(parse_kib(s, "VmSwap"), None);
        if cfg!(target_os = "linux") {
            assert!(rss_bytes().unwrap() > 0);
        }
    }
}
