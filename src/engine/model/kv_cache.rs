//! The key/value cache: one preallocated buffer per layer, written in place, truncatable.
//!
//! Buffers are sized to the session's context, not the model's maximum, and start as zeroed
//! allocations the OS maps lazily, so memory grows with the conversation.

use anyhow::{bail, Result};

/// One layer's keys and values, laid out `(kv_heads, capacity, head_dim)` so that each head's
/// positions are contiguous.
pub struct LayerCache {
    pub k: Vec<f32>,
    pub v: Vec<f32>,
}

pub struct KvCache {
    layers: Vec<LayerCache>,
    kv_heads: usize,
    head_dim: usize,
    capacity: usize,
    /// Positions currently held (same for every layer once a forward pass completes).
    len: usize,
}

impl KvCache {
    pub fn new(n_layer: usize, kv_heads: usize, head_dim: usize, capacity: usize) -> Self {
        let size = kv_heads * capacity * head_dim;
        let layers = (0..n_layer)
            .map(|_| LayerCache {
                k: vec![0f32; size],
                v: vec![0f32; size],
            })
            .collect();
        Self {
            layers,
            kv_heads,
            head_dim,
            capacity,
            len: 0,
        }
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
    pub fn append(&mut self, layer: usize, k: &[f32], v: &[f32]) -> &LayerCache {
        let (heads, d, cap, start) = (self.kv_heads, self.head_dim, self.capacity, self.len);
        let tokens = k.len() / (heads * d);
        let cache = &mut self.layers[layer];
        for t in 0..tokens {
            for h in 0..heads {
                let src = (t * heads + h) * d;
                let dst = (h * cap + start + t) * d;
                cache.k[dst..dst + d].copy_from_slice(&k[src..src + d]);
                cache.v[dst..dst + d].copy_from_slice(&v[src..src + d]);
            }
        }
        &self.layers[layer]
    }

    /// Marks `tokens` appended positions as held, after every layer has written them.
    pub fn commit(&mut self, tokens: usize) {
        self.len += tokens;
    }
}
