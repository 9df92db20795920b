//! Chat templates come from downloaded files and are hostile until proven otherwise: every
//! way of making a render run forever, recurse without end, write or build gigabytes, or
//! read files ends in a clear error, without a large allocation.

use taper::chat::Message;
use taper::engine::template::{ChatTemplate, TemplateSource};

fn render(source: &str) -> anyhow::Result<String> {
    let conversation = [Message::system("Be brief."), Message::user("Hello")];
    ChatTemplate::from_source(source, TemplateSource::Override)?.render(
        &conversation,
        true,
        "<s>",
        "</s>",
    )
}

/// Renders `source`, which must fail with a message containing `expected`.
fn refused(source: &str, expected: &str) {
    let err = match render(source) {
        Ok(out) => panic!("{source} rendered {} bytes", out.len()),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains(expected), "{source}: {err}");
    assert!(
        err.lines().count() == 1,
        "one line, not a debug dump: {err}"
    );
}

const TOO_MUCH_WORK: &str = "did too much work";

#[test]
fn endless_loops_run_out_of_fuel() {
    refused(
        "{% for i in range(10000) %}{% for j in range(10000) %}{% for k in range(10000) %}{% endfor %}{% endfor %}{% endfor %}",
        TOO_MUCH_WORK,
    );
    // A loop that feeds itself: `loop()` over the conversation again and again.
    refused(
        "{% for m in messages recursive %}{{ loop(messages) }}{% endfor %}",
        "recursion limit",
    );
}

#[test]
fn self_calling_macros_hit_the_recursion_limit() {
    refused(
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "recursion limit",
    );
    // Two calls per level: exponential work unless the depth is stopped first.
    refused(
        "{% macro f(n) %}{{ f(n + 1) ~ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "recursion limit",
    );
    refused(
        "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}",
        "recursion limit",
    );
}

#[test]
fn gigabytes_of_output_are_refused() {
    // Output is capped; building the strings first is paid for in fuel.
    refused("{{ 'x' * 10**9 }}", TOO_MUCH_WORK);
    refused("{{ ('x' * 100000) * 100000 }}", TOO_MUCH_WORK);
    refused(
        "{% for i in range(10000) %}{% for j in range(10000) %}{{ 'abcdefgh' * 100 }}{% endfor %}{% endfor %}",
        "",
    );
    refused(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        TOO_MUCH_WORK,
    );
    refused("{{ range(100000)|join('x' * 100000) }}", TOO_MUCH_WORK);
    refused(
        "{{ ('ab' * 1000000).replace('', 'x' * 20) }}",
        TOO_MUCH_WORK,
    );
    refused("{{ 'a\nb'|indent(10**9) }}", TOO_MUCH_WORK);
}

#[test]
fn a_rendering_that_only_writes_is_stopped_at_the_output_cap() {
    // Cheap per byte but endless: the output cap, not fuel, ends this one.
    refused(
        "{% for i in range(10000) %}{% for j in range(100) %}{{ messages[0].content * 2000 }}{% endfor %}{% endfor %}",
        "",
    );
}

#[test]
fn huge_ranges_and_lists_are_refused() {
    refused(
        "{% for i in range(10**9) %}x{% endfor %}",
        "range has too many elements",
    );
    refused(
        "{{ range(10**9)|list|length }}",
        "range has too many elements",
    );
    refused("{{ ([0] * 10**9)|length }}", "too large");
    refused(
        "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% for j in range(1000) %}{% set ns.l = ns.l + [j] %}{% endfor %}{% endfor %}{{ ns.l|length }}",
        TOO_MUCH_WORK,
    );
    refused("{{ 2**100000000 }}", "unable to calculate");
}

#[test]
fn str_format_cannot_pad_to_a_gigabyte() {
    refused("{{ '{:>1000000000}'.format(1) }}", "is refused");
    refused("{{ '{:.{}}'.format(1.5, 10**9) }}", "is refused");
    // Ordinary uses still work.
    assert_eq!(
        render("{{ '{:>5}|{}'.format(1, 'a') }}").unwrap(),
        "    1|a"
    );
}

#[test]
fn there_is_no_loader_for_other_files() {
    for source in [
        "{% include '/etc/passwd' %}",
        "{% import 'macros.jinja' as m %}",
        "{% from 'macros.jinja' import f %}",
        "{% extends 'base.jinja' %}",
        "{% include ['a', '/etc/hostname'] ignore missing %}x",
    ] {
        match render(source) {
            // `ignore missing` renders nothing in place of a file it cannot find.
            Ok(out) => assert_eq!(out, "x", "{source}"),
            Err(e) => {
                let err = format!("{e:#}");
                assert!(err.contains("cannot"), "{source}: {err}");
                assert!(err.contains("load another template"), "{source}: {err}");
            }
        }
    }
}

#[test]
fn no_hostile_render_grows_the_process_much() {
    // Runs everything above again (concurrently with the tests themselves); none of it may
    // have needed a large allocation.
    endless_loops_run_out_of_fuel();
    self_calling_macros_hit_the_recursion_limit();
    gigabytes_of_output_are_refused();
    a_rendering_that_only_writes_is_stopped_at_the_output_cap();
    huge_ranges_and_lists_are_refused();
    str_format_cannot_pad_to_a_gigabyte();
    there_is_no_loader_for_other_files();
    if let Some(peak) = taper::stats::peak_rss_bytes() {
        assert!(peak < 768 << 20, "peak RSS {} MiB", peak >> 20);
    }
}

/// minijinja 3.1.0 concatenates lists lazily and, past 32 nested concatenations, copies
/// the whole list without charging fuel: doubling a list 33 times asks for 2^33 items, and
/// indexing or printing a lazily doubled list walks all of it unpaid. Not fixable from
/// outside minijinja (the `+` operator cannot be hooked); run with `--ignored` to check a
/// newer minijinja. See docs/fuzzing.md.
#[test]
#[ignore = "minijinja 3.1.0: lazy list concatenation is not fuel-checked (see docs/fuzzing.md)"]
fn doubling_a_list_is_stopped() {
    let double = "{% set ns = namespace(l=[0]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}";
    refused(&format!("{double}{{{{ ns.l|length }}}}"), TOO_MUCH_WORK);
    refused(&format!("{double}{{{{ ns.l[-1] }}}}"), TOO_MUCH_WORK);
}
