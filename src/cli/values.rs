//! The flags' own value checks, so that a bad value is refused by the parser with what the
//! range is: the sampling settings with the ranges every front end shares
//! ([`crate::protocol::sampling`]), counts that must be at least one, a thread count bounded
//! by what the machine can run, and sizes of memory.

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

/// A size of memory: bytes, or a number with a unit: K, M, G, T (and KB, MB, ...: powers of
/// 1000, as taper prints sizes) or KiB, MiB, GiB, TiB (powers of 1024); `1.5GB`, `800 MiB`.
pub fn memory_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "must be a size such as 800MB, 4GB or 2GiB (a number and K, M, G or T, with B or \
             iB), not {text:?}"
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim().to_ascii_uppercase();
    let (prefix, binary) = match unit.strip_suffix("IB") {
        Some(prefix) => (prefix, true),
        None => (unit.strip_suffix('B').unwrap_or(&unit), false),
    };
    let power = match prefix {
        "" if !binary => 0,
        "K" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        _ => return Err(bad()),
    };
    let base: f64 = if binary { 1024.0 } else { 1000.0 };
    let bytes = number * base.powi(power);
    if !bytes.is_finite() || bytes < 1.0 || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_decimal_and_binary_units() {
        assert_eq!(memory_size("4096"), Ok(4096));
        assert_eq!(memory_size("800MB"), Ok(800_000_000));
        assert_eq!(memory_size("1.5 G"), Ok(1_500_000_000));
        assert_eq!(memory_size("2GiB"), Ok(2 << 30));
        assert_eq!(memory_size("512mib"), Ok(512 << 20));
        for bad in [
            "",
            "GB",
            "-1GB",
            "4 parsecs",
            "0",
            "1e30TB",
            "1.2.3G",
            "5iB",
        ] {
            let e = memory_size(bad).expect_err(bad);
            assert!(e.contains("such as 800MB"), "{bad}: {e}");
        }
    }

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
