//! Panics while fuzzing: a quiet hook for the fuzzing thread (thousands of expected messages
//! would bury the log; other threads keep the previous hook) that keeps the panic's place and
//! backtrace instead, installed while at least one run is going and restored after the last;
//! and the message of a caught panic with its place.

use std::cell::{Cell, RefCell};
use std::panic::PanicHookInfo;
use std::sync::{Arc, Mutex};

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

thread_local! {
    /// Set on the thread that runs inputs.
    static FUZZING: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic of this thread happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The backtrace of the last panic of this thread.
    static BACKTRACE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs that hold the quiet hook, and the hook it replaced.
static HOLDERS: Mutex<(usize, Option<Arc<Hook>>)> = Mutex::new((0, None));

/// Keeps the quiet hook installed while alive; marks the current thread as the fuzzing one.
pub struct QuietPanics(());

impl QuietPanics {
    /// Installs the hook (if no run holds it yet) and marks this thread.
    pub fn install() -> Self {
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        if holders.0 == 0 {
            let previous: Arc<Hook> = Arc::new(std::panic::take_hook());
            holders.1 = Some(previous.clone());
            std::panic::set_hook(Box::new(move |info| {
                if FUZZING.with(Cell::get) {
                    let place = info
                        .location()
                        .map(|l| format!("{}:{}", l.file(), l.line()));
                    LOCATION.with(|l| *l.borrow_mut() = place);
                    let trace = std::backtrace::Backtrace::force_capture().to_string();
                    BACKTRACE.with(|b| *b.borrow_mut() = Some(trace));
                } else {
                    previous(info);
                }
            }));
        }
        holders.0 += 1;
        FUZZING.with(|f| f.set(true));
        QuietPanics(())
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        FUZZING.with(|f| f.set(false));
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        holders.0 -= 1;
        if holders.0 == 0 {
            if let Some(previous) = holders.1.take() {
                let _quiet = std::panic::take_hook();
                std::panic::set_hook(Box::new(move |info| previous(info)));
            }
        }
    }
}

/// "message at file:line" of a panic caught on this thread, from its payload.
pub fn describe(payload: &(dyn std::any::Any + Send)) -> String {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic with a payload that is not a string)".to_string()
    };
    match LOCATION.with(|l| l.borrow_mut().take()) {
        Some(place) => format!("{message} at {place}"),
        None => message,
    }
}

/// The backtrace of the last panic caught on this thread (once).
pub fn take_backtrace() -> Option<String> {
    BACKTRACE.with(|b| b.borrow_mut().take())
}
