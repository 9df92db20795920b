//! `taper models` in one binary: hub downloads against a local hub server, and local models.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/hub_server.rs"]
mod hub_server;

mod hub;
mod local;
