//! The picker's downloads as `update` sees them: start one, follow its progress, ask for the
//! arrived file's header (`Effect::ReadHeader`), load the model when the header comes back,
//! show why when the download fails.

use super::turn::load;
use crate::tui::msg::{Effect, Msg};
use crate::tui::state::{Download, ModelEntry, NoticeLevel, State};

/// Starts downloading a catalogue model; it is loaded when it arrives.
pub(super) fn start(state: &mut State, entry: ModelEntry, fx: &mut Vec<Effect>) {
    let Some(file) = entry.download.clone() else {
        return;
    };
    if state.model.download.is_some() {
        state.status = Some("A download is already running (Esc stops it)".into());
        return;
    }
    state.model.download = Some(Download {
        total: entry.file_size,
        done: 0,
        entry,
        started: state.now,
        arrived: None,
    });
    fx.push(Effect::Download(file));
}

/// Progress, arrival or failure of the running download.
pub(super) fn message(state: &mut State, msg: Msg, fx: &mut Vec<Effect>) {
    match msg {
        Msg::DownloadProgress { done, total } => {
            if let Some(d) = &mut state.model.download {
                d.done = done;
                d.total = total;
            }
        }
        Msg::Downloaded(path) => {
            if let Some(d) = &mut state.model.download {
                // Complete; the download stays shown until the header is read.
                d.done = d.total;
                d.arrived = Some(path.clone());
                fx.push(Effect::ScanModels);
                fx.push(Effect::ReadHeader(path));
            }
        }
        Msg::DownloadFailed(why) if state.model.download.take().is_some() => {
            state.conversation.push_notice(NoticeLevel::Error, why);
        }
        _ => {}
    }
}

/// The arrived file's header: the model loads under its catalogue name. A header of any
/// other file (a download given up since) changes nothing.
pub(super) fn header_read(state: &mut State, mut entry: ModelEntry, fx: &mut Vec<Effect>) {
    let arrived = state
        .model
        .download
        .as_ref()
        .and_then(|d| d.arrived.as_ref());
    if arrived != Some(&entry.path) {
        return;
    }
    if let Some(d) = state.model.download.take() {
        entry.name = d.entry.name;
        load(state, entry, fx);
    }
}
