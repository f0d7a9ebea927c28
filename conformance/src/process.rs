//! Running the command under test: stdin closed, stdout and stderr to files (no pipe can fill
//! up and stall it), killed after a timeout.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;
use wait_timeout::ChildExt;

/// How the command ended.
#[derive(Debug)]
pub enum Outcome {
    Exited { status: ExitStatus, stderr_tail: String },
    TimedOut { seconds: f64 },
    CannotStart(String),
}

impl Outcome {
    pub fn success(&self) -> bool {
        matches!(self, Outcome::Exited { status, .. } if status.success())
    }

    /// One line saying how it ended, with the end of its stderr.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Exited { status, stderr_tail } => {
                let how = match status.code() {
                    Some(code) => format!("exited with status {code}"),
                    None => format!("was killed ({status})"),
                };
                if stderr_tail.is_empty() {
                    how
                } else {
                    format!("{how}; stderr: {stderr_tail}")
                }
            }
            Outcome::TimedOut { seconds } => format!("timed out after {seconds} s and was killed"),
            Outcome::CannotStart(e) => format!("could not be started: {e}"),
        }
    }
}

/// The last `max` characters of a log file, on one line.
fn tail(path: &Path, max: usize) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let skip = text.chars().count().saturating_sub(max);
    let cut: String = text.chars().skip(skip).collect();
    if skip > 0 {
        format!("...{cut}")
    } else {
        cut
    }
}

/// Runs `program args...` with its output logged into `log_dir`.
pub fn run(program: &str, args: &[String], log_dir: &Path, timeout: Duration) -> Outcome {
    let open = |name: &str| std::fs::File::create(log_dir.join(name));
    let (stdout, stderr) = match (open("stdout.log"), open("stderr.log")) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => return Outcome::CannotStart(format!("log files in {}: {e}", log_dir.display())),
    };
    let mut child = match Command::new(program).args(args).stdin(Stdio::null()).stdout(stdout).stderr(stderr).spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::CannotStart(format!("{program}: {e}")),
    };
    match child.wait_timeout(timeout) {
        Ok(Some(status)) => Outcome::Exited { status, stderr_tail: tail(&log_dir.join("stderr.log"), 300) },
        Ok(None) => {
            // Kill and reap it; its partial output is judged like any other.
            let _ = child.kill();
            let _ = child.wait();
            Outcome::TimedOut { seconds: timeout.as_secs_f64() }
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Outcome::CannotStart(format!("waiting for {program}: {e}"))
        }
    }
}
