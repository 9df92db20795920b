//! Incremental, UTF-8-safe text from token ids.
