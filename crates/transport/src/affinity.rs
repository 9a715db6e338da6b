//! CPU placement of threads (what `taskset` does), shared by our server
//! and the client: placement moves loopback latency more than any ORB.

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> Vec<usize> {
    affinity_of(0)
}

/// The CPUs thread `tid` may run on (0: the calling thread; a process id
/// names the process's main thread); empty when it cannot be read.
pub fn affinity_of(tid: libc::pid_t) -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the cpu_set_t we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The kernel's CPU set of `cpus`, checked against its size.
pub fn cpu_set(cpus: &[usize]) -> std::io::Result<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("CPU {c} out of range"),
            ));
        }
        // SAFETY: c is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// Restrict the calling thread to `set`. Makes one system call and
/// allocates nothing, so it may run between fork and exec.
pub fn set_current_affinity(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: we pass a set we were given and its exact size.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Restrict the calling thread (and threads it creates afterwards) to
/// `cpus`, like `taskset`.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    set_current_affinity(&cpu_set(cpus)?)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot pin to CPUs {cpus:?}: {e}")))
}
