//! Entering and leaving full-screen mode. The terminal is restored on every way out: the
//! guard's Drop (normal return, `?` errors), and a panic hook that restores it before the
//! panic message is printed (so the message is readable and the shell is usable). Also the
//! two ways of lending it out while the chat goes on: a suspend to the shell (Ctrl+Z) and
//! mouse capture turned off (Alt+M) so the terminal can select text.

use anyhow::{Context, Result};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, supports_keyboard_enhancement, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use std::fs::OpenOptions;
use std::io::{stdout, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, Once};
use std::thread::ThreadId;

/// True while the terminal is in full-screen mode; restoring twice is harmless.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether keyboard enhancement was pushed (and must be popped).
static ENHANCED: AtomicBool = AtomicBool::new(false);
/// Whether the mouse is captured while the screen is up (Alt+M turns it off).
static MOUSE: AtomicBool = AtomicBool::new(true);
/// The UI thread: only its panics end the TUI (the engine turns its own into events).
static UI_THREAD: Mutex<Option<ThreadId>> = Mutex::new(None);
static HOOK: Once = Once::new();
/// The terminal's stderr, duplicated while fd 2 points at the log file; -1 when not.
static SAVED_STDERR: AtomicI32 = AtomicI32::new(-1);

/// Full-screen mode for as long as it lives.
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Enters full-screen mode; stderr goes to `log` (appended) until it is left.
    pub fn enter(log: &Path) -> Result<Self> {
        install_panic_hook();
        if let Ok(mut ui) = UI_THREAD.lock() {
            *ui = Some(std::thread::current().id());
        }
        let guard = TerminalGuard(());
        take_screen()?;
        redirect_stderr(log);
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves full-screen mode if in it (restoring twice is harmless), and points stderr back at
/// the terminal.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        give_back();
    }
    restore_stderr();
}

/// Raw mode, the alternate screen, mouse capture (unless Alt+M turned it off), bracketed
/// paste, a hidden cursor and, where the terminal has it, the kitty keyboard protocol.
fn take_screen() -> Result<()> {
    enable_raw_mode().context("cannot put the terminal in raw mode")?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = stdout();
    // Mouse capture for the wheel; bracketed paste so a pasted newline is not Enter.
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        cursor::Hide
    )
    .context("cannot set up the terminal")?;
    if MOUSE.load(Ordering::SeqCst) {
        execute!(out, EnableMouseCapture).context("cannot set up the terminal")?;
    }
    // Terminals with the kitty keyboard protocol report Shift+Enter apart from Enter.
    if supports_keyboard_enhancement().unwrap_or(false)
        && execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .is_ok()
    {
        ENHANCED.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Undoes [`take_screen`]. Errors are ignored: this runs on the way out, where nothing
/// better can be done, and each step is tried regardless of the others.
fn give_back() {
    let mut out = stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Ctrl+Z: gives the terminal back as the shell had it and stops the process as job control
/// does (SIGTSTP, the signal the terminal itself would send in cooked mode). `fg` continues
/// it (SIGCONT) and the screen is taken again; the caller then draws it whole. The engine's
/// threads stop with the process and go on where they were. Where nothing can continue a
/// stopped job (no job control: the kernel drops the signal), it returns at once.
pub fn suspend() -> Result<()> {
    give_back();
    // SAFETY: raise only sends a signal to the calling thread; SIGTSTP has its default
    // action (taper installs no handler for it), which stops the whole process until
    // SIGCONT, and raise then returns.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    take_screen()
}

/// Alt+M: mouse reporting on (the wheel scrolls) or off (the terminal selects text). Also
/// remembered for when the screen is taken again after a suspend.
pub fn set_mouse_capture(on: bool) -> std::io::Result<()> {
    MOUSE.store(on, Ordering::SeqCst);
    if on {
        execute!(stdout(), EnableMouseCapture)
    } else {
        execute!(stdout(), DisableMouseCapture)
    }
}

/// The OSC 52 escape that asks the terminal to put `text` on the system clipboard. It goes
/// through the terminal itself, so it works over SSH (and in tmux with `set-clipboard on`).
pub fn osc52(text: &str) -> String {
    use base64::Engine;
    format!(
        "\x1b]52;c;{}\x07",
        base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
    )
}

/// Writes the clipboard escape to the terminal's writer (the one ratatui draws with, so it
/// lands between frames, never inside one). It moves no cursor and draws nothing.
pub fn copy_to_clipboard(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(osc52(text).as_bytes())?;
    out.flush()
}

/// Points fd 2 at `log`. Best effort: if the log cannot be opened, stderr stays as it is.
fn redirect_stderr(log: &Path) {
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(file) = OpenOptions::new().create(true).append(true).open(log) else {
        return;
    };
    // SAFETY: plain fd calls on fds we own (2, the dup of it, and the open log file); the
    // log's fd is duplicated onto 2 before `file` closes its own.
    unsafe {
        let saved = libc::dup(2);
        if saved < 0 {
            return;
        }
        if libc::dup2(file.as_raw_fd(), 2) < 0 {
            libc::close(saved);
            return;
        }
        SAVED_STDERR.store(saved, Ordering::SeqCst);
    }
}

fn restore_stderr() {
    let saved = SAVED_STDERR.swap(-1, Ordering::SeqCst);
    if saved >= 0 {
        // SAFETY: `saved` is the dup made by `redirect_stderr`, used once and closed here.
        unsafe {
            libc::dup2(saved, 2);
            libc::close(saved);
        }
    }
}

fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_ui_thread = UI_THREAD
                .lock()
                .map(|t| *t == Some(std::thread::current().id()))
                .unwrap_or(true);
            if !ACTIVE.load(Ordering::SeqCst) {
                previous(info);
            } else if on_ui_thread {
                restore();
                previous(info);
            }
            // Other threads' panics while the screen is up are not printed over it: the
            // engine catches its own and reports them as a failed load or answer.
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clipboard_escape_is_osc_52_with_base64() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
        let mut out = Vec::new();
        copy_to_clipboard(&mut out, "fn main() {}\n").unwrap();
        assert_eq!(out, b"\x1b]52;c;Zm4gbWFpbigpIHt9Cg==\x07");
    }
}
