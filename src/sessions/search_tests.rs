use super::*;
use crate::sessions::format::tests::sample;

/// The sample session with these user messages after its two.
fn with_questions(questions: &[&str]) -> Session {
    let mut s = sample();
    for q in questions {
        let mut m = s.messages[0].clone();
        m.content = q.to_string();
        s.messages.push(m);
    }
    s
}

#[test]
fn find_ignores_case_and_returns_the_original_bytes() {
    let text = "Where is PARIS? paris!";
    let at = find(text, "paris").unwrap();
    assert_eq!(&text[at], "PARIS");
    assert_eq!(find(text, "london"), None);
    assert_eq!(find(text, ""), None);
}

#[test]
fn find_maps_back_over_characters_whose_lowercase_is_longer() {
    // 'İ' lowercases to two characters ("i̇", 3 bytes against 2): later offsets shift.
    let text = "İstanbul and Ankara";
    let at = find(text, "ankara").unwrap();
    assert_eq!(&text[at], "Ankara");
    let text = "ÄÖÜ straße";
    assert_eq!(&text[find(text, "äöü").unwrap()], "ÄÖÜ");
}

#[test]
fn a_snippet_keeps_about_eighty_characters_around_the_match_on_one_line() {
    let text = format!(
        "{}\n\nWe know that the capital of France is Paris,\tsince long ago. {}",
        "word ".repeat(40),
        "more ".repeat(40)
    );
    let at = find(&text, "capital").unwrap();
    let s = Snippet::around(&text, at, CONTEXT_CHARS);
    assert_eq!(s.matched, "capital");
    let line = s.plain();
    assert!(line.starts_with('…') && line.ends_with('…'), "{line}");
    assert!(
        line.contains("We know that the capital of France is Paris, since long ago."),
        "{line}"
    );
    assert!(!line.contains('\n') && !line.contains('\t') && !line.contains("  "));
    let chars = line.chars().count();
    assert!((70..=CONTEXT_CHARS + 2).contains(&chars), "{chars}: {line}");
}

#[test]
fn a_short_message_is_shown_whole_without_ellipses() {
    let text = "What is the capital of France?";
    let s = Snippet::around(
        text,
        find(text, "FRANCE".to_lowercase().as_str()).unwrap(),
        80,
    );
    assert_eq!(s.before, "What is the capital of ");
    assert_eq!(s.matched, "France");
    assert_eq!(s.after, "?");
}

#[test]
fn a_match_longer_than_the_width_is_cut() {
    let text = "a".repeat(500);
    let s = Snippet::around(&text, 0..400, 80);
    assert_eq!(s.matched.chars().count(), 80);
    assert_eq!(s.before, "");
}

#[test]
fn search_lists_matching_messages_in_order_with_who_wrote_them() {
    let s = with_questions(&["Is 4 even?", "and 5?", "4 again", "4 once more", "4!"]);
    let found = search(&s, "4", 3).unwrap();
    assert!(!found.title_matches);
    let who: Vec<&str> = found.hits.iter().map(|h| h.who.as_str()).collect();
    assert_eq!(who, ["SmolLM2", "you", "you"]);
    assert_eq!(found.hits[0].snippet.plain(), "It is 4.");
    assert_eq!(found.more, 2, "\"4 once more\" and \"4!\" are left");
}

#[test]
fn the_title_and_the_system_prompt_match_too() {
    let mut s = sample();
    s.title = "Arithmetic homework".into();
    let found = search(&s, "homework", 3).unwrap();
    assert!(found.title_matches && found.hits.is_empty());
    let found = search(&s, "brief", 3).unwrap();
    assert_eq!(found.hits[0].who, "system");
    assert_eq!(search(&s, "nowhere", 3), None);
}

#[test]
fn the_filter_text_is_lowercase_and_bounded() {
    let mut s = with_questions(&["The Eiffel TOWER"]);
    let text = filter_text(&s);
    assert!(filter_matches(&text, "eiffel tower"));
    assert!(filter_matches(&text, "BE BRIEF"), "the system prompt");
    assert!(filter_matches(&text, ""));
    assert!(!filter_matches(&text, "louvre"));
    // A huge message is cut at the bound, on a character boundary.
    s.messages[0].content = "é".repeat(FILTER_TEXT_BYTES);
    let text = filter_text(&s);
    assert!(text.len() <= FILTER_TEXT_BYTES);
    assert!(!filter_matches(&text, "eiffel"), "past the bound");
}
