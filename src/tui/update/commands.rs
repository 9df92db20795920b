//! What each slash command does (the table is `tui::commands`). Most are a key's action by
//! another name; `/model`, `/set`, `/system`, `/save` and `/file` take what was typed.

use super::{attach, downloads, sessions, tree, turn};
use crate::tui::commands::{self, Command, Parsed};
use crate::tui::keymap::{Action, SessionAction};
use crate::tui::msg::Effect;
use crate::tui::state::{Field, ModelEntry, Overlay, State};

/// Sends the message, or runs it when it is a command. Returns the text for the model when
/// it is a message (`//` at its start made `/`), None when it was a command.
pub(super) fn intercept(state: &mut State, fx: &mut Vec<Effect>) -> Option<String> {
    let text = state.input.text();
    match commands::parse(&text) {
        Parsed::Message(message) => Some(message),
        Parsed::Unknown(name) => {
            let hint = match commands::closest(name) {
                Some(c) => format!(" (did you mean /{}?)", c.name),
                None => String::new(),
            };
            // The text stays in the editor, to be corrected; nothing goes to the model.
            state.status = Some(format!(
                "Unknown command /{name}{hint}: /help lists them; start with // to send a slash"
            ));
            None
        }
        Parsed::Command(command, args) => {
            let args = args.to_string();
            state.input.take();
            run(state, command, &args, fx);
            None
        }
    }
}

fn run(state: &mut State, command: Command, args: &str, fx: &mut Vec<Effect>) {
    match command {
        Command::File => file(state, args, fx),
        Command::System => system(state, args),
        Command::Model => model(state, args, fx),
        Command::Set => set(state, args),
        Command::Save => save(state, args, fx),
        Command::Fork => match tree::selectable(state).last() {
            Some(&id) => tree::fork_at(state, id, fx),
            None => state.status = Some("Nothing to fork yet".into()),
        },
        Command::Continue => turn::continue_answer(state, fx),
        Command::Export => sessions::act(state, SessionAction::Export, fx),
        Command::Clear => super::act(state, Action::NewConversation, fx),
        Command::Help => {
            state.help_top = 0;
            state.overlay = Overlay::Help;
        }
    }
}

/// `/file PATH`: the editor gets `@PATH ` for the question to follow; the file is read as
/// any mention is.
fn file(state: &mut State, path: &str, fx: &mut Vec<Effect>) {
    if path.is_empty() {
        state.status = Some("/file PATH brings a text file into the message".into());
        return;
    }
    let path = path.trim_matches('"');
    let mention = if path.contains(char::is_whitespace) {
        format!("@\"{path}\" ")
    } else {
        format!("@{path} ")
    };
    state.input.set_text(&mention);
    attach::sync(state, false, fx);
}

fn system(state: &mut State, text: &str) {
    let prompt = &mut state.settings.system_prompt;
    state.status = Some(match text {
        "" if prompt.is_empty() => "No system prompt: /system TEXT sets one".into(),
        "" => format!(
            "System prompt: {}  (/system --clear removes it)",
            one_line(prompt)
        ),
        "--clear" => {
            prompt.clear();
            "System prompt removed (from the next answer)".into()
        }
        text => {
            *prompt = text.to_string();
            "System prompt set (from the next answer)".into()
        }
    });
}

fn one_line(text: &str) -> String {
    let line = text.replace('\n', " ");
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// `/set NAME VALUE` through the settings form's own checks; `/set` alone lists them.
fn set(state: &mut State, args: &str) {
    let (name, value) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    if name.is_empty() {
        let all: Vec<String> = Field::ALL[1..]
            .iter()
            .map(|f| format!("{} {}", setting_name(*f), f.value(&state.settings)))
            .collect();
        state.status = Some(all.join(" · "));
        return;
    }
    let wanted = name.to_ascii_lowercase().replace('-', "_");
    let Some(field) = Field::ALL[1..].iter().find(|f| setting_name(**f) == wanted) else {
        let names: Vec<&str> = Field::ALL[1..].iter().map(|f| setting_name(*f)).collect();
        state.status = Some(format!("No setting {name}: one of {}", names.join(", ")));
        return;
    };
    let value = value.trim();
    if value.is_empty() && *field != Field::Seed {
        state.status = Some(format!("/set {wanted} VALUE: {}", field.hint()));
        return;
    }
    state.status = Some(match field.apply(&mut state.settings, value) {
        Ok(()) => format!(
            "{wanted} = {} (from the next answer)",
            field.value(&state.settings)
        ),
        Err(expected) => format!("{wanted}: expected {expected}"),
    });
}

/// The name `/set` knows a field by.
fn setting_name(field: Field) -> &'static str {
    match field {
        Field::SystemPrompt => "system",
        Field::Temperature => "temperature",
        Field::TopP => "top_p",
        Field::TopK => "top_k",
        Field::MinP => "min_p",
        Field::RepeatPenalty => "repeat_penalty",
        Field::MaxTokens => "max_tokens",
        Field::Seed => "seed",
        Field::ToolChoice => "tool_choice",
        Field::Speculative => "speculative",
    }
}

/// `/save TITLE`: the conversation's title, saved now if it has messages.
fn save(state: &mut State, title: &str, fx: &mut Vec<Effect>) {
    if title.is_empty() {
        state.status = Some("/save TITLE names this conversation".into());
        return;
    }
    state.session.title = title.to_string();
    if state.conversation.has_messages() {
        sessions::autosave(state, fx);
        state.status = Some(format!("Saved as “{title}”"));
    } else {
        state.status = Some(format!("Named “{title}”: saved with the first answer"));
    }
}

/// `/model NAME`: the model whose name is NAME, or the one whose name contains it.
fn model(state: &mut State, name: &str, fx: &mut Vec<Effect>) {
    if name.is_empty() {
        state.picker.open();
        state.overlay = Overlay::Picker;
        return;
    }
    let all: Vec<&ModelEntry> = state
        .picker
        .entries
        .iter()
        .chain(&state.picker.remotes)
        .collect();
    let wanted = name.to_lowercase();
    let exact: Vec<&ModelEntry> = all
        .iter()
        .copied()
        .filter(|e| e.name.to_lowercase() == wanted)
        .collect();
    let found = if exact.is_empty() {
        all.into_iter()
            .filter(|e| e.name.to_lowercase().contains(&wanted))
            .collect()
    } else {
        exact
    };
    match found.as_slice() {
        [] if state.picker.scanning => {
            state.status = Some("Still looking for models: try again in a moment".into())
        }
        [] => state.status = Some(format!("No model named {name}: Ctrl+P lists them")),
        [entry] => {
            let entry = (*entry).clone();
            if entry.is_unreachable_remote() {
                let why = entry.problem.as_deref().unwrap_or("unreachable");
                state.status = Some(format!("{}: {why}", entry.name));
            } else if entry.download.is_some() {
                downloads::start(state, entry, fx);
            } else {
                turn::load(state, entry, fx);
            }
        }
        many => {
            let names: Vec<&str> = many.iter().take(6).map(|e| e.name.as_str()).collect();
            state.status = Some(format!("{name} matches {}: say more", names.join(", ")));
        }
    }
}
