//! The picker's downloads as `update` sees them: start one, follow its progress, load the
//! model when it arrives, show why when it does not.

use super::state::{Download, ModelEntry, NoticeLevel, State};
use super::update::{load, Effect, Msg};

/// Starts downloading a catalogue model; it is loaded when it arrives.
pub fn start(state: &mut State, entry: ModelEntry, fx: &mut Vec<Effect>) {
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
    });
    fx.push(Effect::Download(file));
}

/// Progress, arrival or failure of the running download.
pub fn message(state: &mut State, msg: Msg, fx: &mut Vec<Effect>) {
    match msg {
        Msg::DownloadProgress { done, total } => {
            if let Some(d) = &mut state.model.download {
                d.done = done;
                d.total = total;
            }
        }
        Msg::Downloaded(path) => {
            if let Some(d) = state.model.download.take() {
                let mut entry = super::scan::describe(&path);
                entry.name = d.entry.name;
                fx.push(Effect::ScanModels);
                load(state, entry, fx);
            }
        }
        Msg::DownloadFailed(why) if state.model.download.take().is_some() => {
            state.conversation.push_notice(NoticeLevel::Error, why);
        }
        _ => {}
    }
}
