//! `tools/call` round trips per second, one call at a time, for the same tiny `echo` tool served
//! by pi-mcp (validating its arguments), rmcp's own `#[tool_router]` server (not validating) and
//! Python FastMCP, over stdio and streamable HTTP; one client (rmcp's), one run, one machine.
//!
//! `cargo run --release -p pi-mcp-interop --features bench --bin pi-mcp-bench [CALLS]`
//! (FastMCP comes from `.ci/install-test-deps`'s venv; without it that row is left out).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use pi_mcp_interop::{ServerProcess, test_deps};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

const WARM_UP: usize = 200;

async fn round_trips(client: &RunningService<rmcp::RoleClient, ()>, calls: usize) -> f64 {
    let mut arguments = JsonObject::new();
    arguments.insert("text".into(), "hi".into());
    let request = CallToolRequestParams::new("echo").with_arguments(arguments);
    for _ in 0..WARM_UP {
        client.call_tool(request.clone()).await.expect("echo");
    }
    let started = Instant::now();
    for _ in 0..calls {
        let result = client.call_tool(request.clone()).await.expect("echo");
        assert_ne!(result.is_error, Some(true));
    }
    calls as f64 / started.elapsed().as_secs_f64()
}

async fn stdio(program: &Path, args: &[&str], calls: usize) -> f64 {
    let mut command = tokio::process::Command::new(program);
    command.args(args).stderr(Stdio::null());
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("connect");
    let rate = round_trips(&client, calls).await;
    let _ = client.cancel().await;
    rate
}

async fn http(url: &str, calls: usize) -> f64 {
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
            .await
            .expect("connect");
    let rate = round_trips(&client, calls).await;
    let _ = client.cancel().await;
    rate
}

/// FastMCP over HTTP: started on a free port; ready once the port answers.
async fn fastmcp_http(python: &Path, script: &Path, calls: usize) -> f64 {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut child = std::process::Command::new(python)
        .arg(script)
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start FastMCP");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rate = http(&format!("http://127.0.0.1:{port}/mcp"), calls).await;
    let _ = child.kill();
    let _ = child.wait();
    rate
}

#[tokio::main]
async fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5000);
    let exe_dir = std::env::current_exe()
        .expect("exe")
        .parent()
        .expect("dir")
        .to_path_buf();
    let pi = exe_dir.join("pi-mcp-fixture-server");
    let rmcp = exe_dir.join("rmcp-bench-server");
    let deps = test_deps();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/fastmcp_bench_server.py");

    println!(
        "tools/call round trips/s, {calls} sequential calls of `echo` (after {WARM_UP} warm-up calls)\n"
    );
    println!("| server | stdio | HTTP |");
    println!("|---|---|---|");
    let pi_stdio = stdio(&pi, &["stdio"], calls).await;
    let pi_http = {
        let server = ServerProcess::start_http(pi.to_str().expect("utf-8 path"), &["http"]);
        http(&server.url, calls).await
    };
    println!("| pi-mcp (validates) | {pi_stdio:.0} | {pi_http:.0} |");
    let rmcp_stdio = stdio(&rmcp, &["stdio"], calls).await;
    let rmcp_http = {
        let server = ServerProcess::start_http(rmcp.to_str().expect("utf-8 path"), &["http"]);
        http(&server.url, calls).await
    };
    println!("| rmcp `#[tool_router]` | {rmcp_stdio:.0} | {rmcp_http:.0} |");
    if let Some(deps) = deps {
        let python = deps.join("venv/bin/python");
        let fast_calls = calls / 5;
        let fast_stdio = stdio(
            &python,
            &[script.to_str().expect("utf-8 path"), "stdio"],
            fast_calls,
        )
        .await;
        let fast_http = fastmcp_http(&python, &script, fast_calls).await;
        println!("| Python FastMCP ({fast_calls} calls) | {fast_stdio:.0} | {fast_http:.0} |");
        println!(
            "\npi-mcp / rmcp: stdio {:.2}x, HTTP {:.2}x; pi-mcp / FastMCP: stdio {:.1}x, HTTP {:.1}x",
            pi_stdio / rmcp_stdio,
            pi_http / rmcp_http,
            pi_stdio / fast_stdio,
            pi_http / fast_http
        );
    } else {
        println!(
            "\npi-mcp / rmcp: stdio {:.2}x, HTTP {:.2}x",
            pi_stdio / rmcp_stdio,
            pi_http / rmcp_http
        );
    }
}
