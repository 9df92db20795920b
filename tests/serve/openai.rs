//! The official `openai` Python package (installed from PyPI into a virtual environment in
//! the user's cache, outside the repository) against `taper serve` with the SmolLM2 test
//! model: models list, chat whole and streamed, completions, an error.

use crate::serve_support::Server;
use std::path::PathBuf;
use std::process::Command;

/// `~/.cache/taper-test-venv` with `openai` installed, made once per machine.
fn venv_python() -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME");
    let venv = PathBuf::from(home).join(".cache/taper-test-venv");
    let python = venv.join("bin/python");
    let has_openai = |python: &PathBuf| {
        Command::new(python)
            .args(["-c", "import openai"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_openai(&python) {
        return python;
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .expect("python3 -m venv");
    assert!(
        made.success(),
        "cannot make the virtual environment {}",
        venv.display()
    );
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "openai"])
        .status()
        .expect("pip install openai");
    assert!(installed.success(), "pip install openai failed");
    assert!(
        has_openai(&python),
        "openai is not importable after installing it"
    );
    python
}

#[test]
fn the_official_openai_client_works_against_taper_serve() {
    let python = venv_python();
    let server = Server::start(&["--parallel", "2", "--ctx-size", "512"]);
    // Not `openai.py`: Python puts the script's folder first on its path, and a script of that
    // name would import itself instead of the package.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/serve/openai_client.py");
    let out = Command::new(python)
        .arg(script)
        .arg(format!("{}/v1", server.url))
        .arg("SmolLM2-135M-Instruct.Q4_1")
        .output()
        .expect("run the openai script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("openai client: ok"), "{stdout}");
}
