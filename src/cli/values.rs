//! The flags' own value checks, so that a bad value is refused by the parser with what the
//! range is: the sampling settings with the ranges every front end shares
//! ([`crate::protocol::sampling`]), counts that must be at least one, and a thread count
//! bounded by what the machine can run.

use crate::protocol::sampling as ranges;

/// More compute threads than this is a typo, not a setting (a 1000-thread pool takes ten
/// seconds to start and then thrashes).
pub const MAX_THREADS: usize = 1024;

pub fn temperature(text: &str) -> Result<f32, String> {
    ranges::TEMPERATURE.parse(text)
}

pub fn top_p(text: &str) -> Result<f32, String> {
    ranges::TOP_P.parse(text)
}

pub fn min_p(text: &str) -> Result<f32, String> {
    ranges::MIN_P.parse(text)
}

pub fn repeat_penalty(text: &str) -> Result<f32, String> {
    ranges::REPEAT_PENALTY.parse(text)
}

/// A count of tokens: 1 or more.
pub fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be a whole number, 1 or more, not {text:?}")),
    }
}

/// Compute threads: 1 to [`MAX_THREADS`].
pub fn threads(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(format!(
            "must be a whole number from 1 to {MAX_THREADS} (this machine has {} logical \
             CPUs), not {text:?}",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_sampling_values_say_the_range() {
        for bad in ["nan", "inf", "-1", "1000", "hot"] {
            let e = temperature(bad).unwrap_err();
            assert!(e.contains("from 0 to 2"), "{bad}: {e}");
        }
        assert_eq!(temperature("0.2"), Ok(0.2));
        assert!(top_p("7").is_err() && top_p("-1").is_err());
        assert!(min_p("2").is_err() && min_p("-3").is_err());
        assert!(repeat_penalty("0").is_err() && repeat_penalty("-2").is_err());
        assert_eq!(repeat_penalty("1"), Ok(1.0));
    }

    #[test]
    fn counts_start_at_one() {
        assert!(at_least_one("0").is_err());
        assert_eq!(at_least_one("5"), Ok(5));
        assert!(threads("0").is_err() && threads("100000").is_err());
        assert_eq!(threads("2"), Ok(2));
    }
}
