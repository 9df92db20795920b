//! `taper serve`'s tests in one binary, each against a server started on loopback: the
//! endpoints, load, hostile input, the official `openai` client and taper's own remote backend.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/serve.rs"]
mod serve_support;

mod hostile;
mod http;
mod load;
mod openai;
mod remote;
