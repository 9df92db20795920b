//! Chat templates chosen for the real test models: SmolLM2 uses the template in its file,
//! Gemma 3 270M has none and gets the built-in Gemma template with a notice.

use crate::common;

use taper::chat::Message;
use taper::engine::gguf::GgufHeader;
use taper::engine::template::{ChatTemplate, TemplateSource};

fn header(file: &str) -> GgufHeader {
    GgufHeader::read(&common::real_model(file)).unwrap()
}

/// A `has_token` backed by the vocabulary in the file's metadata.
fn vocabulary(header: &GgufHeader) -> impl Fn(&str) -> bool + '_ {
    let tokens = header.get_array("tokenizer.ggml.tokens").unwrap_or(&[]);
    move |token: &str| tokens.iter().any(|t| t.as_str() == Some(token))
}

#[test]
fn smollm2_uses_the_template_in_its_file() {
    let header = header(common::SMOLLM2);
    let in_file = header.get_str("tokenizer.chat_template").unwrap();
    // The unit tests' fixture is this very text.
    let fixture = include_str!("../fixtures/smollm2_chat_template.jinja");
    assert_eq!(in_file, fixture);

    let has_token = vocabulary(&header);
    let template = ChatTemplate::for_model(&header, None, &has_token).unwrap();
    assert_eq!(template.origin(), &TemplateSource::File);
    assert_eq!(template.notice(), None);
    let out = template
        .render(&[Message::user("Hi")], true, "<|im_start|>", "<|im_end|>")
        .unwrap();
    assert!(out.ends_with("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
}

#[test]
fn gemma3_270m_has_no_template_and_gets_the_gemma_fallback_with_a_notice() {
    let header = header(common::GEMMA3);
    assert_eq!(header.get_str("tokenizer.chat_template"), None);
    let has_token = vocabulary(&header);
    assert!(has_token("<start_of_turn>"));

    let template = ChatTemplate::for_model(&header, None, &has_token).unwrap();
    assert_eq!(template.origin(), &TemplateSource::BuiltIn("Gemma"));
    assert_eq!(
        template.notice().as_deref(),
        Some(concat!(
            "gemma-3-270m-q4_k_m.gguf has no chat template (base models, not tuned for chat, have ",
            "none, and their answers may wander and not stop); using the built-in Gemma template"
        ))
    );
    let messages = [Message::system("Be brief."), Message::user("Hi")];
    let out = template.render(&messages, true, "<bos>", "<eos>").unwrap();
    assert_eq!(
        out,
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    );
    assert!(ChatTemplate::starts_with_bos(&out, "<bos>"));
}

#[test]
fn an_override_replaces_the_files_template() {
    let header = header(common::SMOLLM2);
    let has_token = vocabulary(&header);
    let source = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";
    let template = ChatTemplate::for_model(&header, Some(source), &has_token).unwrap();
    assert_eq!(template.origin(), &TemplateSource::Override);
    let out = template
        .render(&[Message::user("Hi")], false, "", "")
        .unwrap();
    assert_eq!(out, "user: Hi\n");
}
