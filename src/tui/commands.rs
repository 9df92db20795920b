//! The chat's slash commands: one table that the dispatcher (`update::commands`), Tab
//! completion and the help screen all read, and the parsing of a message that is a command.
//! A message starting with `/word` never goes to the model; `//` sends a leading slash.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    File,
    System,
    Model,
    Set,
    Save,
    Fork,
    Continue,
    Export,
    Clear,
    Help,
}

/// One row of the table: the name typed after `/`, what it takes, what it does.
pub struct CommandInfo {
    pub command: Command,
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        command: Command::File,
        name: "file",
        args: "PATH",
        help: "bring a text file into the message (as @PATH does)",
    },
    CommandInfo {
        command: Command::System,
        name: "system",
        args: "[TEXT | --clear]",
        help: "set the system prompt; alone, show it",
    },
    CommandInfo {
        command: Command::Model,
        name: "model",
        args: "[NAME]",
        help: "switch model by name (history kept); alone, the picker",
    },
    CommandInfo {
        command: Command::Set,
        name: "set",
        args: "[SETTING VALUE]",
        help: "change a sampling setting; alone, list them all",
    },
    CommandInfo {
        command: Command::Save,
        name: "save",
        args: "TITLE",
        help: "name (or rename) this conversation and save it",
    },
    CommandInfo {
        command: Command::Fork,
        name: "fork",
        args: "",
        help: "a new conversation with these messages; this one stays",
    },
    CommandInfo {
        command: Command::Continue,
        name: "continue",
        args: "",
        help: "go on with the last answer where it was cut short",
    },
    CommandInfo {
        command: Command::Export,
        name: "export",
        args: "",
        help: "export the conversation as Markdown",
    },
    CommandInfo {
        command: Command::Clear,
        name: "clear",
        args: "",
        help: "start a new conversation (this one stays saved)",
    },
    CommandInfo {
        command: Command::Help,
        name: "help",
        args: "",
        help: "keys and commands",
    },
];

/// What a message is, read as a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Text for the model (`//` at the start has become `/`).
    Message(String),
    Command(Command, &'a str),
    /// `/word` that is no command: the word.
    Unknown(&'a str),
}

/// Reads `text` as a command when it starts with `/` and a name made of letters (so a path
/// such as `/usr/bin/env` is a message).
pub fn parse(text: &str) -> Parsed<'_> {
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix("//") {
        return Parsed::Message(format!("/{rest}"));
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Parsed::Message(text.to_string());
    };
    let name_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..name_len];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return Parsed::Message(text.to_string());
    }
    let args = rest[name_len..].trim();
    match COMMANDS.iter().find(|c| c.name.eq_ignore_ascii_case(name)) {
        Some(info) => Parsed::Command(info.command, args),
        None => Parsed::Unknown(name),
    }
}

/// The commands whose names start with `prefix` (typed after the `/`).
pub fn starting_with(prefix: &str) -> Vec<&'static CommandInfo> {
    let prefix = prefix.to_ascii_lowercase();
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(&prefix))
        .collect()
}

/// The closest command to a mistyped name, for the hint: one that starts with it, else one
/// it starts with, else one sharing its first letter.
pub fn closest(name: &str) -> Option<&'static CommandInfo> {
    let name = name.to_ascii_lowercase();
    COMMANDS
        .iter()
        .find(|c| c.name.starts_with(&name))
        .or_else(|| COMMANDS.iter().find(|c| name.starts_with(c.name)))
        .or_else(|| {
            COMMANDS
                .iter()
                .find(|c| name.chars().next() == c.name.chars().next())
        })
}

/// The help screen's line for a command: `/set [SETTING VALUE]`.
pub fn usage(info: &CommandInfo) -> String {
    match info.args {
        "" => format!("/{}", info.name),
        args => format!("/{} {args}", info.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_messages_are_told_apart() {
        assert_eq!(
            parse("/set temperature 0.2"),
            Parsed::Command(Command::Set, "temperature 0.2")
        );
        assert_eq!(parse("  /HELP"), Parsed::Command(Command::Help, ""));
        assert_eq!(parse("/frobnicate now"), Parsed::Unknown("frobnicate"));
        assert_eq!(
            parse("/usr/bin/env is a path"),
            Parsed::Message("/usr/bin/env is a path".into())
        );
        assert_eq!(
            parse("//help is sent"),
            Parsed::Message("/help is sent".into())
        );
        assert_eq!(parse("hello /help"), Parsed::Message("hello /help".into()));
    }

    #[test]
    fn completion_and_hints_come_from_the_table() {
        let names = |p: &str| starting_with(p).iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(names("s"), ["system", "set", "save"]);
        assert_eq!(names("ex"), ["export"]);
        assert!(names("zz").is_empty());
        assert_eq!(closest("sys").map(|c| c.name), Some("system"));
        assert_eq!(closest("models").map(|c| c.name), Some("model"));
        assert_eq!(closest("qq").map(|c| c.name), None);
    }

    #[test]
    fn every_command_has_a_unique_name() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert!(
                COMMANDS[i + 1..].iter().all(|d| d.name != c.name),
                "{}",
                c.name
            );
        }
    }
}
