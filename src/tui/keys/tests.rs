//! The table's own checks: no key means two things in one place, the help lists every
//! binding of every context and every slash command, and README.md names every key and
//! every command.

use super::{help_lines, Combo, Context, HelpLine, When, KEYS};

#[test]
fn no_key_is_bound_twice_in_one_context() {
    for (i, a) in KEYS.iter().enumerate() {
        for b in &KEYS[i + 1..] {
            if a.context != b.context || a.when != When::Always || b.when != When::Always {
                continue;
            }
            for combo in a.keys {
                assert!(
                    !b.keys.contains(combo),
                    "{combo:?} is bound twice in {:?}: {:?} and {:?}",
                    a.context,
                    a.help,
                    b.help
                );
            }
        }
    }
}

#[test]
fn the_help_lists_every_binding_under_its_context() {
    let lines = help_lines();
    for context in Context::HELP_ORDER {
        assert!(lines.contains(&HelpLine::Heading(context.title())));
    }
    let listed = lines
        .iter()
        .filter(|l| matches!(l, HelpLine::Key { .. }))
        .count();
    assert_eq!(listed, KEYS.len() + crate::tui::commands::COMMANDS.len());
    for context in [
        Context::Picker,
        Context::Settings,
        Context::Sessions,
        Context::SessionsDelete,
    ] {
        assert!(KEYS.iter().any(|b| b.context == context), "{context:?}");
    }
}

#[test]
fn the_readme_names_every_key() {
    let readme = include_str!("../../../README.md");
    for binding in KEYS {
        for combo in binding.keys {
            if matches!(combo, Combo::AnyChar | Combo::Any) {
                continue;
            }
            let name = super::names::long(*combo);
            assert!(
                readme.contains(&name),
                "README.md does not name {name} ({:?}: {})",
                binding.context,
                binding.help
            );
        }
    }
}

#[test]
fn the_readme_names_every_command() {
    // A table cell escapes its pipes.
    let readme = include_str!("../../../README.md").replace("\\|", "|");
    for c in crate::tui::commands::COMMANDS {
        let usage = crate::tui::commands::usage(c);
        assert!(
            readme.contains(&format!("`{usage}`")),
            "README.md does not name `{usage}`"
        );
    }
}

#[test]
fn the_text_field_keys_are_not_taken_where_a_text_field_is() {
    // They are looked up first, so a context's own binding of the same key would be dead.
    let field = KEYS.iter().filter(|b| b.context == Context::TextField);
    for combo in field.flat_map(|b| b.keys) {
        let shadowed = KEYS
            .iter()
            .find(|b| b.context.has_text_field() && b.keys.contains(combo));
        assert!(
            shadowed.is_none(),
            "{combo:?} is every text field's, yet {:?} binds it",
            shadowed.map(|b| b.context)
        );
    }
}
