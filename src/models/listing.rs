//! `taper models`: the catalogue and every local model, as a table.

use super::{catalog_path, LocalModel};
use crate::catalog;
use crate::hub::HubConfig;
use crate::stats::human_bytes;
use std::fmt::Write;

/// The remotes' section of `taper models`: each remote's models as `NAME/MODEL`, or why the
/// remote could not be listed.
pub fn render_remotes(listings: &[crate::remote::list::Listing]) -> String {
    let mut out = String::new();
    if listings.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nRemote models (taper ask -m NAME/MODEL):");
    for l in listings {
        let (name, url) = (&l.remote.name, &l.remote.base_url);
        match &l.models {
            Ok(models) if models.is_empty() => {
                let _ = writeln!(out, "  {name} ({url}): no models");
            }
            Ok(models) => {
                let _ = writeln!(out, "  {name} ({url}):");
                for m in models {
                    let ctx = m.context.map(|c| format!("  ctx {c}")).unwrap_or_default();
                    let _ = writeln!(out, "    {name}/{}{ctx}", m.id);
                }
            }
            Err(why) => {
                let why = why.strip_prefix(&format!("{name}: ")).unwrap_or(why);
                let _ = writeln!(out, "  {name} ({url}): unreachable: {why}");
            }
        }
    }
    out
}

/// The text `taper models` prints.
pub fn render(local: &[LocalModel], hub: &HubConfig) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Catalogue (taper models pull NAME downloads one):");
    let _ = writeln!(
        out,
        "  {:<14} {:<26} {:<7} {:<7} {:>9}  where",
        "name", "model", "arch", "quant", "size"
    );
    for e in catalog::entries() {
        let place = if !e.supported {
            format!("unsupported: {}", e.unsupported_reason)
        } else {
            match catalog_path(e, hub) {
                Some(path) => path.display().to_string(),
                // Before a multi-gigabyte pull, say exactly what it fetches.
                None if e.gated => format!(
                    "not downloaded: {}/{} (gated: needs HF_TOKEN)",
                    e.repo, e.file
                ),
                None => format!("not downloaded: {}/{}", e.repo, e.file),
            }
        };
        let _ = writeln!(
            out,
            "  {:<14} {:<26} {:<7} {:<7} {:>9}  {place}",
            e.name,
            truncate(&e.display_name, 26),
            e.architecture,
            e.quantization,
            human_bytes(e.size_bytes)
        );
    }
    let _ = writeln!(out);
    if local.is_empty() {
        let _ = writeln!(out, "Local models: none yet.");
        return out;
    }
    let _ = writeln!(out, "Local models:");
    let _ = writeln!(
        out,
        "  {:<30} {:<7} {:<6} {:>7} {:>7} {:<8} {:>9}  path",
        "name", "arch", "quant", "params", "ctx", "template", "size"
    );
    for m in local {
        match &m.summary {
            Ok(s) => {
                let status = match &s.unsupported {
                    Some(why) => format!("  (unsupported: {why})"),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  {:<30} {:<7} {:<6} {:>7} {:>7} {:<8} {:>9}  {}{status}",
                    truncate(&m.name, 30),
                    s.architecture,
                    s.quantization,
                    params(s.parameters),
                    s.context_length
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "?".into()),
                    if s.has_chat_template { "yes" } else { "no" },
                    human_bytes(s.file_size),
                    m.path.display()
                );
            }
            Err(problem) => {
                let _ = writeln!(
                    out,
                    "  {:<30} broken: {problem}  {}",
                    truncate(&m.name, 30),
                    m.path.display()
                );
            }
        }
    }
    out
}

fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// `135M`, `3.8B`.
fn params(n: u64) -> String {
    if n >= 1_000_000_000 {
        format!("{:.1}B", n as f64 / 1e9)
    } else {
        format!("{}M", (n as f64 / 1e6).round())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{LocalModel, ModelSummary};

    fn hub() -> HubConfig {
        HubConfig {
            endpoint: "http://127.0.0.1:1".into(),
            cache_dir: "/nonexistent".into(),
            token: None,
            offline: true,
        }
    }

    #[test]
    fn the_catalogue_shows_what_is_missing() {
        let text = render(&[], &hub());
        for name in ["qwen3-4b", "gemma4-e4b"] {
            let line = text.lines().find(|l| l.contains(name)).unwrap();
            assert!(line.contains("not downloaded"), "{line}");
            assert!(!line.contains("unsupported"), "{line}");
        }
    }

    #[test]
    fn local_models_show_header_facts_or_why_they_are_broken() {
        let ok = LocalModel {
            name: "tiny".into(),
            path: "/m/tiny.gguf".into(),
            summary: Ok(ModelSummary {
                architecture: "llama".into(),
                quantization: "Q4_1".into(),
                parameters: 134_515_008,
                context_length: Some(8192),
                has_chat_template: true,
                file_size: 98_362_432,
                unsupported: None,
            }),
            catalog: None,
            tokenizer: None,
            chat_template: None,
        };
        let broken = LocalModel {
            summary: Err("not a GGUF file".into()),
            name: "junk".into(),
            ..ok.clone()
        };
        let text = render(&[ok, broken], &hub());
        let line = text.lines().find(|l| l.contains("tiny")).unwrap();
        for want in [
            "llama",
            "Q4_1",
            "135M",
            "8192",
            "yes",
            "98.4 MB",
            "/m/tiny.gguf",
        ] {
            assert!(line.contains(want), "{want} in {line}");
        }
        assert!(text.contains("broken: not a GGUF file"), "{text}");
    }
}
