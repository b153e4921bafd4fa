//! The `pi` command-line coding agent. Run `pi --help`.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    pi_coding_agent::cli::run(pi_coding_agent::cli::Args::parse()).await
}
