//! A model's slots while it is kept loaded and another is in use: each slot's caches and
//! what they hold, so a switch back reads only what is new.

use crate::engine::context_fit::Window;
use crate::engine::host::slot::Slot;
use crate::engine::model::KvCache;
use crate::engine::prefix_cache::PrefixCache;
use crate::engine::speculative::DraftMemory;

/// A slot while its model is not in use: its cache, the tokens the cache holds and the window
/// of its last conversation (no request: a closed scheduler has none).
pub struct SavedSlot {
    cache: KvCache,
    draft_memory: Option<DraftMemory>,
    prefix: PrefixCache,
    window: Window,
    pub(super) last_used: u64,
}

impl SavedSlot {
    pub(super) fn new(cache: KvCache) -> Self {
        Self {
            cache,
            draft_memory: None,
            prefix: PrefixCache::default(),
            window: Window::default(),
            last_used: 0,
        }
    }

    pub(super) fn from_slot(slot: Slot) -> Self {
        Self {
            cache: slot.cache,
            draft_memory: slot.draft_memory,
            prefix: slot.prefix,
            window: slot.window,
            last_used: slot.last_used,
        }
    }

    pub(super) fn into_slot<'t>(self) -> Slot<'t> {
        Slot {
            cache: self.cache,
            draft_memory: self.draft_memory,
            prefix: self.prefix,
            window: self.window,
            active: None,
            last_used: self.last_used,
        }
    }
}
