//! The official `openai` Python package (installed from PyPI into a virtual environment in
//! the user's cache, outside the repository) against `taper serve` with the SmolLM2 test
//! model: models list, chat whole and streamed, completions, an error; structured output
//! checked with `jsonschema`.

use crate::serve_support::Server;
use std::path::PathBuf;
use std::process::Command;

/// `~/.cache/taper-test-venv` with `openai` and `jsonschema` installed, made once per machine.
fn venv_python() -> PathBuf {
    crate::venv::venv_python(
        "taper-test-venv",
        &["openai", "jsonschema"],
        "openai, jsonschema",
    )
}

/// Runs `tests/serve/SCRIPT` against a server with `flags`; its last line says `ok`.
fn run_script(script: &str, flags: &[&str], ok: &str) {
    let python = venv_python();
    let server = Server::start(flags);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/serve")
        .join(script);
    let out = Command::new(python)
        .arg(script)
        .arg(format!("{}/v1", server.url))
        .arg("SmolLM2-135M-Instruct.Q4_1")
        .output()
        .expect("run the openai script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(ok), "{stdout}");
}

#[test]
fn the_official_openai_client_works_against_taper_serve() {
    run_script(
        "openai_client.py",
        &["--parallel", "2", "--ctx-size", "512"],
        "openai client: ok",
    );
}

#[test]
fn structured_output_is_valid_for_every_seed_and_alike_alone_or_batched() {
    run_script(
        "structured_output.py",
        &["--parallel", "4", "--ctx-size", "512"],
        "structured output: ok",
    );
}

#[test]
fn tool_calls_are_valid_for_every_seed_stream_alike_and_a_tool_loop_reuses_the_cache() {
    run_script(
        "tool_calls.py",
        &["--parallel", "2", "--ctx-size", "1024"],
        "tool calls: ok",
    );
}
