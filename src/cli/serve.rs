//! `taper serve`: its flags, resolved over the config file into [`ServeOptions`].

use super::{RunArgs, SpeculativeArg};
use crate::config::Config;
use crate::engine::model::CacheOptions;
use crate::models::resolve;
use crate::protocol::Speculation;
use crate::serve::log::LogFormat;
use crate::serve::{self, http::ConnectionLimits, request::Limits, ModelOptions, ServeOptions};
use anyhow::{bail, Result};
use clap::Args;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Most bytes in a request body.
const MAX_BODY_BYTES: usize = 8 << 20;
/// Most messages in one chat request.
const MAX_MESSAGES: usize = 4096;
/// A request body must arrive within this.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Open connections at most.
const MAX_CONNECTIONS: usize = 512;

#[derive(Debug, Args)]
// Each slot has a KV cache of its own, and the help says so.
#[command(mut_arg("ctx_size", |a| a.help(
    "KV-cache size of each slot in tokens, capped at the model's own context \
     [default: the config's, 4096]"
)))]
pub struct ServeArgs {
    /// A path to a .gguf file, or the name of one in the models directory; given again, the
    /// server answers with each, the request's `model` picking (the first when it names none).
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// A tokenizer.json to use instead of the vocabulary inside the GGUF (one model only).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// The address to listen on; anything but loopback needs --api-key-env.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The port (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Requests answered at once, decoded together; each slot has its own KV cache.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
    #[command(flatten)]
    pub run: RunArgs,
    /// The environment variable that holds the API key clients must send as a bearer token.
    #[arg(long = "api-key-env", value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// Requests waiting for a slot at most; more are answered 503 [default: 4 per slot].
    #[arg(long)]
    pub queue: Option<usize>,
    /// Most tokens in an answer when a request does not say [default: the config's, 1024].
    #[arg(short = 'n', long = "max-tokens")]
    pub max_tokens: Option<usize>,
    #[command(flatten)]
    pub speculative: SpeculativeArg,
    /// Seconds a client has to send a request's headers; slow or half-open connections are
    /// closed after it.
    #[arg(long = "header-timeout", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// How each request is logged on stderr: a line of text, a JSON object, or off.
    #[arg(long = "log-format", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// No request log (as --log-format off).
    #[arg(long)]
    pub quiet: bool,
    /// Models loaded at once at most; the others are loaded when a request names them, the
    /// least recently used idle model unloaded for each [default: every model given].
    #[arg(long = "keep-loaded", value_name = "N", value_parser = super::values::at_least_one)]
    pub keep_loaded: Option<usize>,
    /// What the loaded models may take together, each its weights and its slots' full KV
    /// cache, e.g. 6GB; never more than the machine has available [default: what is
    /// available, less 512 MiB]
    #[arg(long = "memory-budget", value_name = "SIZE", value_parser = super::values::memory_size)]
    pub memory_budget: Option<u64>,
}

pub(super) fn serve(args: ServeArgs, config: &Config) -> Result<()> {
    args.run.threads.apply(config)?;
    args.run.repack_cache.apply(config);
    let api_key = match &args.api_key_env {
        Some(name) => match std::env::var(name) {
            Ok(key) if !key.is_empty() => Some(key),
            _ => bail!("--api-key-env {name}: the environment variable {name} is not set"),
        },
        None => None,
    };
    // Before the (slow) model load: an address that needs a key is refused at once.
    serve::auth::check_bind(args.host, api_key.as_deref())?;
    let models = models(&args, config)?;
    let parallel = usize::from(args.parallel);
    let context = args.run.context_size(config);
    let default_max_tokens = args.max_tokens.unwrap_or(config.max_tokens());
    serve::serve(ServeOptions {
        keep_loaded: args.keep_loaded.unwrap_or(models.len()),
        models,
        host: args.host,
        port: args.port,
        parallel,
        cache: CacheOptions {
            context,
            cache_type: args.run.cache_type.resolve(config),
        },
        api_key,
        queue: args.queue.unwrap_or(4 * parallel).max(1),
        limits: Limits {
            max_body_bytes: MAX_BODY_BYTES,
            max_messages: MAX_MESSAGES,
            max_tokens: context,
        },
        defaults: config.sampling(),
        default_max_tokens,
        speculation: args.speculative.resolve(config),
        connections: ConnectionLimits {
            header_timeout: Duration::from_secs(args.header_timeout),
            max_connections: MAX_CONNECTIONS,
        },
        body_timeout: BODY_TIMEOUT,
        http_threads: 2,
        log_format: if args.quiet {
            LogFormat::Off
        } else {
            args.log_format
        },
        memory_budget: args.memory_budget,
    })
}

/// Each `-m` (or the config's default model) resolved, with its tokenizer, chat template and,
/// when the answers draft with one, its draft model (read before the server listens).
fn models(args: &ServeArgs, config: &Config) -> Result<Vec<ModelOptions>> {
    let named: Vec<Option<&str>> = match args.models.is_empty() {
        true => vec![None],
        false => args.models.iter().map(|m| Some(m.as_str())).collect(),
    };
    if named.len() > 1 && args.tokenizer.is_some() {
        bail!(
            "--tokenizer names one model's tokenizer; with several -m, give each its own in a \
             [[models]] entry of the config"
        );
    }
    let speculation = args.speculative.resolve(config);
    let mut models: Vec<ModelOptions> = Vec::new();
    for name in named {
        let (path, user_model) = resolve(name, config)?;
        let id = serve::models::model_name(&path);
        if let Some(twin) = models
            .iter()
            .find(|m| serve::models::model_name(&m.path) == id)
        {
            bail!(
                "{} and {} would both be served as {id:?}: a request could not pick between \
                 them",
                twin.path.display(),
                path.display()
            );
        }
        let draft_model = match speculation {
            Speculation::Draft => args.speculative.required_draft(&path, config)?,
            Speculation::Off | Speculation::Ngram => None,
        };
        models.push(ModelOptions {
            tokenizer_json: args
                .tokenizer
                .clone()
                .or_else(|| user_model.as_ref().and_then(|m| m.tokenizer.clone())),
            chat_template: user_model.and_then(|m| m.chat_template),
            draft_model,
            path,
        });
    }
    Ok(models)
}
