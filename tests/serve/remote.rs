//! taper's own remote backend against `taper serve` (both on 127.0.0.1, SmolLM2): `taper models`
//! lists the served model under the remote's name, and `taper ask -m remote/MODEL` streams
//! the same greedy answer, with the server's own figures, that `taper ask` gives locally on the
//! same file (the server applies the same chat template and sampling, and batched decoding
//! changes no token).

use crate::common;

use crate::serve_support::Server;
use std::process::{Command, Output};

const QUESTION: &str = "What is the capital of France?";
const MODEL: &str = "SmolLM2-135M-Instruct.Q4_1";

/// `taper ARGS` with a home of its own (no config, no models), or with `--remote URL` first.
fn taper(remote: Option<&str>, args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taper"));
    cmd.env("TAPER_HOME", home.path());
    if let Some(url) = remote {
        cmd.args(["--remote", url]);
    }
    cmd.args(args).output().expect("run taper")
}

fn greedy_ask(model: &str) -> Vec<String> {
    [
        "ask",
        "-m",
        model,
        "--temperature",
        "0",
        "--repeat-penalty",
        "1",
        "-n",
        "24",
        "--stats",
        QUESTION,
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn the_remote_backend_lists_and_streams_what_taper_serve_answers() {
    let server = Server::start(&["--parallel", "2"]);
    let url = format!("{}/v1", server.url);

    let listed = taper(Some(&url), &["models"]);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{out}");
    assert!(out.contains(&format!("remote/{MODEL}")), "{out}");

    let remote_model = format!("remote/{MODEL}");
    let args = greedy_ask(&remote_model);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let remote = taper(Some(&url), &args);
    let remote_err = String::from_utf8_lossy(&remote.stderr);
    assert!(remote.status.success(), "{remote_err}");

    let model = common::real_model(common::SMOLLM2);
    let local_args = greedy_ask(model.to_str().expect("utf-8 path"));
    let local_args: Vec<&str> = local_args.iter().map(String::as_str).collect();
    let local = taper(None, &local_args);
    assert!(
        local.status.success(),
        "{}",
        String::from_utf8_lossy(&local.stderr)
    );

    let remote_text = String::from_utf8_lossy(&remote.stdout);
    assert!(!remote_text.trim().is_empty());
    assert_eq!(
        remote_text.trim(),
        String::from_utf8_lossy(&local.stdout).trim(),
        "the answer through taper serve differs from the local one"
    );
    // taper serve sends llama-server-style timings; the remote backend shows them as the
    // server's.
    assert!(
        remote_err.contains("reported by the server: prompt"),
        "{remote_err}"
    );
    // No threads or kernels of ours computed it.
    assert!(
        remote_err.contains("| remote http://") && !remote_err.contains("threads 0"),
        "{remote_err}"
    );
}
