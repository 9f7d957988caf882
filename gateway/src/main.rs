//! `dgsp-gateway`: see `dgsp-gateway --help`.

use std::process::ExitCode;

use clap::Parser;
use dgsp_gateway::cli::{Cli, Command, ServeArgs};
use dgsp_gateway::witnessing::WitnessKey;
use dgsp_gateway::{api, server};
use dgsp_http::process::{init_logging, shutdown_signal};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.log_format);
    let result = match cli.command {
        Command::Serve(args) => serve(&args),
        Command::Openapi => {
            print!("{}", api::openapi::document());
            Ok(())
        }
        Command::WitnessKey(args) => witness_key(&args.out, &args.name),
        Command::WitnessVkey { key } => WitnessKey::load(&key)
            .and_then(|k| k.vkey())
            .map(|vkey| println!("{vkey}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes a new witness key file and prints its vkey.
fn witness_key(out: &std::path::Path, name: &str) -> Result<(), String> {
    let key = WitnessKey::generate(name)?;
    let vkey = key.vkey()?;
    key.write_new(out)?;
    println!("{vkey}");
    Ok(())
}

fn serve(args: &ServeArgs) -> Result<(), String> {
    let config = args.config()?;
    let tls = args
        .tls_files()
        .map(|files| dgsp_http::tls::Tls::load(files).map_err(|e| format!("TLS: {e}")))
        .transpose()?;
    let listen = args.listen;
    let limits = args.listener_limits();
    let layout = args.layout();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(layout.http_threads)
        .thread_name("dgsp-http")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let tcp = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("{listen}: {e}"))?;
        let listener = dgsp_http::tls::Listen::new(tcp, tls)
            .map_err(|e| format!("the SIGHUP handler: {e}"))?
            .with_limits(limits);
        let scheme = listener.scheme();
        let registry = config.follow.registry.clone();
        let running = server::start(config, listener)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(%listen, %scheme, %registry, %layout, "gateway serving");
        running
            .serve_until(shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })?;
    tracing::info!("gateway stopped");
    Ok(())
}
