//! The map of imports between the source folders has no circle: the boundary types in
//! `protocol` and the leaves under them stay leaves, the engine does not reach back into its
//! clients, and a folder's insides do not reach back into a sibling that uses them.
//!
//! Each folder of `src/` (and each file directly in `src/`) is a node. A file's references in
//! code (`crate::a::b`, `super::x`, resolved to the folder that holds their target; comments
//! and doc links are not imports) are its folder's edges. A folder reaching into its own sub-folders is not counted: a parent holds
//! its children (`mod`, `pub use`). Every other edge counts, a child's use of its parent
//! included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path of each source file, as segments (`src/engine/host/run.rs` → engine, host, run;
/// a `mod.rs` is its folder).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The node holding module `path`: the longest prefix that is a folder of `src/`, or the
/// top-level file it starts with.
fn node_of(src: &Path, path: &[String]) -> Option<String> {
    let mut best = None;
    for n in 1..=path.len() {
        if src.join(path[..n].join("/")).is_dir() {
            best = Some(path[..n].join("::"));
        }
    }
    best.or_else(|| {
        let first = path.first()?;
        src.join(format!("{first}.rs"))
            .is_file()
            .then(|| first.clone())
    })
}

/// Every `crate::…` and `super::…` path in `text`, as absolute module segments.
fn references(text: &str, module: &[String], is_folder_module: bool) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !ident(bytes[i - 1]);
        let rest: String = bytes[i..bytes.len().min(i + 8)].iter().collect();
        let (base, skip) = if starts_word && rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if starts_word && rest.starts_with("super::") {
            // `super` of a folder's mod.rs is the folder's parent; of a file, its folder.
            let mut base = module.to_vec();
            if !is_folder_module || !base.is_empty() {
                base.pop();
            }
            (base, 7)
        } else {
            i += 1;
            continue;
        };
        let mut j = i + skip;
        let mut path = base;
        loop {
            let start = j;
            while j < bytes.len() && ident(bytes[j]) {
                j += 1;
            }
            let segment: String = bytes[start..j].iter().collect();
            if segment == "super" {
                path.pop();
            } else if !segment.is_empty() {
                path.push(segment);
            }
            if bytes.get(j) == Some(&':') && bytes.get(j + 1) == Some(&':') {
                j += 2;
            } else {
                break;
            }
        }
        found.push(path);
        i = j.max(i + 1);
    }
    found
}

/// The code of `text` without its comments (a doc link is not an import). A `//` inside a
/// string cuts that line short, which at worst hides a reference in the rest of the line.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The folder graph's edges, each with one file that makes it.
fn edges(src: &Path) -> BTreeMap<(String, String), PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = BTreeMap::new();
    for file in files {
        let module = module_of(src, &file);
        let folder_module = file.file_name().is_some_and(|n| n == "mod.rs");
        let Some(from) = node_of(src, &module).or_else(|| Some("lib".into())) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable source");
        for target in references(&without_comments(&text), &module, folder_module) {
            let Some(to) = node_of(src, &target) else {
                continue;
            };
            let holds = to.starts_with(&format!("{from}::"));
            if to != from && !holds {
                edges
                    .entry((from.clone(), to))
                    .or_insert_with(|| file.clone());
            }
        }
    }
    edges
}

/// A circle in the graph, as its nodes in order, if there is one.
fn find_circle(edges: &BTreeMap<(String, String), PathBuf>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    fn visit<'a>(
        node: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut circle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            circle.push(node.to_string());
            return Some(circle);
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for to in next.get(node).into_iter().flatten() {
            if let Some(c) = visit(to, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    let starts: Vec<&str> = next.keys().copied().collect();
    starts
        .into_iter()
        .find_map(|start| visit(start, &next, &mut Vec::new(), &mut done))
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_two_folders_import_each_other_even_through_others() {
    let edges = edges(&src_dir());
    if let Some(circle) = find_circle(&edges) {
        let steps: Vec<String> = circle
            .windows(2)
            .map(|w| {
                let file = &edges[&(w[0].clone(), w[1].clone())];
                format!("{} -> {} ({})", w[0], w[1], file.display())
            })
            .collect();
        panic!("an import circle between folders:\n{}", steps.join("\n"));
    }
}

#[test]
fn the_boundary_types_are_a_leaf() {
    let edges = edges(&src_dir());
    let out: Vec<&String> = edges
        .keys()
        .filter(|(from, _)| from == "protocol")
        .map(|(_, to)| to)
        .collect();
    let allowed = ["chat", "stats"];
    assert!(
        out.iter().all(|to| allowed.contains(&to.as_str())),
        "protocol may import only {allowed:?}, not {out:?}"
    );
    for leaf in ["config", "sessions", "remote"] {
        let into_engine: Vec<_> = edges
            .iter()
            .filter(|((from, to), _)| {
                (from == leaf || from.starts_with(&format!("{leaf}::")))
                    && (to == "engine" || to.starts_with("engine::"))
            })
            .map(|((_, to), file)| format!("{to} ({})", file.display()))
            .collect();
        assert!(
            into_engine.is_empty(),
            "{leaf} reaches into the engine: {into_engine:?}"
        );
    }
}

#[test]
fn the_map_sees_a_planted_circle() {
    // The detector itself: a circle through three nodes is found, a chain is not.
    let edge = |a: &str, b: &str| ((a.to_string(), b.to_string()), PathBuf::from("x.rs"));
    let chain: BTreeMap<_, _> = [edge("a", "b"), edge("b", "c")].into_iter().collect();
    assert_eq!(find_circle(&chain), None);
    let circle: BTreeMap<_, _> = [edge("a", "b"), edge("b", "c"), edge("c", "a")]
        .into_iter()
        .collect();
    assert_eq!(
        find_circle(&circle),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // And the real map is not empty: the engine is reached from the chat.
    let real = edges(&src_dir());
    assert!(real.contains_key(&("tui::update".to_string(), "protocol".to_string())));
}
