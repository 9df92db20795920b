//! Downloads against a local server that speaks the hub's protocol: progress, cache hits,
//! cancel and resume, redirects, and one clear sentence for each failure.

use crate::hub_server::{HubServer, COMMIT, TOKEN};
use std::sync::atomic::{AtomicBool, Ordering};
use taper::hub::{download, HubConfig, HubError, HubFile};

fn config(server: &HubServer, cache: &std::path::Path) -> HubConfig {
    HubConfig {
        endpoint: server.endpoint.clone(),
        cache_dir: cache.to_path_buf(),
        token: None,
        offline: false,
    }
}

/// A config for a hub nobody answers at.
fn no_server(endpoint: String, cache: &std::path::Path, offline: bool) -> HubConfig {
    HubConfig {
        endpoint,
        cache_dir: cache.to_path_buf(),
        token: None,
        offline,
    }
}

#[test]
fn a_download_reports_progress_and_lands_in_the_standard_cache_layout() {
    let server = HubServer::start();
    let cache = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    let path = download(
        &config(&server, cache.path()),
        &HubFile::new("org/tiny", "model.gguf"),
        &AtomicBool::new(false),
        |d, t| seen.push((d, t)),
    )
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), *server.content);
    let expected = cache
        .path()
        .join(format!("models--org--tiny/snapshots/{COMMIT}/model.gguf"));
    assert_eq!(path, expected);
    assert_eq!(
        std::fs::read_to_string(cache.path().join("models--org--tiny/refs/main")).unwrap(),
        COMMIT
    );
    let total = server.content.len() as u64;
    assert!(seen.len() > 2, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
    assert_eq!(seen.last(), Some(&(total, total)));
}

#[test]
fn a_cached_file_is_found_without_the_network() {
    let server = HubServer::start();
    let cache = tempfile::tempdir().unwrap();
    let file = HubFile::new("org/tiny", "model.gguf");
    download(
        &config(&server, cache.path()),
        &file,
        &AtomicBool::new(false),
        |_, _| {},
    )
    .unwrap();
    let requests = server.log.lock().unwrap().len();
    let mut offline = config(&server, cache.path());
    offline.offline = true;
    offline.endpoint = "http://127.0.0.1:1".into();
    let again = download(&offline, &file, &AtomicBool::new(false), |_, _| {}).unwrap();
    assert!(again.is_file());
    assert_eq!(server.log.lock().unwrap().len(), requests);
}

#[test]
fn cancel_half_way_leaves_only_a_part_file_and_the_next_download_resumes() {
    let server = HubServer::start();
    let cache = tempfile::tempdir().unwrap();
    let cfg = config(&server, cache.path());
    let file = HubFile::new("org/tiny", "model.gguf");
    let cancel = AtomicBool::new(false);
    let total = server.content.len() as u64;
    let err = download(&cfg, &file, &cancel, |done, _| {
        if done > total / 2 {
            cancel.store(true, Ordering::SeqCst);
        }
    })
    .unwrap_err();
    assert!(matches!(err, HubError::Cancelled(_)), "{err}");
    assert!(
        file.cached(&cfg).is_none(),
        "a cancelled download must not look complete"
    );
    let blobs: Vec<String> = std::fs::read_dir(cache.path().join("models--org--tiny/blobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(blobs.len() == 1 && blobs[0].ends_with(".part"), "{blobs:?}");

    let path = download(&cfg, &file, &AtomicBool::new(false), |_, _| {}).unwrap();
    assert_eq!(std::fs::read(path).unwrap(), *server.content);
    let resumed_from = server
        .ranges()
        .into_iter()
        .flatten()
        .rfind(|r| r != "bytes=0-0")
        .unwrap();
    assert_ne!(
        resumed_from, "bytes=0-",
        "the second download should resume, not restart"
    );
}

#[test]
fn relative_and_absolute_redirects_are_followed() {
    let server = HubServer::start();
    for repo in ["org/renamed", "org/cdn"] {
        let cache = tempfile::tempdir().unwrap();
        let path = download(
            &config(&server, cache.path()),
            &HubFile::new(repo, "model.gguf"),
            &AtomicBool::new(false),
            |_, _| {},
        )
        .unwrap_or_else(|e| panic!("{repo}: {e}"));
        assert_eq!(std::fs::read(path).unwrap(), *server.content, "{repo}");
    }
}

#[test]
fn a_missing_file_is_a_404_sentence_naming_the_repo() {
    let server = HubServer::start();
    let cache = tempfile::tempdir().unwrap();
    let err = download(
        &config(&server, cache.path()),
        &HubFile::new("org/nothing", "x.gguf"),
        &AtomicBool::new(false),
        |_, _| {},
    )
    .unwrap_err();
    assert!(matches!(err, HubError::NotFound { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("org/nothing") && msg.contains("taper models"),
        "{msg}"
    );
}

#[test]
fn a_gated_repo_needs_a_token_and_works_with_one() {
    let server = HubServer::start();
    let cache = tempfile::tempdir().unwrap();
    let file = HubFile::new("org/gated", "model.gguf");
    let mut cfg = config(&server, cache.path());
    let err = download(&cfg, &file, &AtomicBool::new(false), |_, _| {}).unwrap_err();
    assert!(matches!(err, HubError::NeedsToken { .. }), "{err}");
    assert!(err.to_string().contains("HF_TOKEN") && err.to_string().contains("org/gated"));
    cfg.token = Some("hf_wrong".into());
    let err = download(&cfg, &file, &AtomicBool::new(false), |_, _| {}).unwrap_err();
    assert!(matches!(err, HubError::Forbidden { .. }), "{err}");
    cfg.token = Some(TOKEN.into());
    assert!(download(&cfg, &file, &AtomicBool::new(false), |_, _| {}).is_ok());
}

#[test]
fn a_server_that_is_down_is_reported_as_unreachable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let cfg = no_server(format!("http://127.0.0.1:{port}"), cache.path(), false);
    let err = download(
        &cfg,
        &HubFile::new("org/tiny", "model.gguf"),
        &AtomicBool::new(false),
        |_, _| {},
    )
    .unwrap_err();
    assert!(matches!(err, HubError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("cannot reach the hub"), "{err}");
}

#[test]
fn offline_mode_without_a_cached_copy_says_what_to_do() {
    let cache = tempfile::tempdir().unwrap();
    let cfg = no_server("http://127.0.0.1:1".into(), cache.path(), true);
    let err = download(
        &cfg,
        &HubFile::new("org/tiny", "model.gguf"),
        &AtomicBool::new(false),
        |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("HF_HUB_OFFLINE"), "{err}");
}

#[test]
fn file_names_that_escape_the_cache_are_refused() {
    let cache = tempfile::tempdir().unwrap();
    let cfg = no_server("http://127.0.0.1:1".into(), cache.path(), false);
    let err = download(
        &cfg,
        &HubFile::new("org/tiny", "../../evil"),
        &AtomicBool::new(false),
        |_, _| {},
    );
    assert!(err.is_err());
}

#[test]
fn models_pull_downloads_a_config_model_and_models_lists_it() {
    let server = HubServer::start();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        "[[models]]\nname = \"tiny\"\nrepo = \"org/tiny\"\nfile = \"model.gguf\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_taper"))
            .args(args)
            .env("TAPER_HOME", home.path())
            .env("HF_HOME", home.path().join("hf"))
            .env("HF_ENDPOINT", &server.endpoint)
            .env_remove("HF_TOKEN")
            .env_remove("HF_HUB_OFFLINE")
            .output()
            .unwrap()
    };
    let config_arg = config.to_str().unwrap();
    let out = run(&["--config", config_arg, "models", "pull", "tiny"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        path.ends_with("model.gguf") && path.contains("models--org--tiny"),
        "{path}"
    );
    let listing = run(&["--config", config_arg, "models"]);
    let text = String::from_utf8_lossy(&listing.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("tiny") && l.contains("broken"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("not a GGUF file"), "{line}");
}
