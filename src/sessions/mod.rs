//! Saved conversations ("sessions"): the versioned JSON record ([`format`], documented in
//! docs/session-format.md), the files in `<data dir>/sessions` ([`store`]: atomic saves,
//! listing, lookup), finding them by their words ([`search`]), Markdown transcripts
//! ([`export`]) and wall-clock times ([`time`]).

pub mod export;
pub mod format;
pub mod search;
pub mod store;
pub mod time;

pub use format::{
    parse_session, SavedMessage, SavedSampling, SavedStatus, SavedUsage, Session, SessionError,
    FORMAT_VERSION, MAX_SESSION_BYTES,
};
pub use store::{sessions_dir, Listed, Summary};
