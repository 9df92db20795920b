//! (placeholder replaced by the grammars)
use super::ToolFormat;
use crate::protocol::{Constraint, ToolSet};

pub fn constraint(_format: ToolFormat, _tools: &ToolSet) -> Option<Constraint> {
    None
}
