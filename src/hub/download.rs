//! One file from the hub into the cache: metadata (commit, etag, size), a resumable ranged
//! transfer into `blobs/<etag>.part`, a checksum, then an atomic rename and the snapshot link.

use super::{HubConfig, HubError, HubFile};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the hub says about a file before it is fetched.
#[derive(Debug)]
struct Remote {
    commit: String,
    etag: String,
    size: u64,
    /// Where the bytes are (the resolve URL, or the CDN it redirects to).
    url: String,
}

const CHUNK: usize = 1 << 16;
const MAX_REDIRECTS: usize = 5;

/// Downloads `file` into the cache unless it is there already, calling `progress(done, total)`
/// as bytes arrive. Setting `cancel` stops it between chunks; the partial file stays as
/// `.part` (never mistaken for a complete one) and the next call resumes it.
pub fn download(
    config: &HubConfig,
    file: &HubFile,
    cancel: &AtomicBool,
    mut progress: impl FnMut(u64, u64),
) -> Result<PathBuf, HubError> {
    let escapes = Path::new(&file.file)
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)));
    if escapes
        || file
            .repo
            .split('/')
            .any(|p| p.is_empty() || p == ".." || p == ".")
    {
        return Err(HubError::NotFound {
            repo: file.repo.clone(),
            file: file.file.clone(),
        });
    }
    if let Some(path) = file.cached(config) {
        return Ok(path);
    }
    if config.offline {
        return Err(HubError::Offline {
            repo: file.repo.clone(),
            file: file.file.clone(),
            cache: config.cache_dir.display().to_string(),
        });
    }
    let agent = ureq::AgentBuilder::new()
        .redirects(0)
        .timeout_connect(Duration::from_secs(15))
        .timeout_read(Duration::from_secs(60))
        .build();
    let remote = metadata(&agent, config, file)?;
    let repo_dir = file.repo_dir(config);
    let io = |source: std::io::Error| HubError::Io {
        file: file.file.clone(),
        dir: repo_dir.display().to_string(),
        source,
    };
    let blobs = repo_dir.join("blobs");
    fs::create_dir_all(&blobs).map_err(io)?;
    let blob = blobs.join(&remote.etag);
    if !blob.is_file() {
        let part = blobs.join(format!("{}.part", remote.etag));
        fetch(&agent, config, file, &remote, &part, cancel, &mut progress)?;
        verify(file, &remote, &part)?;
        fs::rename(&part, &blob).map_err(io)?;
    }
    let snapshot = repo_dir.join("snapshots").join(&remote.commit);
    let pointer = snapshot.join(&file.file);
    if let Some(parent) = pointer.parent() {
        fs::create_dir_all(parent).map_err(io)?;
    }
    link(&blob, &pointer).map_err(io)?;
    file.cache_repo(config)
        .create_ref(&remote.commit)
        .map_err(io)?;
    Ok(pointer)
}

fn resolve_url(config: &HubConfig, file: &HubFile) -> String {
    format!(
        "{}/{}/resolve/{}/{}",
        config.endpoint, file.repo, file.revision, file.file
    )
}

fn request(agent: &ureq::Agent, config: &HubConfig, url: &str, range: &str) -> ureq::Request {
    let mut req = agent
        .get(url)
        .set("Range", range)
        .set("User-Agent", concat!("taper/", env!("CARGO_PKG_VERSION")));
    if let Some(token) = &config.token {
        req = req.set("Authorization", &format!("Bearer {token}"));
    }
    req
}

/// Turns a failed request into the sentence the user needs.
fn classify(err: ureq::Error, config: &HubConfig, file: &HubFile) -> HubError {
    match err {
        ureq::Error::Status(401, _) => HubError::NeedsToken {
            repo: file.repo.clone(),
        },
        ureq::Error::Status(403, _) if config.token.is_none() => HubError::NeedsToken {
            repo: file.repo.clone(),
        },
        ureq::Error::Status(403, _) => HubError::Forbidden {
            repo: file.repo.clone(),
        },
        ureq::Error::Status(404, _) => HubError::NotFound {
            repo: file.repo.clone(),
            file: file.file.clone(),
        },
        ureq::Error::Status(code, _) => HubError::Protocol {
            repo: file.repo.clone(),
            file: file.file.clone(),
            detail: format!("HTTP status {code}"),
        },
        ureq::Error::Transport(t) => HubError::Unreachable {
            endpoint: config.endpoint.clone(),
            detail: t.to_string(),
        },
    }
}

fn metadata(agent: &ureq::Agent, config: &HubConfig, file: &HubFile) -> Result<Remote, HubError> {
    let protocol = |detail: String| HubError::Protocol {
        repo: file.repo.clone(),
        file: file.file.clone(),
        detail,
    };
    let mut url = resolve_url(config, file);
    let mut commit = None;
    let mut etag = None;
    for _ in 0..=MAX_REDIRECTS {
        let resp = request(agent, config, &url, "bytes=0-0")
            .call()
            .map_err(|e| classify(e, config, file))?;
        let header = |name: &str| resp.header(name).map(|v| v.trim_matches('"').to_string());
        commit = commit.or_else(|| header("x-repo-commit"));
        etag = etag.or_else(|| header("x-linked-etag").or_else(|| header("etag")));
        if (300..400).contains(&resp.status()) {
            let location = header("location")
                .ok_or_else(|| protocol("a redirect without a location".into()))?;
            // Relative redirects (renamed repos) stay on the hub; absolute ones go to the CDN.
            url = if location.starts_with('/') {
                format!("{}{location}", origin(&url))
            } else {
                location
            };
            continue;
        }
        let size = header("x-linked-size")
            .or_else(|| {
                header("content-range").and_then(|r| r.rsplit('/').next().map(str::to_string))
            })
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| protocol("no file size in the answer".into()))?;
        let commit = commit.ok_or_else(|| protocol("no x-repo-commit header".into()))?;
        let etag = etag.ok_or_else(|| protocol("no etag header".into()))?;
        if !is_safe_name(&commit) || !is_safe_name(&etag) {
            return Err(protocol("a commit or etag that is not a plain name".into()));
        }
        return Ok(Remote {
            commit,
            etag,
            size,
            url,
        });
    }
    Err(protocol("too many redirects".into()))
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// Names that become file names in the cache must not walk out of it.
fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn fetch(
    agent: &ureq::Agent,
    config: &HubConfig,
    file: &HubFile,
    remote: &Remote,
    part: &Path,
    cancel: &AtomicBool,
    progress: &mut impl FnMut(u64, u64),
) -> Result<(), HubError> {
    let io = |source| io_error(file, part, source);
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(part)
        .map_err(io)?;
    let mut done = out.metadata().map_err(io)?.len();
    if done > remote.size {
        out.set_len(0).map_err(io)?;
        done = 0;
    }
    progress(done, remote.size);
    if done == remote.size {
        return Ok(());
    }
    let resp = request(agent, config, &remote.url, &format!("bytes={done}-"))
        .call()
        .map_err(|e| classify(e, config, file))?;
    if resp.status() != 206 {
        // The server ignored the range: start over.
        out.set_len(0).map_err(io)?;
        out.seek(SeekFrom::Start(0)).map_err(io)?;
        done = 0;
    }
    let mut body = resp.into_reader();
    let mut buf = vec![0u8; CHUNK];
    while done < remote.size {
        if cancel.load(Ordering::SeqCst) {
            out.sync_all().map_err(io)?;
            return Err(HubError::Cancelled(file.file.clone()));
        }
        let n = body.read(&mut buf).map_err(|e| HubError::Unreachable {
            endpoint: config.endpoint.clone(),
            detail: format!("the transfer broke: {e}"),
        })?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).map_err(io)?;
        done += n as u64;
        progress(done, remote.size);
    }
    out.sync_all().map_err(io)?;
    if done != remote.size {
        return Err(HubError::Unreachable {
            endpoint: config.endpoint.clone(),
            detail: format!("the transfer stopped at {done} of {} bytes", remote.size),
        });
    }
    Ok(())
}

fn io_error(file: &HubFile, part: &Path, source: std::io::Error) -> HubError {
    HubError::Io {
        file: file.file.clone(),
        dir: part
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        source,
    }
}

/// Checks size, and content when the etag is a sha256 (as it is for LFS files).
fn verify(file: &HubFile, remote: &Remote, part: &Path) -> Result<(), HubError> {
    let io = |source| io_error(file, part, source);
    let len = fs::metadata(part).map_err(io)?.len();
    let bad = |detail: String| {
        // A wrong file must not be resumed from.
        let _ = fs::remove_file(part);
        HubError::Protocol {
            repo: file.repo.clone(),
            file: file.file.clone(),
            detail,
        }
    };
    if len != remote.size {
        return Err(bad(format!(
            "{len} bytes arrived, {} expected",
            remote.size
        )));
    }
    let is_sha256 = remote.etag.len() == 64 && remote.etag.chars().all(|c| c.is_ascii_hexdigit());
    if is_sha256 {
        let mut hasher = Sha256::new();
        let mut f = File::open(part).map_err(io)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let got: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if got != remote.etag.to_ascii_lowercase() {
            return Err(bad(format!(
                "checksum {got} does not match {}",
                remote.etag
            )));
        }
    }
    Ok(())
}

/// The snapshot entry points at the blob: a relative symlink where the OS has them.
fn link(blob: &Path, pointer: &Path) -> std::io::Result<()> {
    if pointer.exists() {
        return Ok(());
    }
    let _ = fs::remove_file(pointer); // a dangling link from an older download
    #[cfg(unix)]
    {
        let depth = pointer
            .strip_prefix(
                blob.parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new("/")),
            )
            .map(|rel| rel.components().count().saturating_sub(1))
            .unwrap_or(0);
        let mut target = PathBuf::new();
        for _ in 0..depth {
            target.push("..");
        }
        target.push("blobs");
        if let Some(name) = blob.file_name() {
            target.push(name);
        }
        std::os::unix::fs::symlink(target, pointer)
    }
    #[cfg(not(unix))]
    {
        fs::copy(blob, pointer).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_keeps_scheme_host_and_port() {
        assert_eq!(origin("http://127.0.0.1:8080/a/b"), "http://127.0.0.1:8080");
        assert_eq!(origin("https://huggingface.co"), "https://huggingface.co");
    }

    #[test]
    fn names_with_path_separators_are_unsafe() {
        assert!(is_safe_name("a1b2c3"));
        assert!(!is_safe_name("../../etc"));
        assert!(!is_safe_name(""));
    }
}
