//! Paths.
