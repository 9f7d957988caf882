//! The command line.

use std::path::PathBuf;

use clap::Parser;
use dgsp_core::ParamSet;

/// Measures DGSP against classical, post-quantum and anonymous signatures in one run on this
/// machine, and writes the tables and plots of docs/comparison.md.
///
/// The full run (`cargo bench -p dgsp-comparison --bench compare`) takes about 15 minutes on 2 cores
/// and rewrites docs/comparison/ and the generated blocks of docs/comparison.md. `--smoke`
/// takes seconds and writes into a temporary directory (CI).
#[derive(Debug, Parser)]
#[command(name = "dgsp-compare", version)]
pub struct Options {
    /// Seconds-long run: two sets, tiny samples, small sweeps, no signer build; writes into
    /// `dgsp-compare-smoke` in the temporary directory (emptied first) unless --out is given.
    #[arg(long)]
    pub smoke: bool,

    /// DGSP parameter sets, comma-separated names or `all` (default: all 24; smoke:
    /// sha2-128f,slh-dsa-sha2-128f).
    #[arg(long, value_delimiter = ',')]
    pub sets: Option<Vec<String>>,

    /// Where results.md, results.json and the plots go (default: docs/comparison).
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// The document whose generated blocks are rewritten (default: docs/comparison.md; smoke:
    /// a copy of it in the output directory).
    #[arg(long)]
    pub doc: Option<PathBuf>,

    /// Leave out the group-size and revoked-list sweeps.
    #[arg(long)]
    pub skip_sweeps: bool,

    /// Do not build the signer-only probe (no build sizes, no signer process memory).
    #[arg(long)]
    pub skip_build: bool,

    /// Measure a full run in an unoptimised build anyway.
    #[arg(long)]
    pub allow_debug: bool,

    /// Passed by `cargo bench` to every bench target; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

impl Options {
    /// The sets to run.
    pub fn parameter_sets(&self) -> Result<Vec<ParamSet>, String> {
        match &self.sets {
            None if self.smoke => Ok(vec![ParamSet::Sha2_128f, ParamSet::SlhDsaSha2_128f]),
            None => Ok(ParamSet::ALL.to_vec()),
            Some(names) if names.iter().any(|n| n == "all") => Ok(ParamSet::ALL.to_vec()),
            Some(names) => names
                .iter()
                .map(|n| n.parse::<ParamSet>().map_err(|e| e.to_string()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets() {
        let o = Options::parse_from(["dgsp-compare", "--smoke"]);
        assert_eq!(o.parameter_sets().unwrap().len(), 2);
        let o = Options::parse_from(["dgsp-compare"]);
        assert_eq!(o.parameter_sets().unwrap().len(), 24);
        let o = Options::parse_from(["dgsp-compare", "--sets", "sha2-128s,shake-256f"]);
        assert_eq!(
            o.parameter_sets().unwrap(),
            vec![ParamSet::Sha2_128s, ParamSet::Shake256f]
        );
        let o = Options::parse_from(["dgsp-compare", "--sets", "nope"]);
        assert!(o.parameter_sets().is_err());
    }
}
