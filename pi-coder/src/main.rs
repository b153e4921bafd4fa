//! The `pi` command-line coding agent. Run `pi --help`.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    pi_coder::cli::run(pi_coder::cli::Args::parse()).await
}
