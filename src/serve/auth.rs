//! Who may use the server: the bind policy (loopback unless an API key is set) and the bearer
//! key check, compared in constant time and never logged.

use anyhow::{bail, Result};
use std::net::IpAddr;

/// Refuses to open the server beyond this machine without a key: anyone on the network could
/// otherwise use (and load) it.
pub fn check_bind(host: IpAddr, key: Option<&str>) -> Result<()> {
    if !host.is_loopback() && key.is_none() {
        bail!(
            "refusing to listen on {host} without an API key: anyone who can reach this \
             machine could use the server. Set one with --api-key-env NAME (the name of an \
             environment variable holding the key), or listen on 127.0.0.1"
        );
    }
    Ok(())
}

/// Whether an `Authorization` header value carries `key` as its bearer token. The comparison
/// takes the same time wherever the first difference is, so timing does not reveal the key.
pub fn authorized(header: Option<&[u8]>, key: &str) -> bool {
    let Some(value) = header else {
        return false;
    };
    let token = value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))
        .unwrap_or(b"");
    constant_time_eq(token, key.as_bytes())
}

/// Equal bytes, in time that depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    // Every byte of the longer input is visited; a length difference is folded in too.
    let n = a.len().max(b.len());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= u64::from(x ^ y);
    }
    // black_box keeps the optimizer from turning the loop into an early exit.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_may_go_without_a_key() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(check_bind(local, None).is_ok());
        assert!(check_bind("::1".parse().unwrap(), None).is_ok());
        let err = check_bind(any, None).unwrap_err().to_string();
        assert!(err.contains("without an API key"), "{err}");
        assert!(check_bind(any, Some("k")).is_ok());
    }

    #[test]
    fn the_bearer_key_must_match_exactly() {
        assert!(authorized(Some(b"Bearer s3cret"), "s3cret"));
        assert!(!authorized(Some(b"Bearer s3cre"), "s3cret"));
        assert!(!authorized(Some(b"Bearer s3crett"), "s3cret"));
        assert!(!authorized(Some(b"s3cret"), "s3cret"));
        assert!(!authorized(None, "s3cret"));
        assert!(!authorized(Some(b"Bearer "), "s3cret"));
    }
}
