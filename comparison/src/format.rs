//! Numbers in words for tables and axes: times with three significant digits and a unit,
//! byte counts grouped by thousands.

use crate::measure::Estimate;

/// `ns` nanoseconds as `812 ns`, `10.2 µs`, `7.36 ms`, `1.87 s`.
pub fn time_ns(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", three_digits(value))
}

/// `s` seconds, as [`time_ns`].
pub fn seconds(s: f64) -> String {
    time_ns(s * 1e9)
}

/// A mean with its interval: `10.2 µs ±1.3%`.
pub fn estimate(e: &Estimate) -> String {
    let pct = e.relative_half_width() * 100.0;
    let pct = if pct < 0.1 {
        "<0.1".to_string()
    } else if pct < 10.0 {
        format!("{pct:.1}")
    } else {
        format!("{pct:.0}")
    };
    format!("{} ±{pct}%", time_ns(e.mean_ns))
}

fn three_digits(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A byte count grouped by thousands: `17 088`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// An axis label for a size: `64 B`, `10 KB`, `1.5 MB` (decimal units).
pub fn bytes(n: usize) -> String {
    let n = n as f64;
    if n < 1e3 {
        format!("{n:.0} B")
    } else if n < 1e6 {
        format!("{} KB", trim(n / 1e3))
    } else {
        format!("{} MB", trim(n / 1e6))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(time_ns(812.4), "812 ns");
        assert_eq!(time_ns(10_240.0), "10.2 µs");
        assert_eq!(time_ns(7_360_000.0), "7.36 ms");
        assert_eq!(time_ns(1.87e9), "1.87 s");
        assert_eq!(grouped(17_088), "17 088");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000_000), "1 000 000");
        assert_eq!(bytes(64), "64 B");
        assert_eq!(bytes(10_000), "10 KB");
        assert_eq!(bytes(1_500_000), "1.5 MB");
        let e = Estimate {
            mean_ns: 1000.0,
            low_ns: 987.0,
            high_ns: 1013.0,
            samples: 5,
            calls_per_sample: 1,
        };
        assert_eq!(estimate(&e), "1.00 µs ±1.3%");
    }
}

/// Today's date in UTC as `YYYY-MM-DD`, from the system clock.
pub fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date((secs / 86_400) as i64)
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (H. Hinnant's algorithm).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod date_tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_date(0), "1970-01-01");
        assert_eq!(super::civil_date(19_723), "2024-01-01");
        assert_eq!(super::civil_date(11_016), "2000-02-29");
    }
}
