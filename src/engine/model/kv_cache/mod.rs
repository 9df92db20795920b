//! The key/value cache: one preallocated store per layer, written in place, truncatable, in
//! the number format the user chose (`--cache-type`: f16 by default, q8_0, f32).
//!
//! Buffers are sized to the session's context, not the model's maximum, and start as zeroed
//! allocations the OS maps lazily, so memory grows with the conversation.

mod convert;
pub(crate) mod f16_lanes;
mod layout;
mod store;
mod zeroed;

pub use layout::{KeyRuns, Numbers, KEY_STRIDE, Q8_BLOCK, TILE};
pub use store::{CacheType, KeyStore, ValueStore};

use anyhow::{bail, Result};

/// One layer's keys (by tiles, transposed) and values (rows), each head's positions
/// contiguous.
pub struct LayerCache {
    pub k: KeyStore,
    pub v: ValueStore,
    pub head_dim: usize,
}

pub struct KvCache {
    /// `None` for a layer that reads another layer's cache (Gemma 4's KV-shared layers).
    layers: Vec<Option<LayerCache>>,
    kv_heads: usize,
    capacity: usize,
    kind: CacheType,
    /// Positions currently held (same for every layer once a forward pass completes).
    len: usize,
}

impl KvCache {
    /// `head_dims` has one entry per layer: its head size, or `None` when it owns no cache.
    pub fn new(
        head_dims: &[Option<usize>],
        kv_heads: usize,
        capacity: usize,
        kind: CacheType,
    ) -> Result<Self> {
        for d in head_dims.iter().flatten() {
            kind.check_head_dim(*d)?;
        }
        let layers = head_dims
            .iter()
            .map(|d| {
                d.map(|head_dim| {
                    Ok(LayerCache {
                        k: KeyStore::new(kind, kv_heads, capacity, head_dim)?,
                        v: ValueStore::new(kind, kv_heads, capacity, head_dim)?,
                        head_dim,
                    })
                })
                .transpose()
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            layers,
            kv_heads,
            capacity,
            kind,
            len: 0,
        })
    }

    /// The same head size and a cache of its own for each of `n_layer` layers.
    pub fn uniform(
        n_layer: usize,
        kv_heads: usize,
        head_dim: usize,
        capacity: usize,
        kind: CacheType,
    ) -> Result<Self> {
        Self::new(&vec![Some(head_dim); n_layer], kv_heads, capacity, kind)
    }

    /// Bytes a cache of these layers takes once all `capacity` positions are written.
    pub fn bytes_needed(
        head_dims: &[Option<usize>],
        kv_heads: usize,
        capacity: usize,
        kind: CacheType,
    ) -> u64 {
        let per_position: usize = head_dims
            .iter()
            .flatten()
            .map(|&d| 2 * kv_heads * kind.row_bytes(d))
            .sum();
        per_position as u64 * capacity as u64
    }

    pub fn kind(&self) -> CacheType {
        self.kind
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets every position from `len` on.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Checks that `tokens` more positions fit, before any layer is touched.
    pub fn reserve(&self, tokens: usize) -> Result<()> {
        if self.len + tokens > self.capacity {
            bail!(
                "the context is full: {} + {tokens} tokens exceed the context size {}",
                self.len,
                self.capacity
            );
        }
        Ok(())
    }

    /// Writes `k` and `v`, each `(tokens, kv_heads, head_dim)` row-major, at the current end of
    /// `layer`, and returns the layer's buffers.
    pub fn append(&mut self, layer: usize, k: &[f32], v: &[f32]) -> Result<&LayerCache> {
        let (heads, cap, start) = (self.kv_heads, self.capacity, self.len);
        let Some(cache) = self.layers.get_mut(layer).and_then(|l| l.as_mut()) else {
            bail!("layer {layer} has no KV cache of its own");
        };
        let d = cache.head_dim;
        let tokens = k.len() / (heads * d);
        if k.len() != tokens * heads * d || v.len() != k.len() || start + tokens > cap {
            bail!("layer {layer}: {} keys do not fit the cache", k.len());
        }
        for t in 0..tokens {
            for h in 0..heads {
                let src = (t * heads + h) * d;
                cache.k.write(h, start + t, &k[src..src + d]);
                cache.v.write(h, start + t, &v[src..src + d]);
            }
        }
        Ok(cache)
    }

    /// A layer's buffers as they are (to read the positions appended in this pass too).
    pub fn layer(&self, layer: usize) -> Result<&LayerCache> {
        match self.layers.get(layer) {
            Some(Some(cache)) => Ok(cache),
            _ => bail!("layer {layer} has no KV cache of its own"),
        }
    }

    /// Marks `tokens` appended positions as held, after every layer has written them.
    pub fn commit(&mut self, tokens: usize) {
        self.len += tokens;
    }
}
