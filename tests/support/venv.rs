//! Python virtual environments for the tests, made once per machine in the user's cache
//! (`~/.cache/NAME`, outside the repository) with the packages a test needs from PyPI, and
//! once per run (the tests of one binary would otherwise install into it at once).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// The python of `~/.cache/NAME`, made with `packages` installed unless `imports` already
/// import there.
pub fn venv_python(name: &str, packages: &[&str], imports: &str) -> PathBuf {
    static MAKING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let home = std::env::var_os("HOME").expect("HOME");
    let venv = PathBuf::from(home).join(".cache").join(name);
    let python = venv.join("bin/python");
    let ready = |python: &PathBuf| {
        Command::new(python)
            .args(["-c", &format!("import {imports}")])
            .status()
            .is_ok_and(|s| s.success())
    };
    if ready(&python) {
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
        .args(["install", "--quiet"])
        .args(packages)
        .status()
        .expect("pip install");
    assert!(installed.success(), "pip install {packages:?} failed");
    assert!(
        ready(&python),
        "`import {imports}` fails after installing {packages:?}"
    );
    python
}
