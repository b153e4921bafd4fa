//! The `pi` command-line coding agent. Run `pi --help`.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    pi_coder::cli::main().await
}
