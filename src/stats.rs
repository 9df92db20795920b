//! The one definition of a rate, seconds from durations, and process memory (current and peak
//! resident set, available memory) in bytes and human units.

use std::time::Duration;

/// `count / seconds`, 0 when nothing was timed.
pub fn rate(count: usize, seconds: f64) -> f64 {
    if seconds > 0.0 && count > 0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Tokens per second of steps that each produced one token and were timed one by one (a
/// decode run or a stretch of one): `rate(steps, their total time)`, the same figure as
/// [`Usage::decode_tok_s`] when the steps are a whole generation after its first token.
pub fn steps_tok_s(step_s: &[f64]) -> f64 {
    rate(step_s.len(), step_s.iter().sum())
}

/// Resident memory of this process now, in bytes (Linux; None elsewhere).
pub fn current_rss_bytes() -> Option<u64> {
    proc_status_kib("VmRSS:").map(|k| k * 1024)
}

/// The highest resident memory of this process so far, in bytes (Linux; None elsewhere).
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|k| k * 1024)
}

/// Lowers the peak (VmHWM) to the resident memory now, so the next [`peak_rss_bytes`] is the
/// peak of what follows. Linux only (writes `5` to `/proc/self/clear_refs`); false when it
/// could not be done, and the peak then stays the process's.
pub fn reset_peak_rss() -> bool {
    cfg!(target_os = "linux") && std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Memory the system can give a new allocation without swapping (`MemAvailable`, Linux; None
/// elsewhere).
pub fn available_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line["MemAvailable:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// `1.5 GB`-style sizes for people.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_zero_when_nothing_was_timed() {
        assert_eq!(rate(5, 0.0), 0.0);
        assert_eq!(rate(0, 1.0), 0.0);
    }

    #[test]
    fn peak_memory_is_readable_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().unwrap_or(0) > 0);
        }
    }

    #[test]
    fn the_peak_can_be_reset_on_linux() {
        if cfg!(target_os = "linux") && reset_peak_rss() {
            let (peak, now) = (peak_rss_bytes().unwrap(), current_rss_bytes().unwrap());
            // The peak restarts near the current size (other test threads may allocate).
            assert!(peak >= now / 2, "{peak} {now}");
        }
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(98_362_432), "98.4 MB");
    }
}
