//! The engine's remote backend: `Connect` checks that the server serves the model and learns
//! its context size; a turn streams from it (`crate::remote::stream`) and reports the same
//! events as a local model, so clients do not care where tokens come from.

use crate::protocol::{GenerateRequest, ModelInfo, TurnObserver};
use crate::remote::{list, stream, RemoteTarget};
use crate::stats::secs;
use anyhow::{anyhow, Result};
use std::path::PathBuf;
use std::time::Instant;

/// A remote model the worker answers with.
pub struct Connected {
    target: RemoteTarget,
    /// The context a request can use, 0 when the server did not say.
    context_size: usize,
}

pub(super) fn connect(target: RemoteTarget) -> Result<(Connected, ModelInfo)> {
    let started = Instant::now();
    let remote = &target.remote;
    let models = list::models(remote).map_err(|e| anyhow!("{e}"))?;
    let Some(model) = models.iter().find(|m| m.id == target.model) else {
        let offered: Vec<&str> = models.iter().take(8).map(|m| m.id.as_str()).collect();
        return Err(anyhow!(
            "{} does not serve {:?}{}",
            remote.name,
            target.model,
            if offered.is_empty() {
                " (it lists no models)".to_string()
            } else {
                format!("; it serves: {}", offered.join(", "))
            }
        ));
    };
    // vLLM puts the context in the list; llama-server in /props (its slots' own size).
    let context_size = model
        .context
        .or_else(|| list::props_context(remote))
        .unwrap_or(0);
    let label = target.label();
    let info = ModelInfo {
        path: PathBuf::from(&label),
        name: label,
        architecture: "remote".into(),
        quantization: remote.host().to_string(),
        file_size: 0,
        parameters: model.parameters.unwrap_or(0),
        context_size,
        cache_type: Default::default(),
        cache_bytes: 0,
        context_length: model.trained_context.unwrap_or(context_size),
        load_s: secs(started.elapsed()),
        threads: 0,
        kernels: "remote",
        remote: Some(remote.base_url.clone()),
        tokens: Default::default(),
        kept_loaded: false,
        resident: Vec::new(),
        draft_model: None,
    };
    Ok((
        Connected {
            target,
            context_size,
        },
        info,
    ))
}

pub(super) fn generate(
    connected: &Connected,
    request: &GenerateRequest,
    asked: Instant,
    observer: &mut dyn TurnObserver,
) -> Result<stream::Answer> {
    stream::run(
        &connected.target,
        request,
        connected.context_size,
        asked,
        observer,
    )
}
