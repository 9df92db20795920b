//! The few styles the TUI uses, in one place so the panes agree.

use ratatui::style::{Color, Modifier, Style};

pub fn title() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}
pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
pub fn user_label() -> Style {
    Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD)
}
pub fn model_label() -> Style {
    Style::default()
        .fg(Color::Green)
        .add_modifier(Modifier::BOLD)
}
pub fn thinking() -> Style {
    Style::default()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC)
}
pub fn warning() -> Style {
    Style::default().fg(Color::Yellow)
}
pub fn error() -> Style {
    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
}
pub fn info() -> Style {
    Style::default().fg(Color::Blue)
}
pub fn heading() -> Style {
    Style::default()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD)
}
pub fn inline_code() -> Style {
    Style::default().fg(Color::Yellow)
}
pub fn code_block() -> Style {
    Style::default().fg(Color::LightYellow)
}
pub fn link() -> Style {
    Style::default()
        .fg(Color::Blue)
        .add_modifier(Modifier::UNDERLINED)
}
pub fn selected() -> Style {
    Style::default()
        .fg(Color::Black)
        .bg(Color::Cyan)
        .add_modifier(Modifier::BOLD)
}
pub fn gauge() -> Style {
    Style::default().fg(Color::Cyan).bg(Color::DarkGray)
}
pub fn sparkline() -> Style {
    Style::default().fg(Color::Green)
}
pub fn footer_key() -> Style {
    Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD)
}
