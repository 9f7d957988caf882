//! `dgsp-manager`: the operator / member / verifier / auditor command. See `--help`.

use clap::Parser;
use dgsp_manager::{cli::Cli, exit};

fn main() {
    let cli = Cli::parse();
    let json = cli.json;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = match runtime.block_on(dgsp_manager::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            if json {
                let err =
                    serde_json::json!({"error": {"kind": e.kind(), "message": e.to_string()}});
                eprintln!("{err}");
            } else {
                eprintln!("error: {e}");
            }
            exit::ERROR
        }
    };
    std::process::exit(code);
}
