//! The terminal while the interface runs: raw mode (keys one by one, no echo, Ctrl+C as a key),
//! bracketed paste (a paste arrives as one piece), the hidden cursor and the keyboard protocol
//! that tells Shift+Enter from Enter where the terminal has it. The state is always given
//! back: by the guard when it is dropped, by a panic hook before a panic's message, and by the
//! interface when SIGTERM, SIGHUP or SIGINT arrive (see `mod.rs`).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::Duration;

use crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal;
use tokio::sync::mpsc;

/// Whether the terminal is in the interface's state (raw mode and the rest).
static RAW: AtomicBool = AtomicBool::new(false);
/// Whether the key reader should read (only while the interface owns the terminal).
static READING: AtomicBool = AtomicBool::new(false);
/// The key reader's channel: one thread for the whole process.
static KEYS: Mutex<Option<mpsc::UnboundedSender<Event>>> = Mutex::new(None);

/// The terminal in the interface's state until dropped.
pub(crate) struct Guard(());

impl Guard {
    /// Puts the terminal in the interface's state and starts reading keys.
    pub(crate) fn enter() -> std::io::Result<(Guard, mpsc::UnboundedReceiver<Event>)> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        RAW.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        let _ = crossterm::execute!(
            out,
            EnableBracketedPaste,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
            crossterm::cursor::Hide
        );
        let keys = start_reading();
        Ok((Guard(()), keys))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        READING.store(false, Ordering::SeqCst);
        restore();
    }
}

/// Gives the terminal back as it was: cooked mode, no bracketed paste, the keyboard protocol
/// popped, the cursor shown. Safe to call more than once and from a panic hook.
pub(crate) fn restore() {
    if !RAW.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        DisableBracketedPaste,
        PopKeyboardEnhancementFlags,
        crossterm::cursor::Show
    );
    let _ = out.write_all(b"\x1b[0m\r\n");
    let _ = out.flush();
    let _ = terminal::disable_raw_mode();
}

/// A panic restores the terminal before its message is printed (so it is readable and the
/// shell works afterwards).
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            READING.store(false, Ordering::SeqCst);
            restore();
            previous(info);
        }));
    });
}

/// The key events, from one reader thread that reads only while the interface owns the
/// terminal (it polls, so it never holds input that a line prompt reads in between).
fn start_reading() -> mpsc::UnboundedReceiver<Event> {
    let (sender, receiver) = mpsc::unbounded_channel();
    let mut slot = KEYS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let first = slot.is_none();
    *slot = Some(sender);
    drop(slot);
    READING.store(true, Ordering::SeqCst);
    if first {
        std::thread::Builder::new()
            .name("pi-keys".into())
            .spawn(|| {
                loop {
                    if !READING.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    match event::poll(Duration::from_millis(50)) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(_) => {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                    }
                    let Ok(event) = event::read() else { continue };
                    let sender = KEYS
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone();
                    if let Some(sender) = sender {
                        let _ = sender.send(event);
                    }
                }
            })
            .ok();
    }
    receiver
}

/// The terminal's size (80 x 24 when it cannot be read).
pub(crate) fn size() -> (usize, usize) {
    terminal::size()
        .map(|(w, h)| (usize::from(w.max(1)), usize::from(h.max(1))))
        .unwrap_or((80, 24))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while the interface owns the terminal gives it back before the panic goes on.
    #[test]
    fn a_panic_restores_the_terminal() {
        install_panic_hook();
        RAW.store(true, Ordering::SeqCst);
        READING.store(true, Ordering::SeqCst);
        let caught = std::panic::catch_unwind(|| panic!("boom"));
        assert!(caught.is_err());
        assert!(!RAW.load(Ordering::SeqCst), "the hook did not restore");
        assert!(
            !READING.load(Ordering::SeqCst),
            "the key reader still reads"
        );
    }
}
