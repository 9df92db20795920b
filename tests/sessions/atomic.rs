//! Saves survive kill -9 at any moment: a child process (this test binary, re-run on its
//! ignored `saver` test) saves ever-newer versions of one session as fast as it can while
//! the parent kills it at random moments. After every kill the file must parse and be one
//! complete version, and the listing must show exactly that one session.

use rand::Rng;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use taper::chat::Role;
use taper::protocol::SamplingParams;
use taper::sessions::store;
use taper::sessions::{SavedMessage, SavedSampling, Session};

const ID: &str = "atomic-test";
const ROUNDS: usize = 25;

/// Version `n`: `n` messages whose text says which version and which message they are, long
/// enough (tens of kilobytes) that a write takes a while.
fn version(n: usize) -> Session {
    let sampling = SavedSampling::new(&SamplingParams::default(), 64);
    let mut s = Session::new(ID, n as u64, "", sampling);
    for i in 0..n {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let content = format!("v{n} m{i} ").repeat(40 + n % 7);
        s.messages
            .push(SavedMessage::plain(role, content, i as u64));
    }
    s
}

/// The child: continue from the version on disk and save forever (until killed).
#[test]
#[ignore = "run by kill_9_during_saves_leaves_a_complete_version"]
fn saver() {
    let Some(dir) = std::env::var_os("TAPER_ATOMIC_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    let mut n = store::load(&dir.join(format!("{ID}.json")))
        .map(|s| s.messages.len())
        .unwrap_or(0);
    loop {
        n += 1;
        store::save(dir, &version(n)).expect("save");
    }
}

#[test]
fn kill_9_during_saves_leaves_a_complete_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{ID}.json"));
    let mut rng = rand::rng();
    let mut seen = Vec::new();
    // The test's name as libtest knows it: its module path without the binary's name.
    let saver = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::saver"),
        None => "saver".to_string(),
    };
    for _ in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", &saver, "--test-threads=1"])
            .env("TAPER_ATOMIC_DIR", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.random_range(20..150)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if !path.exists() {
            continue; // killed before its first save finished
        }
        let session = store::load(&path).unwrap_or_else(|e| panic!("after a kill: {e:#}"));
        let n = session.messages.len();
        assert_eq!(session, version(n), "not a complete version");
        seen.push(n);
        let listed = store::list(dir.path());
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert!(listed[0].summary.is_ok(), "{listed:?}");
    }
    let temps = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with(store::TEMP_PREFIX)
        })
        .count();
    eprintln!("versions seen after kills: {seen:?}; temporary files left: {temps}");
    assert!(seen.len() >= ROUNDS / 2, "the child rarely saved: {seen:?}");
    // Each child went on from its predecessor's last complete version.
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
}
