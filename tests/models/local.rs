//! Local models described from their headers alone, and settings precedence (flags over the
//! config file over built-in defaults), on the real test models.

use crate::common;

use std::process::Command;
use taper::models::ModelSummary;

#[test]
fn headers_of_both_test_models_describe_them() {
    let smol = ModelSummary::read(&common::real_model(common::SMOLLM2)).unwrap();
    let gemma = ModelSummary::read(&common::real_model(common::GEMMA3)).unwrap();
    assert_eq!(
        (smol.architecture.as_str(), smol.quantization.as_str()),
        ("llama", "Q4_1")
    );
    assert_eq!(smol.context_length, Some(8192));
    assert!(smol.has_chat_template);
    assert!(
        (130_000_000..140_000_000).contains(&smol.parameters),
        "{}",
        smol.parameters
    );
    assert_eq!(smol.file_size, 98_362_432);
    assert!(smol.unsupported.is_none());
    assert_eq!(
        (gemma.architecture.as_str(), gemma.quantization.as_str()),
        ("gemma3", "Q4_K_M")
    );
    assert_eq!(gemma.context_length, Some(32768));
    assert!(!gemma.has_chat_template);
    assert!(
        (260_000_000..280_000_000).contains(&gemma.parameters),
        "{}",
        gemma.parameters
    );
}

/// `taper ask --stats` with a config file; returns the generated-token count from the stats.
fn generated_tokens(config: &str, extra: &[&str]) -> usize {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("models")).unwrap();
    let config_path = home.path().join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let model = common::real_model(common::SMOLLM2);
    let out = Command::new(env!("CARGO_BIN_EXE_taper"))
        .arg("--config")
        .arg(&config_path)
        .args(["ask", "--stats", "--temperature", "0", "-m"])
        .arg(&model)
        .args(extra)
        .arg("Tell me a long story about a brave knight.")
        .env("TAPER_HOME", home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("generated")).unwrap();
    line.split("generated ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn the_config_overrides_defaults_and_flags_override_the_config() {
    assert_eq!(generated_tokens("max_tokens = 2\n", &[]), 2);
    assert_eq!(generated_tokens("max_tokens = 2\n", &["-n", "5"]), 5);
}

#[test]
fn a_broken_config_names_the_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let config_path = home.path().join("config.toml");
    std::fs::write(&config_path, "threads = \"many\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_taper"))
        .arg("--config")
        .arg(&config_path)
        .args(["models"])
        .env("TAPER_HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.toml") && stderr.contains("line 1"),
        "{stderr}"
    );
    assert!(stderr.contains("threads"), "{stderr}");
}
