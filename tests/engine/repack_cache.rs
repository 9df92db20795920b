//! The repack cache on the real test models: a load that reads its matrices back computes
//! exactly what a load that repacks does; a damaged, truncated or stale cache file is rebuilt;
//! a cache directory that cannot be written costs one notice; two processes loading at once
//! leave one whole file.

use super::common;
use std::path::{Path, PathBuf};
use std::process::Command;
use taper::engine::loader::{self, OpenOptions};
use taper::engine::model::kernels::Format;
use taper::engine::model::runtime::kernel_path;
use taper::engine::model::weights::packed_cache::{self, store, Outcome};
use taper::engine::model::CacheOptions;

/// A prompt's ids (the tokenizer is not needed to compare two loads).
const IDS: [u32; 12] = [1, 504, 3458, 282, 5248, 314, 1694, 28, 2119, 314, 253, 1357];

/// Every position's logits after loading `model` with the repack cache in `dir` (none: no
/// cache), what the cache did, and the load's notices.
fn run(model: &Path, dir: Option<&Path>) -> (Vec<f32>, Outcome, Vec<String>) {
    let open = OpenOptions {
        text: false,
        repack_cache: dir.map(Path::to_path_buf),
        ..OpenOptions::new(CacheOptions::new(64))
    };
    let mut loaded = loader::open(model, &open).expect("the model loads");
    let logits = loaded.model.forward(&IDS, true).expect("a forward pass");
    (logits, loaded.repack.clone(), loaded.notices.clone())
}

/// Whether this kernel path repacks the test models' formats at all (x86's SIMD paths do;
/// elsewhere there is nothing to cache and the cache must stay empty).
fn repacks() -> bool {
    [Format::Q4_1, Format::Q4K]
        .iter()
        .all(|&f| kernel_path::isa().packed_layout(f).is_some())
}

fn only_file(dir: &Path) -> PathBuf {
    let files = store::list(dir);
    assert_eq!(files.len(), 1, "one cache file: {files:?}");
    files[0].path.clone()
}

/// Loads `model` twice with an empty cache directory: the first repacks and writes, the
/// second reads everything back; both compute what a load without the cache computes.
fn check_round_trip(model: &Path, dir: &Path) -> usize {
    let (fresh, none, _) = run(model, None);
    assert_eq!(none, Outcome::default(), "no cache, nothing counted");
    let (first, wrote, _) = run(model, Some(dir));
    packed_cache::finish_writes();
    if !repacks() {
        assert_eq!(wrote.repacked, 0);
        assert!(
            store::list(dir).is_empty(),
            "nothing repacked, nothing cached"
        );
        return 0;
    }
    assert!(wrote.repacked > 0 && wrote.read_back == 0, "{wrote:?}");
    only_file(dir);
    let (second, read, _) = run(model, Some(dir));
    assert_eq!(read.repacked, 0, "{read:?}");
    assert_eq!(read.read_back, wrote.repacked, "every matrix read back");
    // In place where the kernel maps the file in 2 MiB pages, else copied: either way the
    // same bytes, which the logits below check.
    eprintln!(
        "{}: {} matrices read back {}",
        model.display(),
        read.read_back,
        if read.in_place { "in place" } else { "by copy" }
    );
    assert!(
        first == fresh && second == fresh,
        "the same logits, bit for bit"
    );
    wrote.repacked
}

#[test]
fn a_load_from_the_cache_computes_exactly_what_a_repack_does() {
    for name in [common::SMOLLM2, common::GEMMA3] {
        let dir = tempfile::tempdir().expect("temp dir");
        check_round_trip(&common::real_model(name), dir.path());
    }
}

#[test]
fn a_damaged_or_truncated_cache_file_is_rebuilt_not_trusted() {
    let model = common::real_model(common::SMOLLM2);
    let dir = tempfile::tempdir().expect("temp dir");
    let matrices = check_round_trip(&model, dir.path());
    if matrices == 0 {
        return;
    }
    let (fresh, _, _) = run(&model, None);
    let path = only_file(dir.path());

    // One byte changed near the end (inside the last matrix): that matrix alone is repacked,
    // and the file written again.
    let mut bytes = std::fs::read(&path).expect("read");
    let at = bytes.len() - 100;
    bytes[at] ^= 0x01;
    std::fs::write(&path, &bytes).expect("write");
    let (logits, outcome, _) = run(&model, Some(dir.path()));
    packed_cache::finish_writes();
    assert_eq!((outcome.repacked, outcome.read_back), (1, matrices - 1));
    assert!(logits == fresh);
    let (_, again, _) = run(&model, Some(dir.path()));
    assert_eq!(again.read_back, matrices, "rewritten whole");

    // Cut short: nothing is read from it.
    let len = std::fs::metadata(&path).expect("size").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(len / 2))
        .expect("truncate");
    let (logits, outcome, _) = run(&model, Some(dir.path()));
    packed_cache::finish_writes();
    assert_eq!((outcome.repacked, outcome.read_back), (matrices, 0));
    assert!(logits == fresh);
    assert_eq!(
        std::fs::metadata(&path).expect("size").len(),
        len,
        "whole again"
    );

    // Something else under its name.
    std::fs::write(&path, "not a cache file").expect("write");
    let (logits, outcome, _) = run(&model, Some(dir.path()));
    packed_cache::finish_writes();
    assert_eq!(outcome.read_back, 0);
    assert!(logits == fresh);
    let (_, again, _) = run(&model, Some(dir.path()));
    assert_eq!(again.read_back, matrices);
}

#[test]
fn a_changed_model_file_makes_its_cache_stale() {
    let models = tempfile::tempdir().expect("temp dir");
    let model = models.path().join("model.gguf");
    std::fs::copy(common::real_model(common::SMOLLM2), &model).expect("copy");
    let dir = tempfile::tempdir().expect("temp dir");
    let matrices = check_round_trip(&model, dir.path());
    if matrices == 0 {
        return;
    }
    // The same bytes with a new modification time stand for a re-downloaded file: the cache
    // is not trusted for it, and its new file replaces the stale one.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&model)
        .and_then(|f| f.set_modified(later))
        .expect("touch");
    let (_, outcome, _) = run(&model, Some(dir.path()));
    packed_cache::finish_writes();
    assert_eq!((outcome.repacked, outcome.read_back), (matrices, 0));
    only_file(dir.path());
    let (_, again, _) = run(&model, Some(dir.path()));
    assert_eq!(again.read_back, matrices);
}

#[test]
fn a_cache_directory_that_cannot_be_written_costs_one_notice() {
    let model = common::real_model(common::SMOLLM2);
    let (fresh, _, _) = run(&model, None);
    // A file where the directory should be: no directory can be made there (as root, too).
    let parent = tempfile::tempdir().expect("temp dir");
    let blocked = parent.path().join("cache");
    std::fs::write(&blocked, "a file").expect("write");
    let (logits, outcome, notices) = run(&model, Some(&blocked));
    assert!(
        logits == fresh,
        "the model loads and computes as without a cache"
    );
    if !repacks() {
        return;
    }
    assert_eq!(outcome.read_back, 0);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("cannot be written") && notices[0].contains("repack_cache = false"),
        "{}",
        notices[0]
    );
}

#[test]
fn two_processes_loading_at_once_leave_one_whole_file() {
    let model = common::real_model(common::SMOLLM2);
    let home = tempfile::tempdir().expect("temp dir");
    let ask = || {
        Command::new(env!("CARGO_BIN_EXE_taper"))
            .env("TAPER_HOME", home.path())
            .args(["ask", "--temperature", "0", "-n", "4", "-m"])
            .arg(&model)
            .arg("Name a colour.")
            .output()
            .expect("taper runs")
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(ask);
        let b = s.spawn(ask);
        (a.join().expect("first"), b.join().expect("second"))
    });
    for out in [&a, &b] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(a.stdout, b.stdout, "the same answer");
    let dir = home.path().join("cache/repacked");
    if !repacks() {
        assert!(store::list(&dir).is_empty());
        return;
    }
    let names: Vec<_> = std::fs::read_dir(&dir)
        .expect("the cache directory")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        names.len(),
        1,
        "one file and no temporary one left: {names:?}"
    );
    let (_, outcome, _) = run(&model, Some(&dir));
    assert!(
        outcome.repacked == 0 && outcome.read_back > 0,
        "{outcome:?}"
    );
}
