//! Zero-filled buffers the OS maps lazily, for the KV cache: its memory then grows with the
//! conversation, not with the context size. A `vec![0; n]` gets that only while malloc maps
//! the block on its own; glibc raises that threshold (up to 32 MB) whenever a large block is
//! freed, as a model switch frees many, and then a layer's cache lands in reused heap memory
//! that `calloc` must clear: the whole context resident at load.

use anyhow::{Context, Result};
use memmap2::MmapMut;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// `len` values of `T`, zeros until written, in an anonymous mapping of their own (given back
/// to the OS when dropped).
pub struct Zeroed<T> {
    map: MmapMut,
    len: usize,
    values: PhantomData<T>,
}

impl<T: bytemuck::Pod> Zeroed<T> {
    pub fn new(len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .context("the KV cache's size overflows")?;
        // A mapping cannot be empty: one byte then, and no values.
        let map = MmapMut::map_anon(bytes.max(1))
            .with_context(|| format!("cannot allocate {bytes} bytes for the KV cache"))?;
        Ok(Self {
            map,
            len,
            values: PhantomData,
        })
    }
}

impl<T: bytemuck::Pod> Deref for Zeroed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // A mapping starts on a page, aligned for any `T`; zeros are a valid `Pod` value.
        bytemuck::cast_slice(&self.map[..self.len * std::mem::size_of::<T>()])
    }
}

impl<T: bytemuck::Pod> DerefMut for Zeroed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let bytes = self.len * std::mem::size_of::<T>();
        bytemuck::cast_slice_mut(&mut self.map[..bytes])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_zeroed_and_keeps_what_is_written() {
        let mut values = Zeroed::<u16>::new(5000).expect("a small mapping");
        assert_eq!(values.len(), 5000);
        assert!(values.iter().all(|&v| v == 0));
        values[4999] = 7;
        values[0] = 3;
        assert_eq!((values[0], values[1], values[4999]), (3, 0, 7));
        let empty = Zeroed::<f32>::new(0).expect("an empty buffer");
        assert!(empty.is_empty());
    }
}
