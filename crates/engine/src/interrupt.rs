//! Ctrl-C / SIGTERM as a flag that measurement loops poll, so an
//! interrupted run still writes what it measured and exits non-zero.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Install the handler for SIGINT and SIGTERM (idempotent).
pub fn install() {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Whether the user asked us to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Ask every loop to stop (used by tests and by fatal errors).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}
