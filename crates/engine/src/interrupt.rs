//! Ctrl-C / SIGTERM as a flag that measurement loops poll, so an
//! interrupted run still writes what it measured and exits non-zero; and
//! [`wait`] and [`stopped`], which sleep until then without waking on a
//! timer: a thread or task that looked every 50 or 100 ms took the CPU of
//! the client or server being measured that often.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;
use std::time::Duration;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Told when a stop is requested: by [`request`], or by the thread that
/// [`install`] starts to [`wait`] for a signal (a signal handler may not
/// take the lock a `Notify` takes).
static STOPPED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// The two ends of the pipe a request writes a byte to, once
/// [`install`]ed (-1 before).
static WAKE_READ: AtomicI32 = AtomicI32::new(-1);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
    wake();
}

/// Write a byte to the wake pipe, if there is one. Async-signal-safe: one
/// `write` to a non-blocking pipe (a full pipe already wakes the reader).
fn wake() {
    let fd = WAKE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: writing one byte from a valid buffer to a descriptor
        // this module owns.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
}

/// Install the handler for SIGINT and SIGTERM (idempotent).
pub fn install() {
    static PIPE: Once = Once::new();
    PIPE.call_once(|| {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 fills the two descriptors it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
            WAKE_READ.store(fds[0], Ordering::SeqCst);
            WAKE_WRITE.store(fds[1], Ordering::SeqCst);
            // Asleep in poll until the first stop (started before any
            // thread is pinned: it may run anywhere, and runs once).
            let _ = std::thread::Builder::new()
                .name("iiopbench-intr".into())
                .spawn(|| {
                    wait();
                    STOPPED.notify_waiters();
                });
        }
    });
    // SAFETY: the handler only stores to an atomic and writes to a pipe,
    // both async-signal-safe.
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
    wake();
    STOPPED.notify_waiters();
}

/// Resolves once a stop is [`requested`], woken by the request itself
/// (never by a timer).
pub async fn stopped() {
    loop {
        let notified = STOPPED.notified();
        tokio::pin!(notified);
        // Registered before the flag is read: a request after the read
        // wakes it.
        notified.as_mut().enable();
        if requested() {
            return;
        }
        notified.await;
    }
}

/// Sleep until a stop is [`requested`]: in `poll` on the wake pipe, so
/// the thread wakes only then (without [`install`], it looks every 50 ms).
pub fn wait() {
    while !requested() {
        let fd = WAKE_READ.load(Ordering::SeqCst);
        if fd < 0 {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; no timeout. EINTR (a signal) only
        // loops back to the flag.
        unsafe { libc::poll(&mut p, 1, -1) };
    }
}
