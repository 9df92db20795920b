//! Unit tests for chat templates. Expected strings for real templates were produced with
//! transformers' own renderer (`render_jinja_template`, transformers 5.24, jinja2 3.1).

use super::*;
use crate::engine::gguf::MetaValue;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// SmolLM2-135M-Instruct's template, extracted from its GGUF file.
pub(super) const SMOLLM2: &str =
    include_str!("../../../tests/fixtures/smollm2_chat_template.jinja");
/// Qwen/Qwen3-0.6B's template as first published (llama.cpp keeps a copy in
/// models/templates/Qwen-Qwen3-0.6B.jinja).
pub(super) const QWEN3: &str = include_str!("../../../tests/fixtures/qwen3_chat_template.jinja");

pub(super) fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user("Hi there"),
        Message::assistant("Hello! How can I help?"),
        Message::user("What is 2+2?"),
    ]
}

pub(super) fn compile(source: &str) -> ChatTemplate {
    match ChatTemplate::from_source(source, TemplateSource::Override) {
        Ok(t) => t,
        Err(e) => panic!("template does not compile: {e:#}"),
    }
}

pub(super) fn render(source: &str, messages: &[Message]) -> anyhow::Result<String> {
    compile(source).render(messages, true, "<s>", "</s>")
}

fn header(architecture: &str, template: Option<&str>) -> GgufHeader {
    let mut metadata = BTreeMap::new();
    metadata.insert(
        "general.architecture".to_string(),
        MetaValue::String(architecture.to_string()),
    );
    if let Some(t) = template {
        metadata.insert(
            "tokenizer.chat_template".to_string(),
            MetaValue::String(t.to_string()),
        );
    }
    GgufHeader {
        path: PathBuf::from("/models/some-model-q4_k_m.gguf"),
        version: 3,
        file_size: 0,
        metadata,
        tensors: Vec::new(),
    }
}

fn no_tokens(_: &str) -> bool {
    false
}

#[test]
fn smollm2_template_renders_a_conversation_exactly_as_transformers_does() {
    let out = compile(SMOLLM2).render(&conversation(), true, "<|im_start|>", "<|im_end|>");
    assert_eq!(
        out.unwrap(),
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n\
         <|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>user\n\
         What is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn smollm2_template_adds_its_default_system_prompt_when_none_is_given() {
    let template = compile(SMOLLM2);
    let out = template.render(&conversation()[1..2], false, "<|im_start|>", "<|im_end|>");
    assert_eq!(
        out.unwrap(),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
         Face<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
    );
}

#[test]
fn qwen3_template_drops_the_thinking_of_turns_before_the_last_question() {
    let messages = [
        Message::system("Be brief."),
        Message::user("Hi"),
        Message::assistant("<think>\nThe user greets me.\n</think>\n\nHello!"),
        Message::user("Count to 3"),
    ];
    let out = compile(QWEN3)
        .render(&messages, true, "", "<|im_end|>")
        .unwrap();
    assert_eq!(
        out,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
         <|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nCount to 3<|im_end|>\n\
         <|im_start|>assistant\n"
    );
}

#[test]
fn qwen3_template_keeps_the_thinking_of_the_final_answer() {
    let messages = [
        Message::user("Hi"),
        Message::assistant("<think>\nThinking hard.\n</think>\n\nHello!"),
    ];
    let out = compile(QWEN3)
        .render(&messages, false, "", "<|im_end|>")
        .unwrap();
    assert_eq!(
        out,
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nThinking hard.\n\
         </think>\n\nHello!<|im_end|>\n"
    );
}

#[test]
fn raise_exception_fails_with_the_templates_message() {
    let source = "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}";
    let err = render(source, &conversation()).unwrap_err().to_string();
    assert!(err.contains("System role not supported"), "{err}");
    assert!(err.contains("rejected the conversation"), "{err}");
}

#[test]
fn an_endless_loop_is_stopped_with_an_error() {
    let source = "{% for i in range(100000) %}{% for j in range(100000) %}{% set x = i * j %}{% endfor %}{% endfor %}";
    let started = std::time::Instant::now();
    let err = render(source, &conversation()).unwrap_err().to_string();
    assert!(err.contains("too much work"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn a_huge_output_is_stopped_with_an_error() {
    for source in [
        "{{ 'x' * 1000000000 }}",
        "{% for i in range(100000) %}{{ 'abcdefghij' * 1000 }}{% endfor %}",
    ] {
        assert!(render(source, &conversation()).is_err(), "{source}");
    }
}

#[test]
fn unbounded_recursion_is_stopped_with_an_error() {
    let source = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    assert!(render(source, &conversation()).is_err());
    let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(
        ChatTemplate::from_source(&format!("{{{{ {deep} }}}}"), TemplateSource::Override).is_err()
    );
}

#[test]
fn templates_cannot_include_other_files() {
    let err = render("{% include '/etc/passwd' %}", &conversation()).unwrap_err();
    assert!(err.to_string().contains("template"), "{err}");
}

#[test]
fn chatml_is_the_fallback_for_llama_qwen_and_unknown_architectures() {
    for arch in ["llama", "qwen2", "qwen3", "mystery"] {
        let t = ChatTemplate::for_model(&header(arch, None), None, &no_tokens).unwrap();
        assert_eq!(t.origin(), &TemplateSource::BuiltIn("ChatML"));
        let out = t.render(&conversation(), true, "<s>", "</s>").unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n\
             <|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>user\n\
             What is 2+2?<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}

#[test]
fn gemma_fallback_folds_the_system_prompt_into_the_first_user_turn() {
    let t = ChatTemplate::for_model(&header("gemma3", Some("  ")), None, &no_tokens).unwrap();
    assert_eq!(t.origin(), &TemplateSource::BuiltIn("Gemma"));
    assert_eq!(
        t.notice().as_deref(),
        Some(concat!(
            "some-model-q4_k_m.gguf has no chat template (base models, not tuned for chat, have ",
            "none, and their answers may wander and not stop); using the built-in Gemma template"
        ))
    );
    let out = t.render(&conversation(), true, "<bos>", "<eos>").unwrap();
    assert_eq!(
        out,
        "<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n\
         <start_of_turn>model\nHello! How can I help?<end_of_turn>\n\
         <start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n"
    );
    assert!(ChatTemplate::starts_with_bos(&out, "<bos>"));
}

#[test]
fn gemma4_vocabulary_selects_the_gemma4_turn_format() {
    let has = |t: &str| t == "<|turn>";
    let t = ChatTemplate::for_model(&header("gemma4", None), None, &has).unwrap();
    assert_eq!(t.origin(), &TemplateSource::BuiltIn("Gemma 4"));
    let out = t
        .render(&conversation()[..2], true, "<bos>", "<eos>")
        .unwrap();
    assert_eq!(
        out,
        "<bos><|turn>system\nYou are terse.<turn|>\n<|turn>user\nHi there<turn|>\n\
         <|turn>model\n<|channel>thought\n<channel|>"
    );
}

#[test]
fn gemma4_fallback_sends_earlier_answers_without_their_thinking() {
    let has = |t: &str| t == "<|turn>";
    let t = ChatTemplate::for_model(&header("gemma4", None), None, &has).unwrap();
    let messages = [
        Message::user("2+2?"),
        Message::assistant("<think>thought\nEasy.</think>It is 4."),
        Message::user("And 3+3?"),
    ];
    let out = t.render(&messages, true, "<bos>", "<eos>").unwrap();
    assert_eq!(
        out,
        "<bos><|turn>user\n2+2?<turn|>\n<|turn>model\nIt is 4.<turn|>\n\
         <|turn>user\nAnd 3+3?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"
    );
}

#[test]
fn llama3_and_phi3_fallbacks_use_their_own_turn_markers() {
    let has = |t: &str| t == "<|start_header_id|>";
    let t = ChatTemplate::for_model(&header("llama", None), None, &has).unwrap();
    assert_eq!(t.origin(), &TemplateSource::BuiltIn("Llama 3"));
    let out = t
        .render(&conversation()[1..2], true, "<|begin_of_text|>", "")
        .unwrap();
    assert_eq!(
        out,
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    let t = ChatTemplate::for_model(&header("phi3", None), None, &no_tokens).unwrap();
    let out = t.render(&conversation()[..2], true, "<s>", "").unwrap();
    assert_eq!(
        out,
        "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\n"
    );
    assert!(!ChatTemplate::starts_with_bos(&out, "<s>"));
}

#[test]
fn the_files_own_template_and_overrides_win_over_fallbacks() {
    let file = header("gemma3", Some("{{ messages[0].content }}"));
    let t = ChatTemplate::for_model(&file, None, &no_tokens).unwrap();
    assert_eq!((t.origin(), t.notice()), (&TemplateSource::File, None));
    let t = ChatTemplate::for_model(&file, Some("X{{ bos_token }}"), &no_tokens).unwrap();
    assert_eq!(t.origin(), &TemplateSource::Override);
    assert_eq!(t.render(&conversation(), true, "<s>", "").unwrap(), "X<s>");
    assert!(ChatTemplate::for_model(&file, Some("{% if %}"), &no_tokens).is_err());
}

#[test]
fn a_file_template_that_does_not_compile_falls_back_with_a_notice() {
    let t = ChatTemplate::for_model(&header("qwen2", Some("{% for %}")), None, &no_tokens).unwrap();
    assert_eq!(t.origin(), &TemplateSource::BuiltIn("ChatML"));
    let notice = t.notice().unwrap();
    assert!(
        notice.starts_with("some-model-q4_k_m.gguf's chat template cannot be used ("),
        "{notice}"
    );
    assert!(
        notice.ends_with("; using the built-in ChatML template"),
        "{notice}"
    );
}

/// `is iterable` answers as Python's jinja2 does: `None` (tools when there are none) is not
/// iterable, so `tools is iterable and tools | length > 0` (Qwen3-Coder, Nemotron 3) is false
/// instead of failing on `none | length`; sequences, strings and undefined are iterable.
#[test]
fn none_is_not_iterable() {
    let source = "{{ tools is iterable }}|{{ tools is iterable and tools | length > 0 }}|\
                  {{ messages is iterable }}|{{ 'ab' is iterable }}|{{ 3 is iterable }}|\
                  {{ nope is iterable }}|{{ {'a': 1} is iterable }}";
    let template = compile(source);
    let plain = template.render(&conversation(), false, "", "").unwrap();
    assert_eq!(plain, "False|False|True|True|False|True|True");
    let tools = [serde_json::json!({"type": "function", "function": {"name": "f"}})];
    let with_tools = template
        .render_with_tools(&conversation(), Some(&tools), false, "", "")
        .unwrap();
    assert!(with_tools.starts_with("True|True|"), "{with_tools}");
}
