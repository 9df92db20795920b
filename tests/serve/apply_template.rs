//! taper's `/apply-template` against a real llama-server's, byte for byte, with real chat
//! templates (llama.cpp's own collection, `models/templates` of the vendored source) put into
//! copies of the SmolLM2 test model: a plain conversation, tools, content in text parts, a
//! tool loop and parallel calls (arguments and results with non-ASCII text, quotes and
//! newlines). Each template gets one taper and one llama-server, started once for all its
//! requests.

use crate::common;
use crate::gguf_copy;
use crate::llama_server::LlamaServer;
use crate::serve_support::{post, Server};
use serde_json::{json, Value};
use std::path::PathBuf;

/// llama.cpp's templates folder: `TAPER_LLAMA_CPP_TEMPLATES` when set, else the one in the
/// source tree `scripts/llama-cpp` builds from, found from the binaries it built (in the same
/// cache: `<cache>/llama.cpp-…/bin` and `<cache>/llama-cpp-python-…/vendor/llama.cpp`).
fn templates_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TAPER_LLAMA_CPP_TEMPLATES") {
        return PathBuf::from(dir);
    }
    let bin = crate::llama_server::binary();
    let cache = bin
        .parent()
        .and_then(|b| b.parent())
        .and_then(|b| b.parent())
        .expect("the cache folder above llama.cpp's bin folder");
    let dir = cache.join("llama-cpp-python-0.3.36/vendor/llama.cpp/models/templates");
    assert!(
        dir.is_dir(),
        "{} is missing: set TAPER_LLAMA_CPP_TEMPLATES to llama.cpp's models/templates folder",
        dir.display()
    );
    dir
}

/// Two functions with descriptions and nested parameter schemas (an object in an object, an
/// array of objects, an enum).
fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Get the current weather and a forecast for a place.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "forecast": {
                        "type": "object",
                        "description": "What forecast to add.",
                        "properties": {
                            "days": {"type": "integer", "minimum": 1, "maximum": 7},
                            "hourly": {"type": "boolean"}
                        },
                        "required": ["days"]
                    }
                },
                "required": ["location"]
            }
        }},
        {"type": "function", "function": {
            "name": "book_flight",
            "description": "Book a flight for one or more passengers.",
            "parameters": {
                "type": "object",
                "properties": {
                    "from": {"type": "string", "description": "IATA code of the departure airport"},
                    "to": {"type": "string", "description": "IATA code of the arrival airport"},
                    "passengers": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "age": {"type": "integer"}
                            },
                            "required": ["name"]
                        }
                    }
                },
                "required": ["from", "to", "passengers"]
            }
        }}
    ])
}

/// The request bodies compared, by name.
fn cases() -> Vec<(&'static str, Value)> {
    let system = json!({"role": "system", "content": "You are a helpful assistant."});
    let ask = json!({"role": "user", "content": "What is the weather in Paris, and can you book me a flight from CDG to JFK?"});
    let weather_call = json!({"id": "call_weather_1", "type": "function", "function": {
        "name": "get_weather",
        "arguments": "{\"location\": \"Paris, France\", \"unit\": \"celsius\", \"forecast\": {\"days\": 2, \"hourly\": false}}"
    }});
    let flight_call = json!({"id": "call_flight_2", "type": "function", "function": {
        "name": "book_flight",
        "arguments": "{\"from\": \"CDG\", \"to\": \"JFK\", \"passengers\": [{\"name\": \"Zoë \\\"Z\\\" Ångström/Ⅻ 😀\", \"age\": 36}, {\"name\": \"Ada\\nL.\"}]}"
    }});
    vec![
        (
            "plain",
            json!({"messages": [
                system,
                {"role": "user", "content": "Hello! Who are you?"},
                {"role": "assistant", "content": "I am a helpful assistant."},
                {"role": "user", "content": "Tell me a joke."}
            ]}),
        ),
        (
            "tools",
            json!({"messages": [system, ask], "tools": tools()}),
        ),
        (
            "parts",
            json!({"messages": [
                {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "First part."},
                    {"type": "text", "text": "Second part."}
                ]}
            ]}),
        ),
        (
            "tool_loop",
            json!({"messages": [
                system,
                ask,
                {"role": "assistant", "content": "", "tool_calls": [weather_call]},
                {"role": "tool", "tool_call_id": "call_weather_1", "content": "{\"temperature\": 18, \"sky\": \"cloudy\"}"},
                {"role": "user", "content": "Thanks. Is that warm?"}
            ], "tools": tools()}),
        ),
        (
            "parallel",
            json!({"messages": [
                system,
                ask,
                {"role": "assistant", "content": null, "tool_calls": [weather_call, flight_call]},
                {"role": "tool", "tool_call_id": "call_weather_1", "content": "{\"temperature\": 18, \"sky\": \"cloudy\"}"},
                {"role": "tool", "tool_call_id": "call_flight_2", "content": "{\"booking\": \"ABC123\", \"note\": \"Zoë's seat: 12A ✈\"}"}
            ], "tools": tools()}),
        ),
    ]
}

/// Where two prompts first differ, with some context around it.
fn diff(ours: &str, theirs: &str) -> String {
    let at = ours
        .bytes()
        .zip(theirs.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let around = |s: &str| {
        let mut start = at.saturating_sub(120);
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 120).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        format!("{:?}", &s[start..end])
    };
    format!(
        "first difference at byte {at} (taper {} bytes, llama.cpp {} bytes)\n  taper:     {}\n  llama.cpp: {}",
        ours.len(),
        theirs.len(),
        around(ours),
        around(theirs)
    )
}

/// How one template is compared.
struct Spec {
    /// The file in llama.cpp's templates folder, without `.jinja`.
    file: &'static str,
    /// llama-server passes `enable_thinking: true` to every template that can think unless
    /// told otherwise (its own default, `--reasoning auto`); taper passes no
    /// `enable_thinking`, as transformers does, so the template's own default holds. For
    /// templates whose default is off, llama-server runs with `--reasoning off`, which makes
    /// it pass false (the same render as "undefined" there).
    thinking_off: bool,
    /// Cases left out, each with the reason.
    skip: &'static [(&'static str, &'static str)],
    /// The date in Llama 3.1's `Today Date: 26 Jul 2024` line is replaced by a placeholder in
    /// both prompts (after checking its form) before they are compared: llama.cpp passes
    /// today's date as `date_string` to every template, where transformers and taper pass
    /// none and the template writes its own default date. (Templates that ask for the date
    /// themselves, `strftime_now` in Llama 3.2 or gpt-oss, are compared as they are:
    /// llama-server runs in UTC, as taper's clock does.)
    today_date: bool,
}

const PLAIN: Spec = Spec {
    file: "",
    thinking_off: false,
    skip: &[],
    today_date: false,
};

/// Templates that know no tools: taper describes the tools in its own generic form (see
/// src/tools/generic.rs) so that the model can still call them, while llama.cpp renders the
/// template as it is and the tools and calls are left out. The prompts differ by design.
const NO_NATIVE_TOOLS: &[(&str, &str)] = &[
    ("tools", "the template knows no tools"),
    ("tool_loop", "the template knows no tools"),
    ("parallel", "the template knows no tools"),
];

/// Templates with a tool section of their own, in a call syntax taper cannot read calls back
/// from (`ToolFormat::Generic`): taper then gives the template no `tools` and describes them
/// in its generic form, whose calls it can read, while llama.cpp renders the template's own
/// tool section (it has a parser for that syntax). Until taper learns the syntax, only the
/// plain conversation can match.
const TOOL_SYNTAX_UNKNOWN: &[(&str, &str)] = &[
    (
        "tools",
        "taper does not parse this template's tool-call syntax",
    ),
    (
        "tool_loop",
        "taper does not parse this template's tool-call syntax",
    ),
    (
        "parallel",
        "taper does not parse this template's tool-call syntax",
    ),
];

/// Templates that read a message's content parts themselves (`content` as a list of
/// `{type: "text", text}`), each joining them its own way: llama.cpp hands them the list,
/// while taper gives every template one string, the parts joined by newlines (as llama.cpp
/// joins them for the other templates).
const TYPED_CONTENT: &[(&str, &str)] = &[("parts", "the template joins the parts itself")];

/// [`TOOL_SYNTAX_UNKNOWN`] and [`TYPED_CONTENT`].
const TOOL_SYNTAX_UNKNOWN_TYPED: &[(&str, &str)] = &[
    (
        "tools",
        "taper does not parse this template's tool-call syntax",
    ),
    (
        "tool_loop",
        "taper does not parse this template's tool-call syntax",
    ),
    (
        "parallel",
        "taper does not parse this template's tool-call syntax",
    ),
    ("parts", "the template joins the parts itself"),
];

/// `Today Date: 05 Dec 2026` → `Today Date: <date>`, after checking the date's form.
fn without_today(prompt: &str) -> String {
    const LABEL: &str = "Today Date: ";
    let mut out = String::new();
    let mut rest = prompt;
    while let Some(at) = rest.find(LABEL) {
        let (before, after) = rest.split_at(at + LABEL.len());
        out.push_str(before);
        let date = after.get(..11).unwrap_or(after);
        let b = date.as_bytes();
        let well_formed = b.len() == 11
            && b[..2].iter().all(u8::is_ascii_digit)
            && b[2] == b' '
            && b[3].is_ascii_uppercase()
            && b[4..6].iter().all(u8::is_ascii_lowercase)
            && b[6] == b' '
            && b[7..].iter().all(u8::is_ascii_digit);
        assert!(well_formed, "not a `%d %b %Y` date: {date:?}");
        out.push_str("<date>");
        rest = &after[11..];
    }
    out.push_str(rest);
    out
}

/// Renders every case (except those the spec skips) with both servers on a copy of the test
/// model holding the template. A case the template itself refuses (`raise_exception`) must
/// be refused by both.
fn compare(spec: Spec) {
    let template = spec.file;
    let file = templates_dir().join(format!("{template}.jinja"));
    let text = std::fs::read_to_string(&file).expect("read the template");
    let dir = tempfile::tempdir().expect("temp dir");
    let model = dir.path().join("model.gguf");
    gguf_copy::with_template(&common::real_model(common::SMOLLM2), &text, &model);
    // The same template, given to llama-server as its file: bos and eos still come from the
    // vocabulary, and it starts in under a second, where with the copy in the GGUF it spent
    // about three seconds loading (measured here, not explained). No warm-up run either:
    // nothing is generated.
    let file = file.display().to_string();
    let mut args = vec!["--jinja", "--no-warmup", "--chat-template-file", &file];
    if spec.thinking_off {
        args.extend(["--reasoning", "off"]);
    }
    // Both start at once: each spends most of its start-up loading the model.
    let (taper, llama) = std::thread::scope(|scope| {
        let llama = scope.spawn(|| LlamaServer::start_with(&model, &args));
        let taper = Server::start_with(model.as_os_str(), &[]);
        (taper, llama.join().expect("llama-server started"))
    });
    let mut failures = Vec::new();
    for (name, body) in cases() {
        if spec.skip.iter().any(|(case, _)| *case == name) {
            continue;
        }
        let body = body.to_string();
        let (status, ours) = post(&format!("{}/apply-template", taper.url), &body);
        let (their_status, theirs) = post(&format!("{}/apply-template", llama.root), &body);
        if their_status == 400 && theirs.to_string().contains("Jinja Exception") {
            assert_eq!(
                status, 400,
                "{template} {name}: llama.cpp's render raised ({theirs}); taper's did not: {ours}"
            );
            continue;
        }
        assert_eq!(
            their_status, 200,
            "{template} {name}: llama-server said {theirs}"
        );
        assert_eq!(status, 200, "{template} {name}: taper said {ours}");
        let mut ours = ours["prompt"].as_str().expect("taper's prompt").to_string();
        let mut theirs = theirs["prompt"]
            .as_str()
            .expect("llama.cpp's prompt")
            .to_string();
        if spec.today_date {
            ours = without_today(&ours);
            theirs = without_today(&theirs);
        }
        if ours != theirs {
            failures.push(format!("{template} / {name}: {}", diff(&ours, &theirs)));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

/// One test per template, so that they run in parallel and fail one by one.
macro_rules! templates {
    ($($test:ident: $spec:expr;)*) => {
        $(
            #[test]
            fn $test() {
                compare($spec);
            }
        )*
    };
}

templates! {
    qwen3: Spec { file: "Qwen-Qwen3-0.6B", ..PLAIN };
    qwen2_5: Spec { file: "Qwen-Qwen2.5-7B-Instruct", ..PLAIN };
    qwen3_5: Spec { file: "Qwen3.5-4B", skip: TYPED_CONTENT, ..PLAIN };
    qwen3_coder: Spec { file: "Qwen3-Coder", ..PLAIN };
    qwq: Spec { file: "Qwen-QwQ-32B", thinking_off: true, ..PLAIN };
    llama3_1: Spec { file: "meta-llama-Llama-3.1-8B-Instruct", today_date: true, ..PLAIN };
    llama3_2: Spec { file: "meta-llama-Llama-3.2-3B-Instruct", ..PLAIN };
    llama3_3: Spec { file: "meta-llama-Llama-3.3-70B-Instruct", today_date: true, ..PLAIN };
    // Gemma 4 (both variants) reads user parts itself; given a system message's parts,
    // llama.cpp's render prints the list's Python form.
    gemma4: Spec { file: "google-gemma-4-31B-it", thinking_off: true, skip: TYPED_CONTENT, ..PLAIN };
    // This variant reads tool results only from `tool_responses` on the assistant message
    // (Google's own shape); llama.cpp moves `tool` messages there for it (a workaround of its
    // own), while transformers, and so taper, pass the messages as they are.
    gemma4_interleaved: Spec {
        file: "google-gemma-4-31B-it-interleaved",
        thinking_off: true,
        skip: &[
            ("tool_loop", "llama.cpp turns tool messages into tool_responses"),
            ("parallel", "llama.cpp turns tool messages into tool_responses"),
            ("parts", "the template joins the parts itself"),
        ],
        ..PLAIN
    };
    // llama.cpp's copy is Unsloth's edit of SmolLM3's template, without its tool section.
    smollm3: Spec { file: "HuggingFaceTB-SmolLM3-3B", skip: NO_NATIVE_TOOLS, ..PLAIN };
    phi3_5: Spec { file: "microsoft-Phi-3.5-mini-instruct", skip: NO_NATIVE_TOOLS, ..PLAIN };
    mistral_nemo: Spec { file: "mistralai-Mistral-Nemo-Instruct-2407", ..PLAIN };
    mistral_small3_2: Spec { file: "Mistral-Small-3.2-24B-Instruct-2506", skip: TYPED_CONTENT, ..PLAIN };
    devstral: Spec { file: "unsloth-mistral-Devstral-Small-2507", skip: TYPED_CONTENT, ..PLAIN };
    hermes3: Spec { file: "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ..PLAIN };
    hermes2_pro: Spec { file: "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", ..PLAIN };
    granite3_3: Spec { file: "ibm-granite-granite-3.3-2B-Instruct", ..PLAIN };
    granite4_0: Spec { file: "ibm-granite-granite-4.0", ..PLAIN };
    granite4_1: Spec { file: "ibm-granite-granite-4.1", ..PLAIN };
    nemotron3_nano: Spec { file: "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ..PLAIN };
    glm4_6: Spec { file: "GLM-4.6", skip: TYPED_CONTENT, ..PLAIN };
    glm4_7_flash: Spec { file: "GLM-4.7-Flash", skip: TYPED_CONTENT, ..PLAIN };
    mimo_vl: Spec { file: "MiMo-VL", ..PLAIN };
    minimax_m3: Spec { file: "MiniMax-M3", skip: TYPED_CONTENT, ..PLAIN };
    spark2_5: Spec { file: "Spark2.5", skip: TYPED_CONTENT, ..PLAIN };
    stepfun3_5_flash: Spec { file: "StepFun3.5-Flash", skip: TYPED_CONTENT, ..PLAIN };
    ling3_flash: Spec { file: "inclusionai-ling-3.0-flash", ..PLAIN };
    functionary3_1: Spec { file: "meetkai-functionary-medium-v3.1", ..PLAIN };
    laguna_s2_1: Spec { file: "poolside-Laguna-S-2.1", ..PLAIN };
    laguna_xs2_1: Spec { file: "poolside-Laguna-XS-2.1", thinking_off: true, ..PLAIN };
    laguna_xs2: Spec { file: "poolside-Laguna-XS.2", thinking_off: true, ..PLAIN };
    apriel1_5: Spec { file: "unsloth-Apriel-1.5", skip: TYPED_CONTENT, ..PLAIN };
    bielik3: Spec { file: "Bielik-11B-v3.0-Instruct", thinking_off: true, ..PLAIN };
    reka_edge: Spec { file: "Reka-Edge", thinking_off: true, skip: TYPED_CONTENT, ..PLAIN };
    deepseek_r1_qwen: Spec {
        file: "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
        thinking_off: true,
        skip: TOOL_SYNTAX_UNKNOWN,
        ..PLAIN
    };
    deepseek_r1_llama: Spec {
        file: "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
        thinking_off: true,
        skip: TOOL_SYNTAX_UNKNOWN,
        ..PLAIN
    };
    deepseek_v3_1: Spec {
        file: "deepseek-ai-DeepSeek-V3.1",
        thinking_off: true,
        skip: TOOL_SYNTAX_UNKNOWN,
        ..PLAIN
    };
    deepseek_v3_2: Spec {
        file: "deepseek-ai-DeepSeek-V3.2",
        thinking_off: true,
        skip: TOOL_SYNTAX_UNKNOWN,
        ..PLAIN
    };
    apriel1_6: Spec {
        file: "Apriel-1.6-15b-Thinker-fixed",
        thinking_off: true,
        skip: TOOL_SYNTAX_UNKNOWN_TYPED,
        ..PLAIN
    };
    kimi_k2: Spec { file: "moonshotai-Kimi-K2", skip: TOOL_SYNTAX_UNKNOWN_TYPED, ..PLAIN };
    lfm2_5: Spec { file: "LFM2.5-Instruct", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    minimax_m2: Spec { file: "MiniMax-M2", skip: TOOL_SYNTAX_UNKNOWN_TYPED, ..PLAIN };
    nemotron_nano_v2: Spec { file: "NVIDIA-Nemotron-Nano-v2", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    gpt_oss: Spec { file: "openai-gpt-oss-120b", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    seed_oss: Spec { file: "ByteDance-Seed-OSS", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    hy3: Spec { file: "tencent-Hy3", skip: TOOL_SYNTAX_UNKNOWN_TYPED, ..PLAIN };
    solar_open: Spec { file: "upstage-Solar-Open-100B", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    apertus: Spec { file: "Apertus-8B-Instruct", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    cohere2_moe: Spec { file: "Cohere2MoE", skip: TOOL_SYNTAX_UNKNOWN_TYPED, ..PLAIN };
    command_r_plus: Spec { file: "CohereForAI-c4ai-command-r-plus-tool_use", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
    kimi_k3: Spec { file: "Kimi-K3", skip: TOOL_SYNTAX_UNKNOWN_TYPED, ..PLAIN };
    muse_glimmer: Spec { file: "muse-glimmer", skip: TOOL_SYNTAX_UNKNOWN_TYPED, ..PLAIN };
    functionary3_2: Spec { file: "meetkai-functionary-medium-v3.2", skip: TOOL_SYNTAX_UNKNOWN, ..PLAIN };
}
