use super::*;

fn paths(text: &str, closed_only: bool) -> Vec<String> {
    mentions(text, closed_only)
        .into_iter()
        .map(|m| m.path)
        .collect()
}

#[test]
fn mentions_are_at_words_that_start_with_an_at() {
    assert_eq!(paths("sum up @notes.txt please", false), ["notes.txt"]);
    assert_eq!(paths("@a.rs and @src/b.rs", false), ["a.rs", "src/b.rs"]);
    // An address, a lone @ and a doubled one are not mentions.
    assert!(paths("mail me@example.com or @ or @@x", false).is_empty());
    assert_eq!(
        paths("see @notes.txt, then @x.md.", false),
        ["notes.txt", "x.md"]
    );
    assert_eq!(paths("@\"my notes.txt\" now", false), ["my notes.txt"]);
}

#[test]
fn a_mention_still_being_typed_is_left_out_when_asked() {
    assert_eq!(paths("read @not", true), Vec::<String>::new());
    assert_eq!(paths("read @notes.txt ", true), ["notes.txt"]);
    assert_eq!(paths("read @notes.txt\nand", true), ["notes.txt"]);
    assert_eq!(paths("read @not", false), ["not"]);
}

#[test]
fn a_mention_knows_where_it_is() {
    let text = "x @a.txt y";
    let m = &mentions(text, false)[0];
    assert_eq!(&text[m.start..m.end], "@a.txt");
    let text = "@\"a b\" c";
    let m = &mentions(text, false)[0];
    assert_eq!(&text[m.start..m.end], "@\"a b\"");
}

#[test]
fn the_fence_is_longer_than_any_backticks_inside() {
    assert_eq!(
        fenced("a.rs", "fn main() {}\n"),
        "a.rs\n```rs\nfn main() {}\n```"
    );
    let block = fenced("README.md", "```sh\nls\n```");
    assert!(block.starts_with("README.md\n````md\n"), "{block}");
    assert!(block.ends_with("\n````"), "{block}");
}

#[test]
fn tab_finds_the_mention_at_the_cursor() {
    let text = "look at @src/ma";
    assert_eq!(mention_at(text, text.len()), Some((9, "src/ma")));
    assert_eq!(mention_at("no mention", 10), None);
    assert_eq!(mention_at("@", 1), Some((1, "")));
}

#[test]
fn completion_extends_to_what_the_candidates_share() {
    let one_file = [("main.rs".to_string(), false)];
    assert_eq!(
        complete_path("src/ma", &one_file).as_deref(),
        Some("src/main.rs ")
    );
    let one_dir = [("tests".to_string(), true)];
    assert_eq!(complete_path("te", &one_dir).as_deref(), Some("tests/"));
    let two = [
        ("notes-a.txt".to_string(), false),
        ("notes-b.txt".to_string(), false),
    ];
    assert_eq!(complete_path("no", &two).as_deref(), Some("notes-"));
    assert_eq!(complete_path("x", &[]), None);
}

#[test]
fn text_binary_directories_and_missing_files_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("a.txt");
    std::fs::write(&text, "hello\n").unwrap();
    assert_eq!(read_text(&text).unwrap(), "hello\n");
    let binary = dir.path().join("b.bin");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0, 1]).unwrap();
    assert!(matches!(read_text(&binary), Err(NotText::Refused(why)) if why.contains("binary")));
    let latin1 = dir.path().join("c.txt");
    std::fs::write(&latin1, [b'c', 0xe9]).unwrap();
    assert!(matches!(read_text(&latin1), Err(NotText::Refused(why)) if why.contains("UTF-8")));
    assert!(
        matches!(read_text(dir.path()), Err(NotText::Refused(why)) if why.contains("directory"))
    );
    assert_eq!(read_text(&dir.path().join("nope")), Err(NotText::Missing));
}

#[test]
fn candidates_come_from_the_directory_typed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("alpha.txt"), "").unwrap();
    std::fs::create_dir(dir.path().join("alps")).unwrap();
    std::fs::write(dir.path().join(".hidden"), "").unwrap();
    let typed = format!("{}/al", dir.path().display());
    assert_eq!(
        list_candidates(&typed),
        [("alpha.txt".to_string(), false), ("alps".to_string(), true)]
    );
    let typed = format!("{}/", dir.path().display());
    assert_eq!(
        list_candidates(&typed).len(),
        2,
        "hidden files only when asked for"
    );
}
