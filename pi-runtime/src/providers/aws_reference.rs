//! For the sign-in tests: botocore itself (AWS's own credential code, from `.ci/install-test-deps`'
//! Python venv in env `PI_TEST_DEPS`, default `~/.cache/pi-tool-test-deps`) resolving a profile,
//! and a local HTTP server that records what it is sent (standing in for STS and the SSO
//! portal, for botocore and for us).

use std::path::{Path, PathBuf};

/// The venv's Python, when it has botocore; when not, fails in CI (env `CI`) and says it
/// skipped otherwise.
pub(crate) fn botocore_python() -> Option<PathBuf> {
    let folder = match std::env::var_os("PI_TEST_DEPS") {
        Some(folder) => PathBuf::from(folder),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/pi-tool-test-deps"),
    };
    let python = folder.join("venv/bin/python");
    let found = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", "import botocore"])
            .output()
            .is_ok_and(|out| out.status.success());
    if found {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "botocore is missing from {}: run .ci/install-test-deps",
        folder.display()
    );
    eprintln!("skipped: botocore is missing (run .ci/install-test-deps)");
    None
}

/// Credentials as botocore resolves them: `(access key id, secret, session token)`, or the
/// message of botocore's error.
pub(crate) type Resolved = Result<(String, String, Option<String>), String>;

/// What `botocore.session.Session(profile=..).get_credentials()` returns, frozen, with only
/// the variables `env` gives (and `PATH`), in `home`.
pub(crate) fn botocore_credentials(
    python: &Path,
    home: &Path,
    env: &[(&str, String)],
    profile: &str,
) -> Resolved {
    const SCRIPT: &str = r#"
import json, sys, botocore.session
try:
    credentials = botocore.session.Session(profile=sys.argv[1]).get_credentials()
    if credentials is None:
        print(json.dumps({"error": "no credentials"}))
    else:
        frozen = credentials.get_frozen_credentials()
        print(json.dumps({"id": frozen.access_key, "secret": frozen.secret_key, "token": frozen.token}))
except Exception as err:
    print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
"#;
    let mut command = std::process::Command::new(python);
    command
        .args(["-c", SCRIPT, profile])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        // Never ask an instance metadata service.
        .env("AWS_EC2_METADATA_DISABLED", "true");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("python runs");
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "botocore printed no JSON: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    if let Some(error) = answer["error"].as_str() {
        return Err(error.to_owned());
    }
    Ok((
        answer["id"].as_str().unwrap().to_owned(),
        answer["secret"].as_str().unwrap().to_owned(),
        answer["token"].as_str().map(str::to_owned),
    ))
}

/// An executable shell script in `dir`, its path returned.
#[cfg(unix)]
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}
