//! Shared by the omniORB end-to-end tests: finding omniORB's programs and
//! what a test does when one is missing.

/// True when `prog` is a file in one of PATH's directories.
pub fn installed(prog: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}

/// A prerequisite of `test` is missing. Under `CI=true` (or `1`) that is a
/// failure; elsewhere prints `SKIP <test>: <reason>` and appends that line
/// to the file named by `IIOPBENCH_SKIP_LOG` when set (scripts/test lists
/// them).
pub fn skip_or_fail(test: &str, reason: &str) {
    if matches!(std::env::var("CI").as_deref(), Ok("true" | "1")) {
        panic!("CI is set but {reason}");
    }
    let line = format!("SKIP {test}: {reason}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("IIOPBENCH_SKIP_LOG") {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        let _ = file.and_then(|mut f| writeln!(f, "{line}"));
    }
}
