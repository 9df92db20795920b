//! `taper models` in one binary: hub downloads against a local hub server, local models, the
//! repack cache, draft models, and what `taper ask` takes in.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/hub_server.rs"]
mod hub_server;

mod ask_input;
mod draft_models;
mod hub;
mod local;
mod repack_cache;
