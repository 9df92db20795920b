//! What `taper ask` takes in: text piped in beside a PROMPT is part of the prompt (`-` alone
//! still reads stdin), and a flag out of its range is refused with the range, before any model
//! is loaded.

use crate::common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `taper ask --stats -n 1 ARGS` on SmolLM2 with `stdin` piped in (None: no stdin at all).
fn ask(args: &[&str], stdin: Option<&str>) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_HOME", home.path())
        .args(["ask", "--stats", "-n", "1", "--temperature", "0", "-m"])
        .arg(common::real_model(common::SMOLLM2))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// The prompt's token count from `--stats`.
fn prompt_tokens(out: &Output) -> usize {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("prompt ")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn piped_text_beside_a_prompt_is_part_of_it() {
    let notes = "The meeting moved to Thursday at ten. Bring the budget figures.\n".repeat(30);
    let alone = prompt_tokens(&ask(&["Summarize."], None));
    let with_notes = prompt_tokens(&ask(&["Summarize."], Some(&notes)));
    let notes_only = prompt_tokens(&ask(&["-"], Some(&notes)));
    assert!(with_notes > alone + 300, "{alone} → {with_notes}");
    assert!(notes_only > 300 && notes_only < with_notes, "{notes_only}");
    // An answer cut at -n says so on stderr, with the flag that raises it.
    let cut = ask(&["Write a long story."], None);
    let stderr = String::from_utf8_lossy(&cut.stderr);
    assert!(
        stderr.contains("the answer was cut at the limit of 1 token")
            && stderr.contains("-n raises"),
        "{stderr}"
    );
    // An empty pipe leaves the prompt as it was.
    assert_eq!(prompt_tokens(&ask(&["Summarize."], Some(""))), alone);
}

#[test]
fn flags_out_of_range_are_refused_with_the_range() {
    let cases: &[(&[&str], &str)] = &[
        (&["--temperature", "-1"], "from 0 to 2"),
        (&["--temperature=-1"], "from 0 to 2"),
        (&["--temperature", "nan"], "from 0 to 2"),
        (&["--temperature", "inf"], "from 0 to 2"),
        (&["--temperature", "1000"], "from 0 to 2"),
        (&["--top-p", "7"], "from 0 to 1"),
        (&["--top-p", "-1"], "from 0 to 1"),
        (&["--min-p", "2"], "from 0 to 1"),
        (&["--min-p", "-3"], "from 0 to 1"),
        (&["--repeat-penalty", "0"], "from 0.1 to 10"),
        (&["--repeat-penalty", "-2"], "from 0.1 to 10"),
        (&["-n", "0"], "1 or more"),
        (&["--ctx-size", "0"], "1 or more"),
        (&["--threads", "100000"], "from 1 to 1024"),
    ];
    for (flags, range) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_taper"))
            .args(["ask", "-m"])
            .arg(common::real_model(common::SMOLLM2))
            .args(*flags)
            .arg("Hi")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(range), "{flags:?}: {stderr}");
        assert!(
            !stderr.contains("unexpected argument"),
            "{flags:?}: {stderr}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_KERNELS", "avx9000")
        .args(["ask", "-m", "none.gguf", "Hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("scalar, avx2, avx-vnni, candle, exact"),
        "{stderr}"
    );
}

#[test]
fn a_reader_that_goes_away_ends_ask_quietly() {
    use std::io::Read;
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_HOME", home.path())
        .args(["ask", "-n", "400", "--temperature", "0", "-m"])
        .arg(common::real_model(common::SMOLLM2))
        .arg("Write a long story about a dragon.")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As `| head -c 16`: read a little, then close the pipe.
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.trim().is_empty(), "{stderr}");
}
