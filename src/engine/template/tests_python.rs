//! Unit tests of the Python compatibility of chat templates: string methods, whitespace
//! control, values printed and dumped like Python, dates, generation tags, and the fuel
//! limits on hostile templates.

use super::compat::{rewrite_generation_tags, strftime};
use super::json::python_float_repr;
use super::tests::{compile, conversation, render, QWEN3, SMOLLM2};
use super::*;

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
