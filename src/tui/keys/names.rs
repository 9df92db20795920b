//! How keys are written on screen: in full for the help ("Shift+Tab"), shorter for the
//! footer ("↑").

use super::Combo;
use crossterm::event::{KeyCode, KeyModifiers};

/// The name the help uses.
pub fn long(combo: Combo) -> String {
    match combo {
        Combo::Key(code, mods) => {
            let mut name = String::new();
            for (m, prefix) in [
                (KeyModifiers::CONTROL, "Ctrl+"),
                (KeyModifiers::ALT, "Alt+"),
                (KeyModifiers::SHIFT, "Shift+"),
            ] {
                if mods.contains(m) {
                    name.push_str(prefix);
                }
            }
            name.push_str(&code_name(code, !mods.is_empty()));
            name
        }
        Combo::Typed(c) => c.to_string(),
        Combo::AnyChar => "type".to_string(),
        Combo::Any => "any other key".to_string(),
    }
}

/// The name the footer uses: arrows as arrows.
pub fn short(combo: Combo) -> String {
    match combo {
        Combo::Key(KeyCode::Up, mods) if mods.is_empty() => "↑".to_string(),
        Combo::Key(KeyCode::Down, mods) if mods.is_empty() => "↓".to_string(),
        other => long(other),
    }
}

fn code_name(code: KeyCode, modified: bool) -> String {
    match code {
        // With a modifier a letter is written as its key cap: Ctrl+R.
        KeyCode::Char(c) if modified => c.to_uppercase().to_string(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Up => "Up".into(),
        KeyCode::Down => "Down".into(),
        KeyCode::Left => "Left".into(),
        KeyCode::Right => "Right".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::BackTab => "Shift+Tab".into(),
        KeyCode::Backspace => "Backspace".into(),
        KeyCode::Delete => "Delete".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    }
}
