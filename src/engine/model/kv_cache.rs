//! The key/value cache: one preallocated buffer per layer, written in place, truncatable.
//!
//! Buffers are sized to the session's context, not the model's maximum, and start as zeroed
//! allocations the OS maps lazily, so memory grows with the conversation.

use anyhow::{bail, Result};
use candle_core::{DType, Device, Tensor};

struct LayerCache {
    /// `(kv_heads, capacity, head_dim)`.
    k: Tensor,
    v: Tensor,
}

pub struct KvCache {
    layers: Vec<LayerCache>,
    capacity: usize,
    /// Positions currently held (same for every layer once a forward pass completes).
    len: usize,
}

impl KvCache {
    pub fn new(n_layer: usize, kv_heads: usize, head_dim: usize, capacity: usize) -> Result<Self> {
        let layers = (0..n_layer)
            .map(|_| -> Result<LayerCache> {
                let shape = (kv_heads, capacity, head_dim);
                Ok(LayerCache {
                    k: Tensor::zeros(shape, DType::F32, &Device::Cpu)?,
                    v: Tensor::zeros(shape, DType::F32, &Device::Cpu)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            layers,
            capacity,
            len: 0,
        })
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

    /// Writes `k`, `v` of shape `(kv_heads, tokens, head_dim)` at the current end of `layer`
    /// and returns views of everything cached for it, new positions included.
    pub fn append(&mut self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let tokens = k.dim(1)?;
        let cache = &self.layers[layer];
        cache.k.slice_set(&k.contiguous()?, 1, self.len)?;
        cache.v.slice_set(&v.contiguous()?, 1, self.len)?;
        let total = self.len + tokens;
        Ok((cache.k.narrow(1, 0, total)?, cache.v.narrow(1, 0, total)?))
    }

    /// Marks `tokens` appended positions as held, after every layer has written them.
    pub fn commit(&mut self, tokens: usize) {
        self.len += tokens;
    }
}
