//! (placeholder replaced by the grammars)
