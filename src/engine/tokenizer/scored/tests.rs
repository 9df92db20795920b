//! The scored model against the tokenizers crate's BPE with the same merges listed.

use super::*;
use tokenizers::Model;

fn cows<'a>(words: &[&'a str]) -> Vec<Cow<'a, str>> {
    words.iter().map(|&w| Cow::Borrowed(w)).collect()
}

/// Ids and offsets from our model and from the listed BPE for each text, which must agree.
fn assert_same_as_listed(model: &ScoredBpe, texts: &[&str]) {
    let listed = model.listed().expect("listed BPE");
    for text in texts {
        let theirs = listed.tokenize(text).expect("tokenize");
        let theirs: Vec<(u32, (usize, usize))> = theirs.iter().map(|t| (t.id, t.offsets)).collect();
        assert_eq!(model.encode_word(text), theirs, "{text:?}");
    }
}

#[test]
fn merges_follow_scores_then_lengths_then_vocabulary_order() {
    let words = [
        "<unk>", "a", "b", "c", "ab", "bc", "abc", "ca", "cab", "abca",
    ];
    let scores = vec![0., 0., 0., 0., -1., -1., -3., -2., -2., -0.5];
    let model = ScoredBpe::new(&cows(&words), MergeOrder::Scores(scores), Some("<unk>"));
    // "ab" and "bc" tie on score and lengths: the earlier token merges first.
    assert_eq!(model.encode_word("abc")[0].0, 6);
    assert_same_as_listed(
        &model,
        &[
            "abc", "abca", "cabc", "bcab", "aaaa", "ccab", "abcabca", "x", "axb",
        ],
    );
    let model = ScoredBpe::new(&cows(&words), MergeOrder::Position, Some("<unk>"));
    assert_same_as_listed(
        &model,
        &["abc", "abca", "cabc", "bcab", "ccabcab", "abcabca"],
    );
}

#[test]
fn unknown_characters_fall_back_to_bytes_then_to_a_fused_unknown() {
    let mut words = vec!["<unk>".to_string(), "a".into(), "\u{e9}".into()];
    // Byte tokens only for é's two bytes' first half and for 'x'.
    words.extend(["<0xC3>".to_string(), "<0x78>".into()]);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let model = ScoredBpe::new(&cows(&words), MergeOrder::Position, Some("<unk>"));
    // 'x' is missing but its byte token is there; '日' and '本' have neither and fuse into
    // one unknown, which (as in the tokenizers crate) lands after the byte token that follows.
    let ids: Vec<u32> = model.encode_word("a日本xa").iter().map(|t| t.0).collect();
    assert_eq!(ids, [1, 4, 0, 1]);
    assert_same_as_listed(&model, &["a日本xa", "日", "x日x", "é日"]);
    let no_unk = ScoredBpe::new(&cows(&words), MergeOrder::Position, None);
    assert_eq!(
        no_unk
            .encode_word("日a")
            .iter()
            .map(|t| t.0)
            .collect::<Vec<_>>(),
        [1]
    );
}

#[test]
fn a_duplicate_token_looks_up_to_its_last_id_and_ranks_by_its_first() {
    let words = ["a", "b", "ab", "x", "ab"];
    let model = ScoredBpe::new(&cows(&words), MergeOrder::Position, None);
    assert_eq!(model.token_to_id("ab"), Some(4));
    assert_eq!(model.id_to_token(2), None);
    assert_eq!(model.id_to_token(4), Some("ab"));
    assert_eq!(model.distinct_tokens(), 4);
    assert_same_as_listed(&model, &["ab", "abab", "xab"]);
}

#[test]
fn negative_zero_scores_tie_with_zero() {
    assert_eq!(ordered_bits(-0.0), ordered_bits(0.0));
    assert!(ordered_bits(-1.0) < ordered_bits(-0.5));
    assert!(ordered_bits(-0.5) < ordered_bits(0.25));
    assert!(ordered_bits(0.25) < ordered_bits(f64::INFINITY));
}
