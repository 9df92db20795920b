//! The cache file's format on its own (written, read back, refused when it is not whole or
//! not for this key), and the guard that makes a changed repacker stale every older file.

use super::format::{self, Index};
use super::key::{Key, LAYOUT_VERSION};
use super::write::{self, Matrix};
use super::{read, store};
use crate::engine::model::kernels::format::FORMATS;
use crate::engine::model::kernels::packed::GROUP;
use crate::engine::model::weights::pages::{Arena, ReadOnly};
use memmap2::Mmap;
use std::fs::File;
use std::path::Path;

fn key(source: &str) -> Key {
    Key {
        source: source.into(),
        size: 1234,
        modified_s: 1_700_000_000,
        modified_ns: 5,
        device: 1,
        inode: 2,
        kernels: "test".into(),
        layout_version: LAYOUT_VERSION,
    }
}

/// A matrix of `len` bytes counting up from `seed`.
fn matrix(name: &str, len: usize, seed: u8) -> Matrix {
    let mut region = Arena::new(len).take(len).expect("anonymous memory");
    for (i, b) in region.bytes_mut().iter_mut().enumerate() {
        *b = seed.wrapping_add((i % 251) as u8);
    }
    Matrix {
        name: name.into(),
        layout: "Q8(Q4_1X16)".into(),
        bytes: region.done(),
        hash: None,
    }
}

/// Writes `matrices` for `key` to `dir/cache` as the background writer does, and waits.
fn write_file(dir: &Path, key: &Key, matrices: Vec<Matrix>) -> std::path::PathBuf {
    let path = dir.join("m.test.00000000.repacked");
    write::spawn(
        path.clone(),
        write::temp_in(dir).expect("temp"),
        key.clone(),
        matrices,
    );
    write::finish();
    path
}

fn index(path: &Path, key: &Key) -> Option<Index> {
    format::read_index(&File::open(path).expect("cache file"), key)
}

#[test]
fn a_written_file_reads_back_every_matrix_bit_for_bit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("/models/m.gguf");
    // One matrix longer than a hash chunk, so its chunks are read in parallel.
    let (big, small) = (format::CHUNK + 4097, 100);
    let path = write_file(
        dir.path(),
        &k,
        vec![matrix("a", big, 1), matrix("b", small, 7)],
    );
    let idx = index(&path, &k).expect("a valid index");
    let file = File::open(&path).expect("cache file");
    let mapped = map_whole(&file);
    for (entry, want) in idx
        .entries
        .iter()
        .zip([matrix("a", big, 1), matrix("b", small, 7)])
    {
        assert_eq!(entry.offset % format::ALIGN, 0, "page-aligned");
        let arena = Arena::new(0);
        let copied = read::matrix(&file, None, entry, &arena).expect("matrix copied back");
        assert_eq!(*copied, *want.bytes, "{} copied", entry.name);
        let in_place = read::matrix(&file, Some(&mapped), entry, &arena).expect("matrix in place");
        assert_eq!(*in_place, *want.bytes, "{} in place", entry.name);
    }
    assert_eq!(
        store::list(dir.path()).len(),
        1,
        "no temporary file is left"
    );
}

#[test]
fn a_changed_byte_fails_only_its_own_matrix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("/models/m.gguf");
    let path = write_file(
        dir.path(),
        &k,
        vec![matrix("a", 5000, 1), matrix("b", 5000, 7)],
    );
    let idx = index(&path, &k).expect("a valid index");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[idx.entries[1].offset as usize + 4321] ^= 0x10;
    std::fs::write(&path, bytes).expect("write");
    let file = File::open(&path).expect("cache file");
    let mapped = map_whole(&file);
    let arena = Arena::new(0);
    for map in [None, Some(&mapped)] {
        assert!(read::matrix(&file, map, &idx.entries[0], &arena).is_some());
        assert!(
            read::matrix(&file, map, &idx.entries[1], &arena).is_none(),
            "damage is caught"
        );
    }
}

#[test]
fn a_matrix_read_back_is_written_again_with_the_hash_it_was_checked_against() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("/models/m.gguf");
    let first = write_file(dir.path(), &k, vec![matrix("a", 5000, 1)]);
    let checked = index(&first, &k).expect("a valid index").entries[0].hash;
    std::fs::remove_file(&first).expect("remove");
    // The writer takes a known hash as given, not hashing the bytes again: the right one
    // reads back, a wrong one (which only a bug could give) fails the check.
    for (given, reads_back) in [(checked, true), (checked ^ 1, false)] {
        let path = write_file(
            dir.path(),
            &k,
            vec![Matrix {
                hash: Some(given),
                ..matrix("a", 5000, 1)
            }],
        );
        let entry = &index(&path, &k).expect("a valid index").entries[0];
        assert_eq!(entry.hash, given);
        let file = File::open(&path).expect("cache file");
        let read = read::matrix(&file, None, entry, &Arena::new(0));
        assert_eq!(read.is_some(), reads_back, "hash {given:x}");
    }
}

/// The whole file mapped, as `read::huge_mapping` maps it where huge pages are had (reading
/// in place does not depend on the page size).
fn map_whole(file: &File) -> ReadOnly {
    // SAFETY: a test's own file, not changed while mapped.
    ReadOnly::new(unsafe { Mmap::map(file) }.expect("map"))
}

#[test]
fn a_file_not_whole_or_not_for_this_model_is_not_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("/models/m.gguf");
    let path = write_file(dir.path(), &k, vec![matrix("a", 9000, 1)]);
    assert!(index(&path, &k).is_some());

    // The model file changed since (its modification time), or another layout version.
    let touched = Key {
        modified_ns: 6,
        ..k.clone()
    };
    assert!(index(&path, &touched).is_none(), "stale");
    let newer = Key {
        layout_version: LAYOUT_VERSION + 1,
        ..k.clone()
    };
    assert!(index(&path, &newer).is_none(), "another layout version");

    // Cut short: the last matrix would lie past the end.
    let whole = std::fs::read(&path).expect("read");
    std::fs::write(&path, &whole[..whole.len() - 1]).expect("truncate");
    assert!(index(&path, &k).is_none(), "truncated");
    // Cut inside the index, or nothing at all.
    std::fs::write(&path, &whole[..40]).expect("truncate");
    assert!(index(&path, &k).is_none(), "truncated in the index");
    std::fs::write(&path, b"").expect("empty");
    assert!(index(&path, &k).is_none(), "empty");
    // Not ours: a GGUF file under the cache's name, or a length past any sane index.
    std::fs::write(&path, b"GGUF\x03\0\0\0 and more bytes here").expect("foreign");
    assert!(index(&path, &k).is_none(), "foreign");
    let mut huge = b"TAPERPK\x01".to_vec();
    huge.extend_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&path, huge).expect("bad length");
    assert!(index(&path, &k).is_none(), "an index length past the file");
}

#[test]
fn pruning_removes_cache_files_and_nothing_else() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("/models/m.gguf");
    let path = write_file(dir.path(), &k, vec![matrix("a", 9000, 1)]);
    std::fs::write(dir.path().join("notes.txt"), "mine").expect("other file");
    let bytes = std::fs::metadata(&path).expect("size").len();
    assert_eq!(store::total_bytes(dir.path()), bytes);
    assert_eq!(store::prune(dir.path()).expect("prune"), (1, bytes));
    assert!(!path.exists());
    assert!(dir.path().join("notes.txt").exists());
    assert_eq!(
        store::prune(&dir.path().join("missing")).expect("nothing"),
        (0, 0)
    );
}

/// What each repacker makes of the same ggml bytes, hashed: a repacker that writes anything
/// else must raise [`LAYOUT_VERSION`] (every cache file of the old layouts is then stale and
/// rebuilt, never read as the new layout) and update this table.
const LAYOUTS: &str = "\
version 1
Q8(Q4_1X16) 1aeb23c931a753a3
Q8(Q5_0X16) 3829c81d45653213
Q8(Q8_0X16) 1c70a3ee517d5fea
Q8K(Q4KX16) dd5bc992a156defb
Q8K(Q4KX16Compact) 997a132fe51ad738
Q8K(Q5KX16) c3e61d89856d5352
Q8K(Q5KX16Compact) deaf53a407a6e875
Q8K(Q6KX16) ea7ab1d27935a12a
";

#[test]
fn layouts_have_not_changed() {
    let mut seen = format!("version {LAYOUT_VERSION}\n");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for spec in &FORMATS {
        for &(layout, repack) in spec.packed {
            // 37 rows (two groups and a padded one) of two blocks, pseudo-random bytes.
            let (rows, blocks) = (37, 2);
            let w: Vec<u8> = (0..rows * blocks * spec.block_bytes)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let mut out = vec![0u8; rows.next_multiple_of(GROUP) * blocks * layout.block_bytes()];
            repack(&w, rows, &mut out);
            let digest = xxhash_rust::xxh3::xxh3_64(&out);
            seen.push_str(&format!("{layout:?} {digest:016x}\n"));
        }
    }
    assert_eq!(
        seen, LAYOUTS,
        "a repacked layout changed: raise LAYOUT_VERSION (packed_cache/key.rs) and make this \
         table what the test saw"
    );
}

#[test]
fn a_file_of_many_matrices_reads_back_whole() {
    // A thousand small matrices: the index with real offsets is kilobytes shorter than the
    // one laid out with placeholders, so the first matrix lies pages past the index's end.
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("/models/m.gguf");
    let want: Vec<Matrix> = (0..1000)
        .map(|i| matrix(&format!("blk.{i}.ffn_up.weight"), 3000 + i, i as u8))
        .collect();
    let again: Vec<Matrix> = (0..1000)
        .map(|i| matrix(&format!("blk.{i}.ffn_up.weight"), 3000 + i, i as u8))
        .collect();
    let path = write_file(dir.path(), &k, again);
    let idx = index(&path, &k).expect("a valid index");
    let file = File::open(&path).expect("cache file");
    let mapped = map_whole(&file);
    assert!(
        idx.entries[0].offset >= 2 * format::ALIGN,
        "{}",
        idx.entries[0].offset
    );
    for (entry, m) in idx.entries.iter().zip(&want) {
        let arena = Arena::new(0);
        let back = read::matrix(&file, Some(&mapped), entry, &arena).expect("read back");
        assert_eq!(*back, *m.bytes, "{}", entry.name);
    }
}
