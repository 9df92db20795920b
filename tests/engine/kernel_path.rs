//! The kernel path is named wherever speed is shown: `taper ask --stats` says which path ran,
//! the default is the best this CPU has, and `TAPER_KERNELS` forces the one it names.

use crate::common;

use std::process::Command;

/// The best path this CPU has, as taper names it.
fn best() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        let has = |f: &str| match f {
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
            "avx512vl" => std::arch::is_x86_feature_detected!("avx512vl"),
            "avx512vnni" => std::arch::is_x86_feature_detected!("avx512vnni"),
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "avxvnni" => std::arch::is_x86_feature_detected!("avxvnni"),
            _ => std::arch::is_x86_feature_detected!("f16c"),
        };
        let avx2 = ["avx2", "fma", "f16c"].iter().all(|f| has(f));
        if avx2
            && ["avx512f", "avx512bw", "avx512vl", "avx512vnni"]
                .iter()
                .all(|f| has(f))
        {
            return "avx512-vnni";
        }
        if avx2 {
            return if has("avxvnni") { "avx-vnni" } else { "avx2" };
        }
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("dotprod") {
        let i8mm = std::arch::is_aarch64_feature_detected!("i8mm");
        return if i8mm { "neon-i8mm" } else { "neon-dotprod" };
    }
    // Plain NEON is part of every aarch64 CPU.
    if cfg!(target_arch = "aarch64") {
        "neon"
    } else {
        "scalar"
    }
}

/// The kernel path `taper ask --stats` reports with `TAPER_KERNELS` set to `forced`.
fn reported(forced: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taper"));
    cmd.args(["ask", "--stats", "--temperature", "0", "-n", "2", "-m"])
        .arg(common::real_model(common::SMOLLM2))
        .arg("Hi");
    match forced {
        Some(path) => cmd.env("TAPER_KERNELS", path),
        None => cmd.env_remove("TAPER_KERNELS"),
    };
    let out = cmd.output().expect("run taper");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("| kernels "));
    let line = line.unwrap_or_else(|| panic!("no kernel path in {stderr}"));
    line.rsplit("| kernels ")
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

#[test]
fn ask_names_the_kernel_path_and_a_forced_one_is_the_one_that_runs() {
    assert_eq!(reported(None), best());
    assert_eq!(reported(Some("scalar")), "scalar");
    assert_eq!(reported(Some("exact")), "exact");
    // The AVX2 cap: AVX2 where there is more or as much, scalar below; on ARM (nothing to
    // leave out) the best path.
    let avx2 = match best() {
        "scalar" => "scalar",
        arm if arm.starts_with("neon") => arm,
        _ => "avx2",
    };
    assert_eq!(reported(Some("avx2")), avx2);
    // The AVX-VNNI cap: no AVX-512, AVX-VNNI where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    let avx_vnni = if avx2 == "avx2" && std::arch::is_x86_feature_detected!("avxvnni") {
        "avx-vnni"
    } else {
        avx2
    };
    #[cfg(not(target_arch = "x86_64"))]
    let avx_vnni = avx2;
    assert_eq!(reported(Some("avx-vnni")), avx_vnni);
}
