//! The statistics of one measurement: mean and the half-width of its 95 % Student-t
//! confidence interval.

/// Two-sided 95 % quantiles of Student's t, `t(0.975, df)` for `df = 1..=30`.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// `t(0.975, df)`; the normal quantile 1.96 beyond the table.
pub fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df - 1],
        _ => 1.96,
    }
}

/// Mean of `xs` and the half-width of the 95 % interval of the mean (0 for one value).
pub fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t_975(n - 1) * (var / n as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_of_a_known_sample() {
        // mean 3, s = sqrt(2.5), n = 5: half-width 2.776 * sqrt(2.5 / 5).
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(m, 3.0);
        assert!((h - 2.776 * 0.5f64.sqrt()).abs() < 1e-9);
        assert_eq!(mean_ci95(&[7.0]), (7.0, 0.0));
        assert_eq!(mean_ci95(&[]), (0.0, 0.0));
        assert_eq!(t_975(100), 1.96);
    }
}
