//! Cleanup on Ctrl-C and termination signals. [`install_cleanup_handler`]
//! makes SIGINT, SIGTERM and SIGHUP remove every namespace this process
//! created (and the processes inside them) before the process dies of the
//! signal as it would have without the handler.
//!
//! The handler itself only writes the signal number into a pipe (the one
//! thing a signal handler may safely do here); a watcher thread reads it,
//! runs the cleanup, restores the default action and re-raises the signal.
//! SIGKILL cannot be caught: after one, the namespaces stay behind and
//! [`crate::cleanup_leftovers`] (`iiopbench lab clean`) removes them — it
//! recognises them by the dead owner pid in their names.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use crate::error::{LabError, Result};
use crate::netns;

static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; one byte from the stack.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

fn watcher(read_fd: libc::c_int) {
    let mut b = 0u8;
    loop {
        // SAFETY: reading one byte into a stack variable.
        let n = unsafe { libc::read(read_fd, (&mut b as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n == 0 {
            return;
        }
    }
    remove_all_labs();
    let sig = libc::c_int::from(b);
    // SAFETY: restoring the default action and re-raising the signal.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Removes every namespace this process created and has not deleted yet
/// (with the processes inside). For programs with their own signal
/// handling (e.g. tokio's `ctrl_c`): call it before exiting. Labs still
/// alive in this process stop working; dropping them afterwards is safe.
pub fn remove_all_labs() {
    for name in netns::live() {
        let _ = netns::destroy(&name);
    }
}

/// Installs the handlers once per process (later calls return the first
/// call's outcome). Call it before creating a lab in a program that a user
/// may interrupt; tests do not need it (Drop runs on panic). It replaces
/// earlier handlers of these signals; a program that installs its own
/// later (tokio's `signal::ctrl_c`) should call [`remove_all_labs`] there.
pub fn install_cleanup_handler() -> Result<()> {
    INSTALLED
        .get_or_init(|| {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: pipe2 fills two descriptors.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(format!("pipe2: {}", std::io::Error::last_os_error()));
            }
            PIPE_WRITE.store(fds[1], Ordering::Relaxed);
            let read_fd = fds[0];
            std::thread::Builder::new()
                .name("lab-signal-cleanup".into())
                .spawn(move || watcher(read_fd))
                .map_err(|e| format!("spawning watcher: {e}"))?;
            for sig in SIGNALS {
                // SAFETY: installing a handler that only calls write(2).
                let prev = unsafe {
                    libc::signal(
                        sig,
                        on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
                    )
                };
                if prev == libc::SIG_ERR {
                    return Err(format!(
                        "signal({sig}): {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            Ok(())
        })
        .clone()
        .map_err(|e| LabError::io("installing lab cleanup handler", std::io::Error::other(e)))
}
