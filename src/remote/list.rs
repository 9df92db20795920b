//! What a remote serves: `GET /v1/models` (llama-server, vLLM, SGLang, OpenAI) or Ollama's
//! `GET /api/tags`, and the context size where the server tells it (vLLM's `max_model_len`,
//! llama-server's `meta.n_ctx_train` in the list and its slots' `n_ctx` in `/props`).

use super::http::get_json;
use super::{Remote, RemoteKind};
use serde_json::Value;
use std::time::Duration;

/// A listing gives up on a silent server after this long.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// One model a remote serves.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteModel {
    pub id: String,
    /// The context a request can use, when the server says.
    pub context: Option<usize>,
    /// What the model was trained for, when the server says.
    pub trained_context: Option<usize>,
    pub parameters: Option<u64>,
}

/// A remote's models (its allow-list applied), or why it could not be asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub remote: Remote,
    pub models: Result<Vec<RemoteModel>, String>,
}

fn size(v: &Value) -> Option<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
}

/// The remote's models. Without a `kind`, `/v1/models` first, then Ollama's list when that
/// path does not exist.
pub fn models(remote: &Remote) -> Result<Vec<RemoteModel>, String> {
    let all = match remote.kind {
        Some(RemoteKind::Ollama) => ollama_models(remote)?,
        Some(RemoteKind::Openai) => openai_models(remote)?,
        None => match openai_models(remote) {
            Err(e) if e.contains("(404)") || e.contains("404 Not Found") => {
                ollama_models(remote).map_err(|_| e)?
            }
            other => other?,
        },
    };
    Ok(all.into_iter().filter(|m| remote.allows(&m.id)).collect())
}

fn openai_models(remote: &Remote) -> Result<Vec<RemoteModel>, String> {
    let url = format!("{}/models", remote.base_url);
    let v = get_json(remote, &url, LIST_TIMEOUT)?;
    let data = v["data"]
        .as_array()
        .or_else(|| v["models"].as_array())
        .ok_or_else(|| format!("{} answered {url} without a model list", remote.name))?;
    Ok(data
        .iter()
        .filter_map(|m| {
            let id = m["id"].as_str().or_else(|| m["name"].as_str())?;
            Some(RemoteModel {
                id: id.to_string(),
                context: size(&m["max_model_len"]).or_else(|| size(&m["meta"]["n_ctx"])),
                trained_context: size(&m["meta"]["n_ctx_train"]),
                parameters: m["meta"]["n_params"].as_u64(),
            })
        })
        .collect())
}

fn ollama_models(remote: &Remote) -> Result<Vec<RemoteModel>, String> {
    let url = format!("{}/api/tags", remote.root_url());
    let v = get_json(remote, &url, LIST_TIMEOUT)?;
    let list = v["models"]
        .as_array()
        .ok_or_else(|| format!("{} answered {url} without a model list", remote.name))?;
    Ok(list
        .iter()
        .filter_map(|m| {
            let id = m["model"].as_str().or_else(|| m["name"].as_str())?;
            Some(RemoteModel {
                id: id.to_string(),
                context: None,
                trained_context: None,
                parameters: None,
            })
        })
        .collect())
}

/// llama-server's per-request context (`/props`); None from servers without it.
pub fn props_context(remote: &Remote) -> Option<usize> {
    let v = get_json(
        remote,
        &format!("{}/props", remote.root_url()),
        LIST_TIMEOUT,
    )
    .ok()?;
    size(&v["default_generation_settings"]["n_ctx"]).or_else(|| size(&v["n_ctx"]))
}

/// Lists every remote at once, each on its own thread, so a dead one costs its own timeout
/// and nothing more; results come back in the config's order.
pub fn list_all(remotes: &[Remote]) -> Vec<Listing> {
    let handles: Vec<_> = remotes
        .iter()
        .cloned()
        .map(|remote| {
            let r = remote.clone();
            (
                remote,
                std::thread::Builder::new()
                    .name("taper-remote-list".into())
                    .spawn(move || models(&r)),
            )
        })
        .collect();
    handles
        .into_iter()
        .map(|(remote, handle)| {
            let models = match handle {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err("the listing failed".into())),
                Err(e) => Err(format!("cannot start a listing: {e}")),
            };
            Listing { remote, models }
        })
        .collect()
}
