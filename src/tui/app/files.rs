//! The app's half of saved conversations: the file work `update` asks for with
//! [`SessionEffect`]s (save, list, open, rename, delete, export), and drawing the random tag
//! of new session ids. Session files are small: each is done at once, so a quit right after
//! loses nothing.

use crate::sessions::store;
use crate::tui::msg::{Msg, SessionEffect, SessionMsg};

/// Carries out one effect; the message to feed back to `update`, if any.
pub fn perform(effect: SessionEffect) -> Option<Msg> {
    let msg = match effect {
        SessionEffect::Save { dir, session } => match store::save(&dir, &session) {
            Ok(_) => return None,
            Err(e) => SessionMsg::SaveFailed(format!("{e:#}")),
        },
        SessionEffect::List(dir) => SessionMsg::Listed(store::list(&dir)),
        SessionEffect::Open(path) => SessionMsg::Opened(
            store::load(&path)
                .map(|s| (path, Box::new(s)))
                .map_err(|e| format!("{e:#}")),
        ),
        SessionEffect::Rename { path, title } => {
            let status = match store::rename(&path, &title) {
                Ok(()) => format!("Renamed to “{}”", title.trim()),
                Err(e) => format!("Rename failed: {e:#}"),
            };
            changed(&path, status)
        }
        SessionEffect::Delete(path) => {
            let status = match store::delete(&path) {
                Ok(()) => format!("Deleted {}", path.display()),
                Err(e) => format!("{e:#}"),
            };
            changed(&path, status)
        }
        SessionEffect::Export { path, markdown } => SessionMsg::Exported(
            std::fs::create_dir_all(path.parent().unwrap_or(&path))
                .map_err(anyhow::Error::from)
                .and_then(|()| store::write_atomic(&path, markdown.as_bytes()))
                .map(|()| path)
                .map_err(|e| format!("{e:#}")),
        ),
        // Two conversations started in the same second get different ids.
        SessionEffect::DrawTag => SessionMsg::Tag(rand::random::<u16>()),
    };
    Some(Msg::Session(msg))
}

fn changed(path: &std::path::Path, status: String) -> SessionMsg {
    let entries = path.parent().map(store::list).unwrap_or_default();
    SessionMsg::Changed { status, entries }
}
