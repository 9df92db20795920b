//! (placeholder replaced by the parsers)
