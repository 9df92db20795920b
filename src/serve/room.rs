//! The room a `taper serve` model needs: the budget the models loaded at once share (a count
//! and bytes of memory), which idle models leave to make a model's room, and the refusal of a
//! model no unloading could make room for. Pure decisions; [`super::roster`] acts on them.

use crate::engine::model;
use crate::stats::human_bytes;
use anyhow::{bail, Result};
use std::time::Instant;

/// What the models loaded at once may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes for their weights and full caches together; None: no limit known.
    pub bytes: Option<u64>,
    /// Models at most.
    pub models: usize,
    /// `bytes` is the `--memory-budget` given, not the machine's limit.
    pub asked: bool,
}

impl Budget {
    /// `asked` (`--memory-budget`), never more than the machine's available memory leaves
    /// after [`model::MEMORY_HEADROOM`]; that alone when nothing was asked.
    pub fn new(asked: Option<u64>, available: Option<u64>, models: usize) -> Self {
        let machine = available.map(|a| a.saturating_sub(model::MEMORY_HEADROOM));
        let bytes = match (asked, machine) {
            (Some(a), Some(m)) => Some(a.min(m)),
            (a, m) => a.or(m),
        };
        Self {
            bytes,
            models: models.max(1),
            asked: asked.is_some() && bytes == asked,
        }
    }

    pub fn holds(&self, count: usize, bytes: u64) -> bool {
        count <= self.models && self.bytes.is_none_or(|b| bytes <= b)
    }
}

/// A loaded model as the room planner sees it.
#[derive(Debug, Clone, Copy)]
pub struct Occupant {
    pub bytes: u64,
    pub last_used: Instant,
    /// No request is answering, queued for, or being prepared for it.
    pub idle: bool,
}

/// Which of `loaded` to unload (least recently used idle ones first) so that a model of
/// `need` bytes fits beside the rest; None while the room is held by models that are not idle.
pub fn plan_room(loaded: &[Occupant], need: u64, budget: &Budget) -> Option<Vec<usize>> {
    let mut count = loaded.len() + 1;
    let mut bytes = loaded
        .iter()
        .fold(need, |sum, o| sum.saturating_add(o.bytes));
    let mut idle: Vec<usize> = (0..loaded.len()).filter(|&i| loaded[i].idle).collect();
    idle.sort_by_key(|&i| loaded[i].last_used);
    let mut unload = Vec::new();
    for i in idle {
        if budget.holds(count, bytes) {
            break;
        }
        unload.push(i);
        count -= 1;
        bytes -= loaded[i].bytes;
    }
    budget.holds(count, bytes).then_some(unload)
}

/// Refuses a model that alone needs more than the budget: no unloading could make its room.
pub fn refuse_unless_alone_fits(
    name: &str,
    need: u64,
    budget: &Budget,
    parallel: usize,
) -> Result<()> {
    let Some(bytes) = budget.bytes else {
        return Ok(());
    };
    if need > bytes {
        let (limit, remedy) = if budget.asked {
            ("--memory-budget".to_string(), ", or raise --memory-budget")
        } else {
            (
                format!(
                    "the memory available, less {} kept free",
                    human_bytes(model::MEMORY_HEADROOM)
                ),
                "",
            )
        };
        bail!(
            "{name} needs about {} (its weights and {parallel} slots' full KV cache), more than \
             the {} it may have ({limit}): lower --parallel or --ctx-size{remedy}",
            human_bytes(need),
            human_bytes(bytes),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const GB: u64 = 1 << 30;

    fn occupant(bytes: u64, age_s: u64, idle: bool) -> Occupant {
        let now = Instant::now();
        Occupant {
            bytes,
            last_used: now.checked_sub(Duration::from_secs(age_s)).unwrap_or(now),
            idle,
        }
    }

    #[test]
    fn a_model_that_fits_unloads_nothing() {
        let budget = Budget::new(Some(4 * GB), None, 3);
        let loaded = [occupant(GB, 5, true)];
        assert_eq!(plan_room(&loaded, 2 * GB, &budget), Some(vec![]));
    }

    #[test]
    fn the_least_recently_used_idle_models_leave_first_and_only_as_many_as_needed() {
        let budget = Budget::new(Some(4 * GB), None, 8);
        // Oldest first would be 2 (busy), then 0, then 1.
        let loaded = [
            occupant(GB, 20, true),
            occupant(GB, 10, true),
            occupant(GB, 30, false),
        ];
        assert_eq!(plan_room(&loaded, 2 * GB, &budget), Some(vec![0]));
        assert_eq!(plan_room(&loaded, 3 * GB, &budget), Some(vec![0, 1]));
    }

    #[test]
    fn busy_models_holding_the_room_make_a_request_wait() {
        let budget = Budget::new(Some(2 * GB), None, 8);
        let loaded = [occupant(GB, 20, false), occupant(GB, 10, true)];
        assert_eq!(plan_room(&loaded, 2 * GB, &budget), None);
    }

    #[test]
    fn the_count_limit_unloads_even_when_memory_holds() {
        let budget = Budget::new(None, None, 2);
        let loaded = [occupant(GB, 1, true), occupant(GB, 9, true)];
        assert_eq!(plan_room(&loaded, GB, &budget), Some(vec![1]));
        let one = Budget::new(None, None, 1);
        assert_eq!(plan_room(&loaded, GB, &one), Some(vec![1, 0]));
    }

    #[test]
    fn the_budget_never_exceeds_what_the_machine_has_available() {
        let available = 8 * GB;
        let machine = available - model::MEMORY_HEADROOM;
        assert_eq!(Budget::new(None, Some(available), 2).bytes, Some(machine));
        assert_eq!(Budget::new(Some(GB), Some(available), 2).bytes, Some(GB));
        assert_eq!(
            Budget::new(Some(64 * GB), Some(available), 2).bytes,
            Some(machine)
        );
        assert_eq!(Budget::new(Some(GB), None, 2).bytes, Some(GB));
        assert_eq!(Budget::new(None, None, 0).models, 1);
    }

    #[test]
    fn a_model_too_big_alone_is_refused_naming_it_and_the_budget() {
        let budget = Budget::new(Some(GB), None, 2);
        let err = refuse_unless_alone_fits("gemma", 2 * GB, &budget, 4)
            .expect_err("too big")
            .to_string();
        assert!(
            err.starts_with("gemma needs about 2.1 GB (its weights and 4 slots' full KV cache)"),
            "{err}"
        );
        assert!(
            err.contains("more than the 1.1 GB it may have (--memory-budget)"),
            "{err}"
        );
        assert!(err.ends_with("or raise --memory-budget"), "{err}");
        let machine = Budget::new(None, Some(GB), 2);
        let err = refuse_unless_alone_fits("gemma", GB, &machine, 4)
            .expect_err("too big")
            .to_string();
        assert!(
            err.contains("(the memory available, less 536.9 MB kept free)"),
            "{err}"
        );
        assert!(err.ends_with("lower --parallel or --ctx-size"), "{err}");
        assert!(refuse_unless_alone_fits("gemma", GB, &budget, 4).is_ok());
        assert!(refuse_unless_alone_fits("x", u64::MAX, &Budget::new(None, None, 1), 1).is_ok());
    }
}
