//! Unit tests for chat templates. Expected strings for real templates were produced with
//! transformers' own renderer (`render_jinja_template`, transformers 5.24, jinja2 3.1).

use super::compat::{rewrite_generation_tags, strftime};
use super::json::python_float_repr;
use super::*;
use crate::engine::gguf::MetaValue;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// SmolLM2-135M-Instruct's template, extracted from its GGUF file.
const SMOLLM2: &str = include_str!("../../../tests/fixtures/smollm2_chat_template.jinja");
/// Qwen/Qwen3-0.6B's template as first published (llama.cpp keeps a copy in
/// models/templates/Qwen-Qwen3-0.6B.jinja).
const QWEN3: &str = include_str!("../../../tests/fixtures/qwen3_chat_template.jinja");

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user("Hi there"),
        Message::assistant("Hello! How can I help?"),
        Message::user("What is 2+2?"),
    ]
}

fn compile(source: &str) -> ChatTemplate {
    match ChatTemplate::from_source(source, TemplateSource::Override) {
        Ok(t) => t,
        Err(e) => panic!("template does not compile: {e:#}"),
    }
}

fn render(source: &str, messages: &[Message]) -> anyhow::Result<String> {
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
        Some("some-model-q4_k_m.gguf has no chat template; using the built-in Gemma template")
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

#[test]
fn python_string_methods_work() {
    let messages = [
        Message::system("  Sys  "),
        Message::user(" hi "),
        Message::assistant("yo"),
    ];
    let source = "{% for m in messages %}[{{ m['content'].strip() }}]{% if m.content.startswith(' h') %}S{% endif %}{% endfor %}";
    assert_eq!(render(source, &messages).unwrap(), "[Sys][hi]S[yo]");
    let source = "{{ 'a,b,c'.split(',') | join('|') }} {{ 'Hello World'.lower() }} {{ 'hi'.upper() }} {{ 'hello world'.title() }} {{ 'aXbX'.replace('X', '-') }} {{ 'abc'[::-1] }} {{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'xyyx'.rstrip('x') }} {{ messages[1:] | length }}";
    assert_eq!(
        render(source, &messages).unwrap(),
        "a|b|c hello world HI Hello World a-b- cba x\n|xyy 2"
    );
}

#[test]
fn loop_last_namespace_and_whitespace_control_behave_like_jinja2() {
    let messages = [
        Message::system("  Sys  "),
        Message::user(" hi "),
        Message::assistant("yo"),
    ];
    let source =
        "{% for m in messages %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}";
    assert_eq!(render(source, &messages).unwrap(), "system,user,assistant");
    let source = "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.role != 'system' %}{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ ns.n }}";
    assert_eq!(render(source, &messages).unwrap(), "2");
    let source = "{%- for m in messages %}\n  {%- if m.role == 'user' %}\n    <{{ m.content | trim }}>\n  {% endif %}\n{%- endfor %}\nEND\n";
    assert_eq!(render(source, &messages).unwrap(), "    <hi>\nEND");
    let source = "{% for m in messages %}\n    {% if m.role == 'user' %}\nU:{{ m.content }}\n    {% endif %}\n{% endfor %}\n";
    assert_eq!(render(source, &messages).unwrap(), "U: hi \n");
}

#[test]
fn python_style_tests_and_values_print_like_python() {
    let source = "{{ messages is sequence }}{{ messages[0] is mapping }}{{ messages[0].content is string }}{{ foo is defined }}{{ tools is none }}{{ tools is defined }}{{ enable_thinking is defined }}";
    assert_eq!(
        render(source, &conversation()).unwrap(),
        "TrueTrueTrueFalseTrueTrueFalse"
    );
}

#[test]
fn tojson_matches_python_json_dumps() {
    let messages = [Message::system("  Sys  ")];
    let source = "{{ {'a': [1, 2.5, 'x\u{e9}\"'], 'b': {}, 'c': none, 'd': true} | tojson(indent=2) }}|{{ {'a': [1, 1e20, 0.0001, 1e-5]} | tojson }}|{{ '\u{e9}' | tojson(ensure_ascii=true) }}|{{ {'k': 1} | tojson(separators=(',', ':')) }}|{{ messages[0] | tojson }}";
    assert_eq!(
        render(source, &messages).unwrap(),
        "{\n  \"a\": [\n    1,\n    2.5,\n    \"x\u{e9}\\\"\"\n  ],\n  \"b\": {},\n  \"c\": null,\n  \
         \"d\": true\n}|{\"a\": [1, 1e+20, 0.0001, 1e-05]}|\"\\u00e9\"|{\"k\":1}|\
         {\"role\": \"system\", \"content\": \"  Sys  \"}"
    );
    assert!(render("{{ x | tojson(bogus=1) }}", &messages).is_err());
}

#[test]
fn floats_are_written_like_python_repr() {
    let cases = [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (2.5, "2.5"),
        (100.0, "100.0"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1e16, "1e+16"),
        (1.5e16, "1.5e+16"),
        (1234567890123456.0, "1234567890123456.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (f64::NAN, "NaN"),
        (f64::NEG_INFINITY, "-Infinity"),
    ];
    for (value, expected) in cases {
        assert_eq!(python_float_repr(value), expected, "{value}");
    }
}

#[test]
fn strftime_formats_dates_like_python() {
    // 2024-07-26 15:04:05 UTC, a Friday (Llama 3.1's template prints "%d %b %Y").
    let t = 1_722_006_245;
    assert_eq!(strftime("%d %b %Y", t), "26 Jul 2024");
    assert_eq!(
        strftime("%A %B %-d, %Y %H:%M:%S %p %j %%", t),
        "Friday July 26, 2024 15:04:05 PM 208 %"
    );
    assert_eq!(strftime("%Y-%m-%d %a", 951_782_400), "2000-02-29 Tue");
    assert_eq!(strftime("%F %Q", 0), "1970-01-01 %Q");
    let today = render("{{ strftime_now('%Y') }}", &conversation()).unwrap();
    assert!(today.len() == 4 && today.starts_with('2'), "{today}");
}

#[test]
fn generation_tags_render_their_body() {
    assert_eq!(
        rewrite_generation_tags("a{%- generation -%}b{% endgeneration %}c"),
        "a{%- if true -%}b{% endif %}c"
    );
    let source =
        "{% for m in messages %}{% generation %}{{ m.role }}{% endgeneration %}{% endfor %}";
    assert_eq!(render(source, &conversation()[..2]).unwrap(), "systemuser");
}

#[test]
fn overlapping_block_markers_do_not_confuse_the_generation_rewrite() {
    // Found by fuzzing: in `{%}` the closing `%}` starts inside the opening `{%`.
    assert_eq!(rewrite_generation_tags("generation {%}"), "generation {%}");
    // As for minijinja's lexer, the block opened by `{%` runs to the next `%}`.
    assert_eq!(
        rewrite_generation_tags("{%}{% generation %}x{% endgeneration %}"),
        "{%}{% generation %}x{% endif %}"
    );
    assert!(ChatTemplate::from_source("{% generation %}{%}", TemplateSource::Override).is_err());
}

#[test]
fn starts_with_bos_needs_a_nonempty_token_at_the_very_start() {
    assert!(ChatTemplate::starts_with_bos("<s>hello", "<s>"));
    assert!(!ChatTemplate::starts_with_bos(" <s>hello", "<s>"));
    assert!(!ChatTemplate::starts_with_bos("hello", ""));
}

#[test]
fn deeply_nested_values_do_not_overflow_the_stack() {
    // ~100k levels: printing, comparing and dropping them recurses once per level.
    let source = "{% set ns = namespace(x=[]) %}{% for i in range(100) %}{% for j in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}{% endfor %}{{ ns.x == [ns.x] }}{{ (ns.x ~ '')|length > 0 }}";
    assert_eq!(render(source, &conversation()).unwrap(), "FalseTrue");
}

#[test]
fn tojson_of_a_value_that_doubles_at_every_level_runs_out_of_fuel() {
    let source = "{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x|tojson }}";
    let err = render(source, &conversation()).unwrap_err().to_string();
    assert!(err.contains("too much work"), "{err}");
}

#[test]
fn long_conversations_fit_in_the_fuel_budget() {
    let mut messages = vec![Message::system("You are helpful.")];
    for i in 0..1000 {
        messages.push(Message::user(format!(
            "question {i} {}",
            "lorem ipsum ".repeat(20)
        )));
        messages.push(Message::assistant(format!(
            "<think>\nhmm {i}\n</think>\n\nanswer {i}"
        )));
    }
    messages.push(Message::user("last"));
    for source in [QWEN3, SMOLLM2, GEMMA.source, LLAMA3.source] {
        let out = compile(source)
            .render(&messages, true, "<s>", "</s>")
            .unwrap();
        assert!(out.len() > 250_000);
    }
}
