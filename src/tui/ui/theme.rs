//! The few styles the TUI uses, in one place so the panes agree. With `NO_COLOR` set (and
//! not empty, as no-color.org has it) they keep their bold, italic and underline but lose
//! their colours; what only colour told apart (the selection, the gauge) is reversed.

use ratatui::style::{Color, Modifier, Style};
use std::sync::OnceLock;

/// Whether the user asked for no colour, read once.
fn no_color() -> bool {
    static NO_COLOR: OnceLock<bool> = OnceLock::new();
    *NO_COLOR.get_or_init(|| std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()))
}

/// `style` as the terminal gets it: without colours when `no_color`; a style whose colour
/// was its meaning (`reverse_instead`) is reversed instead.
fn for_terminal(style: Style, no_color: bool, reverse_instead: bool) -> Style {
    if !no_color {
        return style;
    }
    let plain = Style {
        fg: None,
        bg: None,
        ..style
    };
    match reverse_instead {
        true => plain.add_modifier(Modifier::REVERSED),
        false => plain,
    }
}

fn paint(style: Style) -> Style {
    for_terminal(style, no_color(), false)
}

fn paint_or_reverse(style: Style) -> Style {
    for_terminal(style, no_color(), true)
}

pub fn title() -> Style {
    paint(Style::default().add_modifier(Modifier::BOLD))
}
pub fn dim() -> Style {
    paint(Style::default().fg(Color::DarkGray))
}
pub fn user_label() -> Style {
    paint(
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )
}
pub fn model_label() -> Style {
    paint(
        Style::default()
            .fg(Color::Green)
            .add_modifier(Modifier::BOLD),
    )
}
pub fn thinking() -> Style {
    paint(
        Style::default()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::ITALIC),
    )
}
pub fn warning() -> Style {
    paint(Style::default().fg(Color::Yellow))
}
pub fn error() -> Style {
    paint(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD))
}
pub fn info() -> Style {
    paint(Style::default().fg(Color::Blue))
}
pub fn heading() -> Style {
    paint(
        Style::default()
            .fg(Color::Magenta)
            .add_modifier(Modifier::BOLD),
    )
}
pub fn inline_code() -> Style {
    paint(Style::default().fg(Color::Yellow))
}
pub fn code_block() -> Style {
    paint(Style::default().fg(Color::LightYellow))
}
pub fn link() -> Style {
    paint(
        Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::UNDERLINED),
    )
}
pub fn selected() -> Style {
    paint_or_reverse(
        Style::default()
            .fg(Color::Black)
            .bg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )
}
pub fn gauge() -> Style {
    paint_or_reverse(Style::default().fg(Color::Cyan).bg(Color::DarkGray))
}
pub fn sparkline() -> Style {
    paint(Style::default().fg(Color::Green))
}
pub fn footer_key() -> Style {
    paint(
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_keeps_the_emphasis_and_drops_the_colours() {
        let label = Style::default()
            .fg(Color::Green)
            .add_modifier(Modifier::BOLD);
        assert_eq!(for_terminal(label, false, false), label);
        let plain = for_terminal(label, true, false);
        assert_eq!((plain.fg, plain.bg), (None, None));
        assert!(plain.add_modifier.contains(Modifier::BOLD));
        let selection = Style::default().fg(Color::Black).bg(Color::Cyan);
        let reversed = for_terminal(selection, true, true);
        assert_eq!((reversed.fg, reversed.bg), (None, None));
        assert!(reversed.add_modifier.contains(Modifier::REVERSED));
    }
}
