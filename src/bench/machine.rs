//! The machine a benchmark ran on: CPU model, cores, RAM and OS (Linux's /proc and
//! /etc/os-release; what cannot be read is "unknown").

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub logical_cores: usize,
    /// What this process may use (affinity, cgroup quota), when fewer than the logical cores.
    pub available_cores: usize,
    /// Distinct (package, core) pairs, when /proc/cpuinfo lists them.
    pub physical_cores: Option<usize>,
    pub ram_bytes: Option<u64>,
    pub os: String,
}

impl Machine {
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let logical = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::from_texts(&cpuinfo, &meminfo, &os_release, kernel.trim(), logical)
    }

    /// Parses the system's files (separate from reading them, for tests).
    pub fn from_texts(
        cpuinfo: &str,
        meminfo: &str,
        os_release: &str,
        kernel: &str,
        available: usize,
    ) -> Self {
        let field = |line: &str, name: &str| -> Option<String> {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        };
        let cpu = cpuinfo
            .lines()
            .find_map(|l| field(l, "model name").or_else(|| field(l, "Hardware")))
            .unwrap_or_else(|| "unknown".into());
        let processors = cpuinfo
            .lines()
            .filter(|l| field(l, "processor").is_some())
            .count();
        let mut cores = std::collections::HashSet::new();
        let mut package = String::new();
        for line in cpuinfo.lines() {
            if let Some(p) = field(line, "physical id") {
                package = p;
            } else if let Some(c) = field(line, "core id") {
                cores.insert((package.clone(), c));
            }
        }
        let ram_bytes = meminfo.lines().find_map(|l| {
            let kib = field(l, "MemTotal")?;
            kib.trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
                .map(|k| k * 1024)
        });
        let pretty = os_release.lines().find_map(|l| {
            let value = l.strip_prefix("PRETTY_NAME=")?;
            Some(value.trim().trim_matches('"').to_string())
        });
        let os = match (pretty, kernel.is_empty()) {
            (Some(name), false) => format!("{name}, Linux {kernel}"),
            (Some(name), true) => name,
            (None, false) => format!("Linux {kernel}"),
            (None, true) => std::env::consts::OS.to_string(),
        };
        Self {
            cpu,
            logical_cores: if processors > 0 {
                processors
            } else {
                available
            },
            available_cores: available,
            physical_cores: (!cores.is_empty()).then_some(cores.len()),
            ram_bytes,
            os,
        }
    }

    /// "4 logical (2 physical)", with ", 2 available" when the process may use fewer.
    pub fn cores(&self) -> String {
        let mut text = match self.physical_cores {
            Some(p) if p != self.logical_cores => {
                format!("{} logical ({p} physical)", self.logical_cores)
            }
            _ => format!("{}", self.logical_cores),
        };
        if self.available_cores < self.logical_cores {
            text.push_str(&format!(", {} available", self.available_cores));
        }
        text
    }

    pub fn ram(&self) -> String {
        self.ram_bytes
            .map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_else(|| "unknown".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO: &str =
        "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\nmodel name\t: AMD EPYC 7B13\n\n\
processor\t: 1\nphysical id\t: 0\ncore id\t\t: 0\nmodel name\t: AMD EPYC 7B13\n\n\
processor\t: 2\nphysical id\t: 0\ncore id\t\t: 1\nmodel name\t: AMD EPYC 7B13\n";

    #[test]
    fn cpu_cores_ram_and_os_are_read_from_the_system_files() {
        let m = Machine::from_texts(
            CPUINFO,
            "MemTotal:       24568764 kB\nMemFree: 1 kB\n",
            "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
            "6.1.0-18-amd64",
            3,
        );
        assert_eq!(m.cpu, "AMD EPYC 7B13");
        assert_eq!(m.logical_cores, 3);
        assert_eq!(m.physical_cores, Some(2));
        assert_eq!(m.cores(), "3 logical (2 physical)");
        let limited = Machine::from_texts(CPUINFO, "", "", "", 2);
        assert_eq!(limited.cores(), "3 logical (2 physical), 2 available");
        assert_eq!(m.ram_bytes, Some(24568764 * 1024));
        assert_eq!(m.ram(), "23.4 GiB");
        assert_eq!(m.os, "Debian GNU/Linux 12 (bookworm), Linux 6.1.0-18-amd64");
    }

    #[test]
    fn missing_files_give_unknowns_not_errors() {
        let m = Machine::from_texts("", "", "", "", 4);
        assert_eq!(m.cpu, "unknown");
        assert_eq!(m.logical_cores, 4);
        assert_eq!(m.ram(), "unknown");
    }

    #[test]
    fn this_machine_is_described() {
        let m = Machine::detect();
        assert!(m.logical_cores >= 1);
        assert!(!m.os.is_empty());
    }
}
