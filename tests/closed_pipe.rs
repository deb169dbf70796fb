//! A reader that stops early (`servebench history | head -3`) closes servebench's standard
//! output: the command ends quietly with status 0, as `ls | head` does, not with
//! "error: Broken pipe" and status 2 (issue 32, item 4).

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn a_closed_pipe_ends_quietly_with_status_0() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args(["workload", "export", "--requests", "5000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("servebench starts");
    let mut first = [0u8; 64];
    child
        .stdout
        .as_mut()
        .expect("piped")
        .read_exact(&mut first)
        .expect("the export writes");
    // The reader has what it wanted: close the pipe while the export is still writing.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("servebench ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("Broken pipe"), "stderr: {stderr}");
}
