//! `dgsp-registry`: the manager's event-sourced registry (issue: Registry).
//!
//! This binary is a placeholder until its own issue lands: it links `dgsp-core` and reports
//! the parameter sets it would serve, so the workspace builds end to end.

fn main() {
    let sets: Vec<&str> = dgsp_core::ParamSet::ALL.iter().map(|p| p.name()).collect();
    println!(
        "{} {} (dgsp-core {}): not implemented yet; parameter sets: {}",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION"),
        dgsp_core::VERSION,
        sets.join(", ")
    );
    std::process::exit(2);
}
