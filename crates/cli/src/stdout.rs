//! Standard output that a closed reader ends quietly: `iiopbench … | head
//! -1` must not panic (as `println!` does on a broken pipe) nor fail. Once
//! a write finds the pipe closed, later output is dropped and the command
//! goes on to its end (a server keeps serving, results files are still
//! written). Everything the CLI prints to stdout goes through [`out!`] /
//! [`outln!`] or [`Stdout`]; a test below keeps it so.
//!
//! [`out!`]: crate::out
//! [`outln!`]: crate::outln

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether standard output was found closed (or failed) once.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Write `args` to standard output and flush; a closed pipe is
/// remembered and ends the output silently, any other failure is said
/// once on stderr.
pub fn write(args: std::fmt::Arguments<'_>) {
    let _ = Stdout.write_fmt(args);
}

/// Standard output as a writer that never fails: see the module.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdout;

impl Stdout {
    fn outcome(r: io::Result<()>) {
        let Err(e) = r else { return };
        if !CLOSED.swap(true, Ordering::Relaxed) && e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("iiopbench: writing to standard output: {e}; the rest is not printed");
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !CLOSED.load(Ordering::Relaxed) {
            let mut o = io::stdout().lock();
            Self::outcome(o.write_all(buf).and_then(|()| o.flush()));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !CLOSED.load(Ordering::Relaxed) {
            Self::outcome(io::stdout().lock().flush());
        }
        Ok(())
    }
}

/// `print!` through [`write`]: quiet on a closed standard output.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!($($t)*))
    };
}

/// `println!` through [`write`]: quiet on a closed standard output.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdout::write(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($t)*)))
    };
}

#[cfg(test)]
mod tests {
    /// No stdout path but this module's: `print!`/`println!` and
    /// `io::stdout()` elsewhere would panic or fail on a closed pipe.
    #[test]
    fn the_cli_prints_only_through_this_module() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut stack = vec![root];
        let mut found = Vec::new();
        let mut files = 0;
        while let Some(p) = stack.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|x| x != "rs") || path.ends_with("stdout.rs") {
                    continue;
                }
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let code = line.trim_start();
                    if code.starts_with("//") {
                        continue;
                    }
                    let bad = ["println!", "print!", "io::stdout()"].iter().any(|m| {
                        code.match_indices(m).any(|(at, _)| {
                            // `eprintln!` / `eprint!` go to stderr.
                            !code[..at].ends_with('e') || m.starts_with("io")
                        })
                    });
                    if bad && !code.contains("is_terminal") {
                        found.push(format!("{}:{}: {code}", path.display(), i + 1));
                    }
                }
            }
        }
        assert!(files > 20, "read the sources ({files} files)");
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}
