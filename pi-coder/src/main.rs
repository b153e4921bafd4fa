//! The `pi` command-line coding agent. Run `pi --help`.

use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("pi: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(pi_coder::cli::main());
    // A line prompt reads standard input on one of the runtime's blocking threads, and that
    // read returns only at the next line: the default shutdown waits for it, so Ctrl-C (or
    // /quit) at an idle prompt would end pi only after another Enter. Everything pi must finish
    // is awaited before `main` returns; the abandoned read is all that is left.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}
