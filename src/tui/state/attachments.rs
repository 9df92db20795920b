//! The files the message being written brings in (`@path` or `/file PATH`): each one's text
//! and size in tokens once read, or why it cannot go.

/// One mentioned file.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    /// As the message names it.
    pub path: String,
    pub file: FileState,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FileState {
    /// Asked of the app; not back yet.
    Reading,
    /// Ready to go: the block the model will read, and its size in tokens (`exact` when the
    /// model's tokenizer counted it, an estimate for a remote model or none).
    Text {
        block: String,
        tokens: usize,
        exact: bool,
    },
    /// No such file: the `@name` goes to the model as the text it is.
    Missing,
    /// Cannot go, and why (binary, a directory, unreadable, too large, too long).
    Refused(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attachments {
    pub files: Vec<Attachment>,
    /// Enter was pressed while a file was still being read: send once every file is in.
    pub send_when_read: bool,
}

impl Attachments {
    pub fn get(&self, path: &str) -> Option<&Attachment> {
        self.files.iter().find(|a| a.path == path)
    }

    pub fn get_mut(&mut self, path: &str) -> Option<&mut Attachment> {
        self.files.iter_mut().find(|a| a.path == path)
    }

    pub fn reading(&self) -> bool {
        self.files.iter().any(|a| a.file == FileState::Reading)
    }

    /// The files that are ready, in the order they were mentioned.
    pub fn ready(&self) -> impl Iterator<Item = (&str, &str, usize)> {
        self.files.iter().filter_map(|a| match &a.file {
            FileState::Text { block, tokens, .. } => {
                Some((a.path.as_str(), block.as_str(), *tokens))
            }
            _ => None,
        })
    }

    /// The first file that cannot go, with its reason.
    pub fn refused(&self) -> Option<(&str, &str)> {
        self.files.iter().find_map(|a| match &a.file {
            FileState::Refused(why) => Some((a.path.as_str(), why.as_str())),
            _ => None,
        })
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// Tokens at a glance: "512 tokens", "≈1.2k tokens" for an estimate.
pub fn token_label(tokens: usize, exact: bool) -> String {
    let about = if exact { "" } else { "≈" };
    if tokens >= 10_000 {
        format!("{about}{:.1}k tokens", tokens as f64 / 1000.0)
    } else {
        format!("{about}{tokens} tokens")
    }
}
