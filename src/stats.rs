//! Stats.
