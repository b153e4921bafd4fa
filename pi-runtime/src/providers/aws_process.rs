//! A profile's `credential_process`: the command is split as the AWS CLI splits it (POSIX shell
//! words, the `shlex` crate), run without a shell, and its standard output read as
//! `{"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}`. The
//! credentials are kept until five minutes before `Expiration` (for ever without one), then
//! the command runs again.

use std::time::Duration;

use serde_json::Value;

use super::aws_credentials::{
    AwsCredentialsFuture, AwsCredentialsProvider, Expiring, Refreshing, parse_time,
};
use super::bedrock_auth::AwsCredentials;

/// How long a process may run. Some helpers open a browser for a sign-in first, so this is
/// generous; a process still running then is killed.
pub(crate) const PROCESS_TIMEOUT: Duration = Duration::from_secs(120);
/// How much of the process's standard error a message quotes.
const STDERR_SHOWN: usize = 1000;

/// Credentials from a profile's `credential_process`.
pub(crate) struct ProcessCredentials {
    command: String,
    profile: String,
    timeout: Duration,
    kept: Refreshing,
}

impl ProcessCredentials {
    /// The `credential_process` command line of `profile`.
    pub(crate) fn new(command: impl Into<String>, profile: impl Into<String>) -> Self {
        ProcessCredentials {
            command: command.into(),
            profile: profile.into(),
            timeout: PROCESS_TIMEOUT,
            kept: Refreshing::default(),
        }
    }

    /// Kills the process after `timeout` instead of [`PROCESS_TIMEOUT`].
    #[cfg(test)]
    pub(crate) fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// `The credential_process of AWS profile "work" (`helper`)`, for messages: the program
    /// only, as its arguments could hold a secret.
    fn named(&self, program: &str) -> String {
        format!(
            "The credential_process of AWS profile \"{}\" (`{program}`)",
            self.profile
        )
    }

    /// Runs the command once and reads its answer.
    async fn run(&self) -> Result<Expiring, String> {
        let words = shlex::split(&self.command).ok_or_else(|| {
            format!(
                "The credential_process of AWS profile \"{}\" is not a valid command line (a quote is not closed)",
                self.profile
            )
        })?;
        let Some((program, arguments)) = words.split_first() else {
            return Err(format!(
                "The credential_process of AWS profile \"{}\" is empty",
                self.profile
            ));
        };
        let named = self.named(program);
        let mut command = tokio::process::Command::new(program);
        command
            .args(arguments)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that what it started is killed with it on a timeout.
        #[cfg(unix)]
        command.process_group(0);
        let child = command.spawn().map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                format!("{named} was not found: check the profile's credential_process")
            } else {
                format!("{named} could not be started: {err}")
            }
        })?;
        let group = child.id();
        let output = match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Ok(output) => output.map_err(|err| format!("{named} could not be read: {err}"))?,
            Err(_) => {
                // Dropping the child killed it; its group goes too.
                #[cfg(unix)]
                if let Some(group) = group.and_then(|id| rustix::process::Pid::from_raw(id as i32))
                {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                #[cfg(not(unix))]
                let _ = group;
                return Err(format!(
                    "{named} did not finish within {:?} and was killed",
                    self.timeout
                ));
            }
        };
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let stderr = stderr.trim();
            let shown: String = stderr.chars().take(STDERR_SHOWN).collect();
            let more = if shown.len() < stderr.len() {
                "..."
            } else {
                ""
            };
            return Err(match (output.status.code(), shown.is_empty()) {
                (Some(code), true) => format!("{named} failed with exit code {code}"),
                (Some(code), false) => {
                    format!("{named} failed with exit code {code}: {shown}{more}")
                }
                (None, _) => format!("{named} was ended by a signal ({})", output.status),
            });
        }
        // Its output holds the secret: no message quotes it.
        let answer: Value = serde_json::from_slice(&output.stdout).map_err(|_| {
            format!(
                "{named} did not print JSON ({} bytes on its standard output)",
                output.stdout.len()
            )
        })?;
        let Value::Object(answer) = answer else {
            return Err(format!("{named} did not print a JSON object"));
        };
        match answer.get("Version") {
            Some(version) if version == 1 => {}
            // A number is shown; anything else could be a key put in the wrong place.
            Some(Value::Number(version)) => {
                return Err(format!(
                    "{named} printed Version {version}; the only version there is is 1"
                ));
            }
            Some(_) => {
                return Err(format!(
                    "{named} printed a Version that is not a number (it must be 1)"
                ));
            }
            None => return Err(format!("{named} printed no \"Version\" (it must be 1)")),
        }
        let text = |key: &str| {
            answer
                .get(key)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
        };
        let required =
            |key: &str| text(key).ok_or_else(|| format!("{named} printed no \"{key}\" (a string)"));
        let id = required("AccessKeyId")?;
        let secret = required("SecretAccessKey")?;
        let expires = match answer.get("Expiration") {
            None | Some(Value::Null) => None,
            Some(Value::String(time)) => Some(
                parse_time(time, "Expiration")
                    .map_err(|err| format!("{named} printed an {err}"))?,
            ),
            Some(_) => {
                return Err(format!(
                    "{named} printed an Expiration that is not a string"
                ));
            }
        };
        Expiring::checked(
            AwsCredentials::new(id, secret, text("SessionToken").map(str::to_owned)),
            expires,
            &named,
        )
    }
}

impl AwsCredentialsProvider for ProcessCredentials {
    fn credentials(&self) -> AwsCredentialsFuture<'_> {
        Box::pin(self.kept.get(self.run()))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::providers::aws_reference::script;

    async fn run(command: &str) -> Result<AwsCredentials, String> {
        ProcessCredentials::new(command, "work")
            .timeout(Duration::from_secs(20))
            .credentials()
            .await
    }

    #[tokio::test]
    async fn a_process_answer_is_read_and_its_arguments_split_as_shell_words() {
        let dir = tempfile::tempdir().unwrap();
        let helper = script(
            dir.path(),
            "helper",
            r#"printf '{"Version": 1, "AccessKeyId": "AKID-%s", "SecretAccessKey": "secret-%s", "SessionToken": "token"}' "$1" "$2""#,
        );
        let credentials = run(&format!("{helper} 'two words' \"x y\"")).await.unwrap();
        assert_eq!(credentials.access_key_id(), "AKID-two words");
        assert_eq!(credentials.secret_access_key(), "secret-x y");
        assert_eq!(credentials.session_token(), Some("token"));
    }

    #[tokio::test]
    async fn kept_until_five_minutes_before_expiration_then_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        // Each run counts itself; the expiration comes from a file the test writes.
        let expires = dir.path().join("expires");
        let helper = script(
            dir.path(),
            "helper",
            &format!(
                r#"echo x >> {count}
n=$(wc -l < {count} | tr -d ' ')
printf '{{"Version": 1, "AccessKeyId": "AKID%s", "SecretAccessKey": "s", "Expiration": "%s"}}' "$n" "$(cat {expires})""#,
                count = count.display(),
                expires = expires.display()
            ),
        );
        let in_ = |secs: u64| {
            aws_smithy_types::DateTime::from(
                std::time::SystemTime::now() + Duration::from_secs(secs),
            )
            .fmt(aws_smithy_types::date_time::Format::DateTime)
            .unwrap()
        };
        std::fs::write(&expires, in_(3600)).unwrap();
        let provider = ProcessCredentials::new(&helper, "work");
        assert_eq!(
            provider.credentials().await.unwrap().access_key_id(),
            "AKID1"
        );
        assert_eq!(
            provider.credentials().await.unwrap().access_key_id(),
            "AKID1"
        );
        // Within five minutes of its expiration: run again at each request.
        let provider = ProcessCredentials::new(&helper, "work");
        std::fs::write(&expires, in_(120)).unwrap();
        assert_eq!(
            provider.credentials().await.unwrap().access_key_id(),
            "AKID2"
        );
        assert_eq!(
            provider.credentials().await.unwrap().access_key_id(),
            "AKID3"
        );
        // No expiration: kept for ever.
        let never = script(
            dir.path(),
            "never",
            &format!(
                r#"echo x >> {count}
printf '{{"Version": 1, "AccessKeyId": "AKID%s", "SecretAccessKey": "s"}}' "$(wc -l < {count} | tr -d ' ')""#,
                count = count.display()
            ),
        );
        let provider = ProcessCredentials::new(&never, "work");
        assert_eq!(
            provider.credentials().await.unwrap().access_key_id(),
            "AKID4"
        );
        assert_eq!(
            provider.credentials().await.unwrap().access_key_id(),
            "AKID4"
        );
    }

    #[tokio::test]
    async fn every_failure_is_said_without_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let answer = |json: &str| format!("cat <<'EOF'\n{json}\nEOF");
        let cases: Vec<(String, &str)> = vec![
            (
                dir.path().join("absent").display().to_string(),
                "/absent`) was not found: check the profile's credential_process",
            ),
            (
                "'unclosed".to_owned(),
                "is not a valid command line (a quote is not closed)",
            ),
            ("  ".to_owned(), "is empty"),
            (
                script(
                    dir.path(),
                    "fails",
                    "echo 'token expired, run: helper login' >&2\necho SECRETOUT\nexit 3",
                ),
                "failed with exit code 3: token expired, run: helper login",
            ),
            (
                script(dir.path(), "fails_quietly", "exit 1"),
                "failed with exit code 1",
            ),
            (
                script(dir.path(), "not_json", "echo 'AccessKeyId=SECRETOUT'"),
                "did not print JSON (22 bytes on its standard output)",
            ),
            (
                script(
                    dir.path(),
                    "string_version",
                    &answer(
                        r#"{"Version": "SECRETOUT", "AccessKeyId": "A", "SecretAccessKey": "S"}"#,
                    ),
                ),
                "printed a Version that is not a number (it must be 1)",
            ),
            (
                script(dir.path(), "array", &answer("[1]")),
                "did not print a JSON object",
            ),
            (
                script(
                    dir.path(),
                    "version",
                    &answer(
                        r#"{"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "SECRETOUT"}"#,
                    ),
                ),
                "printed Version 2; the only version there is is 1",
            ),
            (
                script(
                    dir.path(),
                    "no_version",
                    &answer(r#"{"AccessKeyId": "A", "SecretAccessKey": "SECRETOUT"}"#),
                ),
                "printed no \"Version\" (it must be 1)",
            ),
            (
                script(
                    dir.path(),
                    "no_secret",
                    &answer(r#"{"Version": 1, "AccessKeyId": "A"}"#),
                ),
                "printed no \"SecretAccessKey\" (a string)",
            ),
            (
                script(
                    dir.path(),
                    "no_id",
                    &answer(r#"{"Version": 1, "SecretAccessKey": "SECRETOUT"}"#),
                ),
                "printed no \"AccessKeyId\" (a string)",
            ),
            (
                script(
                    dir.path(),
                    "bad_time",
                    &answer(
                        r#"{"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "SECRETOUT", "Expiration": "soon"}"#,
                    ),
                ),
                "printed an Expiration \"soon\" is not an ISO 8601 time",
            ),
            (
                script(
                    dir.path(),
                    "expired",
                    &answer(
                        r#"{"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "SECRETOUT", "SessionToken": "SECRETOUT", "Expiration": "2020-01-01T00:00:00Z"}"#,
                    ),
                ),
                "returned credentials that had already expired (at 2020-01-01T00:00:00Z)",
            ),
        ];
        for (command, expected) in cases {
            let err = run(&command).await.unwrap_err();
            assert!(
                err.starts_with("The credential_process of AWS profile \"work\""),
                "{command}: {err}"
            );
            assert!(err.contains(expected), "{command}: {err}");
            assert!(!err.contains("SECRETOUT"), "{command}: {err}");
        }
    }

    #[tokio::test]
    async fn a_process_that_hangs_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // The shell and the sleep it starts (its child, in its group) both go.
        let hangs = script(
            dir.path(),
            "hangs",
            &format!("sleep 30 &\necho $! > {}\nwait", pid_file.display()),
        );
        let err = ProcessCredentials::new(&hangs, "work")
            .timeout(Duration::from_secs(3))
            .credentials()
            .await
            .unwrap_err();
        assert!(
            err.ends_with("did not finish within 3s and was killed"),
            "{err}"
        );
        let sleeper: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The kill is sent at once; the process is gone once it is reaped (its parent, the
        // killed shell, is gone, so init reaps it).
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat"));
            stat.map_or(true, |stat| stat.contains(") Z "))
        });
        assert!(gone, "the process {sleeper} still runs");
    }
}
