//! `tools/call` round trips per second, one call at a time, for the same tiny `echo` tool served
//! by pi-mcp (validating its arguments), rmcp's own `#[tool_router]` server (not validating) and
//! Python FastMCP, over stdio and streamable HTTP; one client (rmcp's), one run, one machine.
//!
//! `cargo run --release -p pi-mcp-interop --features bench --bin pi-mcp-bench [CALLS]`
//!
//! `pi-mcp-bench load [SESSIONS] [CALLS]` (default 200 x 50) loads pi-mcp's HTTP server with
//! many sessions at once and measures what a session costs it (see `load.rs`).
//!
//! The servers: pi-mcp's is the interop tests' fixture server, which this binary builds with
//! `cargo build` in its own profile (or, without cargo or the sources, finds beside itself);
//! rmcp's is this binary itself (`pi-mcp-bench serve-rmcp stdio|http`); FastMCP comes from
//! `.ci/install-test-deps`'s venv (without it that row is left out). A server that cannot be
//! started is named in the error, and the run exits with status 1.

mod load;
mod rmcp_server;

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use pi_mcp_interop::test_deps;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

const WARM_UP: usize = 200;
const USAGE: &str = "usage: pi-mcp-bench [CALLS] | pi-mcp-bench load [SESSIONS] [CALLS] | \
                     pi-mcp-bench serve-rmcp stdio|http";
/// How long a server may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("serve-rmcp") => {
            let transport = args.get(1).map_or("", String::as_str);
            rmcp_server::serve(transport)
                .await
                .map_err(|err| format!("serve-rmcp: {err}\n{USAGE}"))
        }
        Some("load") => match (count(args.get(1), 200), count(args.get(2), 50)) {
            (Ok(sessions), Ok(calls)) => load_bench(sessions, calls).await,
            (Err(err), _) | (_, Err(err)) => Err(err),
        },
        None => bench(5000).await,
        Some(calls) => match calls.parse() {
            Ok(calls) => bench(calls).await,
            Err(_) => Err(format!("{calls:?} is not a number of calls\n{USAGE}")),
        },
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("pi-mcp-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// A count given on the command line, or `default`.
fn count(arg: Option<&String>, default: usize) -> Result<usize, String> {
    arg.map_or(Ok(default), |arg| {
        arg.parse()
            .map_err(|_| format!("{arg:?} is not a count\n{USAGE}"))
    })
}

async fn load_bench(sessions: usize, calls: usize) -> Result<(), String> {
    let pi = Server {
        name: "the pi-mcp server",
        program: fixture_server()?,
        args: Vec::new(),
    };
    load::run(&pi, sessions, calls).await
}

/// A server process the benchmark starts: `program args.. <transport>`.
struct Server {
    /// Who it is, for the messages: "the pi-mcp server".
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
}

impl Server {
    fn command(&self, transport: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .arg(transport)
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        command
    }

    fn describe(&self, transport: &str) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.args.iter().cloned());
        words.push(transport.to_owned());
        format!("{} (`{}`)", self.name, words.join(" "))
    }
}

async fn bench(calls: usize) -> Result<(), String> {
    let pi = Server {
        name: "the pi-mcp server",
        program: fixture_server()?,
        args: Vec::new(),
    };
    let rmcp = Server {
        name: "rmcp's server",
        program: std::env::current_exe().map_err(|err| format!("where is this binary? {err}"))?,
        args: vec!["serve-rmcp".to_owned()],
    };
    println!(
        "tools/call round trips/s, {calls} sequential calls of `echo` (after {WARM_UP} warm-up calls)\n"
    );
    println!("| server | stdio | HTTP |");
    println!("|---|---|---|");
    let pi_stdio = stdio(&pi, calls).await?;
    let pi_http = http(&pi, calls).await?;
    println!("| pi-mcp (validates) | {pi_stdio:.0} | {pi_http:.0} |");
    let rmcp_stdio = stdio(&rmcp, calls).await?;
    let rmcp_http = http(&rmcp, calls).await?;
    println!("| rmcp `#[tool_router]` | {rmcp_stdio:.0} | {rmcp_http:.0} |");
    let Some(deps) = test_deps() else {
        println!(
            "\npi-mcp / rmcp: stdio {:.2}x, HTTP {:.2}x (no FastMCP row: run .ci/install-test-deps)",
            pi_stdio / rmcp_stdio,
            pi_http / rmcp_http
        );
        return Ok(());
    };
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/fastmcp_bench_server.py");
    let fastmcp = Server {
        name: "Python FastMCP",
        program: deps.join("venv/bin/python"),
        args: vec![script.display().to_string()],
    };
    let fast_calls = calls / 5;
    let fast_stdio = stdio(&fastmcp, fast_calls).await?;
    let fast_http = fastmcp_http(&fastmcp, fast_calls).await?;
    println!("| Python FastMCP ({fast_calls} calls) | {fast_stdio:.0} | {fast_http:.0} |");
    println!(
        "\npi-mcp / rmcp: stdio {:.2}x, HTTP {:.2}x; pi-mcp / FastMCP: stdio {:.1}x, HTTP {:.1}x",
        pi_stdio / rmcp_stdio,
        pi_http / rmcp_http,
        pi_stdio / fast_stdio,
        pi_http / fast_http
    );
    Ok(())
}

/// The interop tests' fixture server (pi-mcp serving `echo` among their tools): built by
/// `cargo build` in this binary's profile and with its features, so that it is current; found
/// beside this binary when the sources or cargo are not there.
fn fixture_server() -> Result<PathBuf, String> {
    const NAME: &str = "pi-mcp-fixture-server";
    let exe = std::env::current_exe().map_err(|err| format!("where is this binary? {err}"))?;
    let exe_dir = exe.parent().unwrap_or(Path::new("."));
    let beside = exe_dir.join(format!("{NAME}{}", std::env::consts::EXE_SUFFIX));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let built = if manifest.is_file() {
        build(&manifest, NAME, exe_dir)
    } else {
        Err(format!(
            "no sources at {} to build it from",
            manifest.display()
        ))
    };
    match built {
        Ok(path) => Ok(path),
        Err(why) if beside.is_file() => {
            eprintln!(
                "pi-mcp-bench: {NAME} not built ({why}); using {}",
                beside.display()
            );
            Ok(beside)
        }
        Err(why) => Err(format!(
            "the pi-mcp server ({NAME}) could not be found: {why}, and it is not at {} \
             (build it with `cargo build --release -p pi-mcp-interop --features bench --bin {NAME}`)",
            beside.display()
        )),
    }
}

/// Builds the binary `bin` of the package at `manifest` with cargo (`$CARGO`, as `cargo run`
/// sets it, else `cargo` from `PATH`), in the profile whose output folder is `exe_dir` and into
/// the target folder above it, and returns the path cargo reports for it.
fn build(manifest: &Path, bin: &str, exe_dir: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(&cargo);
    command
        .args(["build", "--message-format=json-render-diagnostics"])
        .arg("--manifest-path")
        .arg(manifest)
        .args(["--features", "bench", "--bin", bin])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // A target folder has cargo's CACHEDIR.TAG (a `--target` build's `<triple>/` has not: its
    // target folder is then the default one, as for the first build).
    if let Some(target_dir) = exe_dir
        .parent()
        .filter(|dir| dir.join("CACHEDIR.TAG").is_file())
    {
        command.arg("--target-dir").arg(target_dir);
    }
    match exe_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(profile) => {
            command.args(["--profile", profile]);
        }
    }
    let output = command
        .output()
        .map_err(|err| format!("cannot run {}: {err}", Path::new(&cargo).display()))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo build --bin {bin}` failed ({})",
            output.status
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact" && message["target"]["name"] == bin
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("`cargo build --bin {bin}` reported no executable"))
}

async fn round_trips(
    client: &RunningService<rmcp::RoleClient, ()>,
    calls: usize,
) -> Result<f64, String> {
    let mut arguments = JsonObject::new();
    arguments.insert("text".into(), "hi".into());
    let request = CallToolRequestParams::new("echo").with_arguments(arguments);
    let call = || async {
        let result = client
            .call_tool(request.clone())
            .await
            .map_err(|err| format!("`echo` failed: {err}"))?;
        match result.is_error {
            Some(true) => Err(format!("`echo` returned an error: {:?}", result.content)),
            _ => Ok(()),
        }
    };
    for _ in 0..WARM_UP {
        call().await?;
    }
    let started = Instant::now();
    for _ in 0..calls {
        call().await?;
    }
    Ok(calls as f64 / started.elapsed().as_secs_f64())
}

async fn stdio(server: &Server, calls: usize) -> Result<f64, String> {
    let who = server.describe("stdio");
    let transport = TokioChildProcess::new(server.command("stdio"))
        .map_err(|err| format!("cannot start {who}: {err}"))?;
    let client = ().serve(transport).await.map_err(|err| format!("{who}: no MCP session: {err}"))?;
    let rate = round_trips(&client, calls)
        .await
        .map_err(|err| format!("{who}: {err}"))?;
    let _ = client.cancel().await;
    Ok(rate)
}

/// Starts `server` over HTTP (it prints `listening <url>` first) and measures it.
async fn http(server: &Server, calls: usize) -> Result<f64, String> {
    let who = server.describe("http");
    let (mut child, url) = start_http(server).await?;
    let rate = http_client(&url, calls)
        .await
        .map_err(|err| format!("{who}: {err}"))?;
    let _ = child.kill().await;
    Ok(rate)
}

/// Starts `server` over HTTP; it prints `listening <url>` first: the process and the URL.
async fn start_http(server: &Server) -> Result<(tokio::process::Child, String), String> {
    let who = server.describe("http");
    let mut child = server
        .command("http")
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start {who}: {err}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| format!("{who}: no stdout"))?;
    let mut line = String::new();
    let mut lines = tokio::io::BufReader::new(stdout);
    match tokio::time::timeout(START_TIMEOUT, lines.read_line(&mut line)).await {
        Ok(Ok(_)) => {}
        Ok(Err(err)) => return Err(format!("{who}: {err}")),
        Err(_) => return Err(format!("{who} said nothing in {START_TIMEOUT:?}")),
    }
    let url = line
        .trim()
        .strip_prefix("listening ")
        .ok_or_else(|| format!("{who} printed {line:?} instead of `listening <url>`"))?;
    Ok((child, url.to_owned()))
}

async fn http_client(url: &str, calls: usize) -> Result<f64, String> {
    let client = ()
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .map_err(|err| format!("no MCP session at {url}: {err}"))?;
    let rate = round_trips(&client, calls).await?;
    let _ = client.cancel().await;
    Ok(rate)
}

/// FastMCP over HTTP: started on a free port given to it; ready once the port answers.
async fn fastmcp_http(server: &Server, calls: usize) -> Result<f64, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|err| format!("no free port: {err}"))?
        .port();
    let who = server.describe(&format!("http {port}"));
    let mut command = server.command("http");
    let mut child = command
        .arg(port.to_string())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|err| format!("cannot start {who}: {err}"))?;
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if started.elapsed() > START_TIMEOUT {
            return Err(format!("{who} did not listen in {START_TIMEOUT:?}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rate = http_client(&format!("http://127.0.0.1:{port}/mcp"), calls)
        .await
        .map_err(|err| format!("{who}: {err}"))?;
    let _ = child.kill().await;
    Ok(rate)
}
