//! Buffers a forward pass borrows and gives back, so that the next pass writes into memory
//! that is already mapped instead of asking the allocator for fresh pages.
//!
//! Why: a pass's activations are megabytes each (Gemma 4 E4B's feed-forward at 128 rows: two
//! 5 MB matrices a layer), far above the size where glibc's malloc maps a block of its own and
//! unmaps it on free. Every pass then faulted in and cleared its whole working set again:
//! about 167,000 page faults per 128-token prefill of that model, 11% of its time spent
//! clearing pages. Kept here, the working set is faulted in once and reused by every later pass.
//!
//! A pool keeps at most as many buffers as a pass holds at once, and each the size the
//! passes ask for: a request no free buffer can hold replaces the largest free one rather
//! than adding to them. The pool belongs to the model, so a model switch frees it.

use crate::engine::model::kernels::{Q8Block, Q8KBlock};
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// The pools of one model's passes: activations in f32, and rows quantized for the matmuls.
#[derive(Debug, Default)]
pub struct PassScratch {
    pub floats: BufferPool<f32>,
    pub q8: BufferPool<Q8Block>,
    pub q8k: BufferPool<Q8KBlock>,
}

/// Free buffers of one element type. A free buffer keeps the whole length it was ever
/// initialised to, so a later, shorter or equal request is served without writing a value.
#[derive(Debug, Default)]
pub struct BufferPool<T> {
    free: Mutex<Vec<Vec<T>>>,
}

impl<T: Copy + Default> BufferPool<T> {
    /// `len` values whose contents are unspecified (what an earlier pass left in them): for
    /// outputs that are written in full.
    pub fn take(&self, len: usize) -> Pooled<'_, T> {
        let reused = {
            let mut free = self.lock();
            let fits = free
                .iter()
                .enumerate()
                .filter(|(_, v)| v.len() >= len)
                .min_by_key(|(_, v)| v.len())
                .map(|(i, _)| i);
            match fits {
                Some(i) => Some(free.swap_remove(i)),
                None => {
                    // None is big enough: let the largest go, so the pool follows the passes
                    // now running instead of growing by one buffer per size ever asked for.
                    let largest = free
                        .iter()
                        .enumerate()
                        .max_by_key(|(_, v)| v.len())
                        .map(|(i, _)| i);
                    if let Some(i) = largest {
                        free.swap_remove(i);
                    }
                    None
                }
            }
        };
        // A reused buffer is already `len` values or more: nothing is written here (a
        // prefill after decode steps would otherwise clear every buffer it takes).
        let buf = reused.unwrap_or_else(|| vec![T::default(); len]);
        Pooled {
            buf,
            len,
            pool: Some(self),
        }
    }

    /// `len` values, all `value`.
    #[cfg(test)]
    fn filled(&self, len: usize, value: T) -> Pooled<'_, T> {
        let mut buf = self.take(len);
        buf.fill(value);
        buf
    }

    /// A copy of `values`.
    pub fn copy_of(&self, values: &[T]) -> Pooled<'_, T> {
        let mut buf = self.take(values.len());
        buf.copy_from_slice(values);
        buf
    }

    /// `values`, returned to this pool when dropped like a buffer taken from it.
    pub fn adopt(&self, values: Vec<T>) -> Pooled<'_, T> {
        Pooled {
            len: values.len(),
            buf: values,
            pool: Some(self),
        }
    }

    /// Buffers now free.
    #[cfg(test)]
    fn free_count(&self) -> usize {
        self.lock().len()
    }

    fn give_back(&self, buf: Vec<T>) {
        if !buf.is_empty() {
            self.lock().push(buf);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Vec<T>>> {
        // A panic while the list was held cannot leave it inconsistent (a push or a removal).
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A buffer from a [`BufferPool`], given back when dropped.
#[derive(Debug)]
pub struct Pooled<'p, T: Copy + Default> {
    /// At least `len` values; the ones after them belong to earlier, longer uses.
    buf: Vec<T>,
    len: usize,
    /// None once the buffer was taken out of the pool's care ([`Pooled::into_vec`]).
    pool: Option<&'p BufferPool<T>>,
}

impl<T: Copy + Default> Pooled<'_, T> {
    /// The values as a vector of their own; the pool does not get the memory back.
    pub fn into_vec(mut self) -> Vec<T> {
        self.pool = None;
        self.buf.truncate(self.len);
        std::mem::take(&mut self.buf)
    }
}

impl<T: Copy + Default> Deref for Pooled<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[..self.len]
    }
}

impl<T: Copy + Default> DerefMut for Pooled<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[..self.len]
    }
}

impl<T: Copy + Default> Drop for Pooled<'_, T> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool {
            pool.give_back(std::mem::take(&mut self.buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_reused_for_a_request_it_holds() {
        let pool = BufferPool::<f32>::default();
        let first = pool.filled(1000, 1.5);
        let at = first.as_ptr();
        drop(first);
        assert_eq!(pool.free_count(), 1);
        let again = pool.take(600);
        assert_eq!(again.len(), 600);
        assert_eq!(again.as_ptr(), at, "the same memory, not a new allocation");
        assert_eq!(pool.free_count(), 0);
    }

    #[test]
    fn the_smallest_buffer_that_holds_the_request_is_chosen() {
        let pool = BufferPool::<f32>::default();
        let (big, small) = (pool.take(4000), pool.take(100));
        let small_at = small.as_ptr();
        drop((big, small));
        assert_eq!(pool.take(80).as_ptr(), small_at);
    }

    #[test]
    fn a_request_too_big_for_every_buffer_replaces_the_largest() {
        let pool = BufferPool::<f32>::default();
        drop((pool.take(10), pool.take(20)));
        assert_eq!(pool.free_count(), 2);
        let grown = pool.filled(50, 2.0);
        assert_eq!(pool.free_count(), 1, "the 20-value buffer was let go");
        assert!(grown.iter().all(|&v| v == 2.0));
        drop(grown);
        assert_eq!(pool.free_count(), 2);
    }

    #[test]
    fn a_longer_request_than_the_reused_length_gets_every_value() {
        let pool = BufferPool::<u32>::default();
        let mut a = pool.take(100);
        a.fill(7);
        drop(a);
        // The same memory, shorter, then longer again: the new tail is initialised.
        drop(pool.take(10));
        let b = pool.take(100);
        assert_eq!(b.len(), 100);
        assert_eq!(pool.copy_of(&[1, 2, 3])[..], [1, 2, 3]);
    }

    #[test]
    fn into_vec_and_adopt_move_buffers_out_of_and_into_the_pool() {
        let pool = BufferPool::<f32>::default();
        let v = pool.filled(8, 3.0).into_vec();
        assert_eq!(v, vec![3.0; 8]);
        assert_eq!(pool.free_count(), 0, "a buffer moved out is not given back");
        drop(pool.adopt(v));
        assert_eq!(pool.free_count(), 1);
    }
}
