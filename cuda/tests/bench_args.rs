//! `nwc-gpu-bench` refuses the option combinations it cannot honour before it opens a device, so
//! these checks run, and must fail the same way, on a machine without a GPU.
#![cfg(feature = "bench")]

use std::process::Command;

/// Whether `nwc-gpu-bench args` succeeded, and its standard error.
fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nwc-gpu-bench")).args(args).output().expect("run nwc-gpu-bench");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn options_it_cannot_honour_are_errors_that_say_why() {
    let cases: [(&[&str], &str); 9] = [
        (&["--exec-kernels", "var-tc-strip-least-splits"], "--exec-kernels needs --exec-variants or --exec-batch"),
        (&["--exec-pdl"], "--exec-pdl needs --exec-variants"),
        (&["--exec-strip-plans", "4:4"], "--exec-strip-plans needs --exec-variants"),
        (&["--exec-tc-warps", "4"], "--exec-tc-warps needs --exec-batch"),
        (&["--exec-batch", "--exec-kernels", "strip"], "strip is an exact kernel"),
        (&["--exec-batch", "--exec-kernels", "bounded", "--exec-tc-warps", "4"], "give one"),
        (&["--exec-batch", "--exec-kernels", "bogus"], "unknown execution-layout matvec kernel"),
        (&["--exec-batch", "--exec-variants", "--exec-kernels", "bounded"], "two runs: give one"),
        (&["--no-such-option"], "unknown argument"),
    ];
    for (args, says) in cases {
        let (ok, err) = run(args);
        assert!(!ok && err.contains(says), "{args:?}: {err}");
    }
}
