//! Driving the real binary in tmux, as a person would: keys in, screen text out.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A tmux server of its own (unique socket), killed when dropped.
pub struct Tmux {
    socket: String,
    pub session: String,
}

impl Tmux {
    /// Starts `command` (run by sh) in a detached session of `width` x `height`.
    pub fn start(name: &str, command: &str, width: u16, height: u16) -> Self {
        let tmux = Self {
            socket: format!("taper-{name}-{}", std::process::id()),
            session: name.to_string(),
        };
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux must be installed (scripts/test installs it)")
    }

    /// Keys by tmux name (`Enter`, `C-p`, `Escape`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Text typed literally.
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", &self.session, "-l", text]);
    }

    /// Pastes `text` as a terminal paste (bracketed when the program asked for it).
    pub fn paste(&self, text: &str) {
        self.run(&["set-buffer", "-b", "e2e", text]);
        self.run(&["paste-buffer", "-p", "-b", "e2e", "-t", &self.session]);
    }

    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux format of the pane, e.g. `#{alternate_on}`.
    pub fn format(&self, format: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", &self.session, format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls the screen until `done` holds; panics with the last screen after `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn wait_text(&self, text: &str, timeout: Duration) -> String {
        self.wait_for(&format!("{text:?}"), timeout, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// After the program has exited: the exit `code`, a cooked terminal, no alternate screen, a
/// visible cursor and no mouse reporting. Returns the screen.
pub fn assert_terminal_restored(tmux: &Tmux, code: &str) -> String {
    let screen = tmux.wait_text("TTY ", Duration::from_secs(30));
    assert!(screen.contains(&format!("EXITED {code}")), "{screen}");
    let tty = screen.lines().find(|l| l.starts_with("TTY ")).unwrap_or("");
    assert!(
        tty.contains(" icanon") && tty.contains(" echo"),
        "raw mode left on: {tty}"
    );
    assert!(
        !tty.contains("-icanon") && !tty.contains("-echo"),
        "raw mode left on: {tty}"
    );
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "0",
        "still in the alternate screen"
    );
    assert_eq!(tmux.format("#{cursor_flag}"), "1", "the cursor is hidden");
    assert_eq!(
        tmux.format("#{mouse_any_flag}"),
        "0",
        "mouse reporting left on"
    );
    screen
}

/// A shell command line: the binary with `args` in `home`, then, after it exits, its exit
/// status and the terminal's line discipline (`icanon`/`echo`, or `-icanon`/`-echo` if raw
/// mode was left on), and a pause so the pane stays readable.
pub fn shell_command(home: &str, env: &str, args: &str) -> String {
    let bin = binary();
    format!(
        "TAPER_HOME='{home}' {env} '{bin}' {args}; {}; sleep 600",
        REPORT_EXIT_AND_TTY
    )
}

/// The shell line that prints the last exit status and the line discipline, for
/// [`assert_terminal_restored`]; typed on its own where the program runs from a prompt.
pub const REPORT_EXIT_AND_TTY: &str = "echo \"EXITED $?\"; \
     echo \"TTY $(stty -a | grep -ow -- '-\\?icanon\\|-\\?echo' | tr '\\n' ' ')\"";

/// The chat is waiting for a question: no answer is being written.
pub fn idle(screen: &str) -> bool {
    screen.contains("phase    idle") && !screen.contains("writing…")
}

/// The binary under test: this build's, or `TAPER_TEST_BIN` (e.g. a copy kept still while
/// a measurement runs).
pub fn binary() -> String {
    std::env::var("TAPER_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_taper").to_string())
}

/// The `value` after `label` on a stats panel row, e.g. `decode   54.1 tok/s` -> 54.1.
pub fn stat(screen: &str, label: &str) -> Option<f64> {
    screen.lines().find_map(|line| {
        let key = format!("│ {label} ");
        let at = line.find(&key)?;
        line[at + key.len()..]
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}
