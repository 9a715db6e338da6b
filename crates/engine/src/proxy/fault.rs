//! The faults a proxy injects, as typed values parsed from one line
//! (`--fault` of `iiopbench proxy`, `--via-proxy` of `iiopbench
//! interop`): `fragment=64,dribble=7,delay=5ms,reorder,strip-codesets,
//! close-after=10,message-error-after=10,duplicate=3,corrupt=5@17`, or
//! `none`. docs/proxy.md says what each one does on the wire; a bad spec
//! is refused with one line naming the item and what it must be.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

use crate::units::{parse_duration, parse_size};

/// Smallest `fragment=N`: a GIOP 1.2 Fragment header (16 bytes) and two
/// 8-byte units of data, as the codec's fragmenter requires.
pub const MIN_FRAGMENT: usize = 32;

/// How long `reorder` holds a reply for a later one to overtake it, when
/// no duration is given.
pub const DEFAULT_REORDER_HOLD: Duration = Duration::from_millis(20);

/// One message to corrupt: the `message`-th on each connection (both
/// directions counted from 1), its byte at `offset` from the start of its
/// GIOP header (of its first piece, counting every piece as sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Corrupt {
    pub message: u64,
    pub offset: usize,
}

/// Every fault a proxy can inject; the default injects none (the proxy
/// then only rewrites the object references it passes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Faults {
    /// Re-fragment GIOP 1.2 Requests, Replies, LocateRequests and
    /// LocateReplies longer than this many bytes into pieces of at most
    /// this many (rounded down to a multiple of 8).
    pub fragment: Option<usize>,
    /// Also fragment GIOP 1.1 Requests and Replies (1.1's rules: no
    /// request id in the Fragment header, one message at a time).
    pub fragment11: bool,
    /// Write at most this many bytes per write, each its own `write`.
    pub dribble: Option<usize>,
    /// Hold every Reply and LocateReply this long before passing it on.
    pub delay: Option<Duration>,
    /// Let a later reply overtake an earlier one on the same connection,
    /// holding a reply at most this long for one to come.
    pub reorder: Option<Duration>,
    /// Remove the CodeSets service context from every message.
    pub strip_codesets: bool,
    /// After this many messages on a connection, send the client a
    /// CloseConnection as soon as it is owed no reply, and close.
    pub close_after: Option<u64>,
    /// Answer the message after this many on a connection with a
    /// MessageError to its sender instead of passing it on, and close.
    pub message_error_after: Option<u64>,
    /// Pass the n-th message of each connection on twice.
    pub duplicate: Option<u64>,
    /// Flip every bit of one byte of one message.
    pub corrupt: Option<Corrupt>,
}

/// Why a fault spec was refused (the user's mistake), in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad fault spec `{spec}`: {reason}")]
pub struct FaultSpecError {
    /// The item refused (or the whole spec).
    pub spec: String,
    pub reason: String,
}

/// The names `FromStr` knows, in the order `Display` writes them.
pub const NAMES: [&str; 11] = [
    "fragment",
    "fragment11",
    "dribble",
    "delay",
    "reorder",
    "strip-codesets",
    "close-after",
    "message-error-after",
    "duplicate",
    "corrupt",
    "none",
];

impl Faults {
    /// Whether no fault is set.
    pub fn is_none(&self) -> bool {
        *self == Faults::default()
    }
}

fn bad(item: &str, reason: impl Into<String>) -> FaultSpecError {
    FaultSpecError {
        spec: item.to_string(),
        reason: reason.into(),
    }
}

/// A count of at least 1 (`what` names it in the error).
fn count(item: &str, v: &str, what: &str) -> Result<u64, FaultSpecError> {
    match v.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(bad(item, format!("{what} must be a whole number ≥ 1"))),
    }
}

fn size(item: &str, v: &str, min: usize, what: &str) -> Result<usize, FaultSpecError> {
    match parse_size(v) {
        Ok(n) if n as usize >= min && n <= u32::MAX as u64 => Ok(n as usize),
        _ => Err(bad(
            item,
            format!("{what} must be a size in bytes from {min} (e.g. 64 or 1KiB)"),
        )),
    }
}

fn duration(item: &str, v: &str) -> Result<Duration, FaultSpecError> {
    parse_duration(v).map_err(|_| bad(item, "expected a duration such as 5ms or 1s"))
}

impl FromStr for Faults {
    type Err = FaultSpecError;

    /// Comma-separated `name` or `name=value` items, each at most once;
    /// `none` alone for no fault.
    fn from_str(s: &str) -> Result<Faults, FaultSpecError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(bad(s, "empty (use `none` for no fault)"));
        }
        if s == "none" {
            return Ok(Faults::default());
        }
        let mut f = Faults::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in s.split(',').map(str::trim) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            if seen.contains(&name) {
                return Err(bad(item, format!("`{name}` given twice")));
            }
            let need =
                |what: &str| value.ok_or_else(|| bad(item, format!("`{name}=` needs {what}")));
            let flag = || match value {
                Some(_) => Err(bad(item, format!("`{name}` takes no value"))),
                None => Ok(()),
            };
            match name {
                "fragment" => f.fragment = Some(size(item, need("a size")?, MIN_FRAGMENT, "N")?),
                "fragment11" => {
                    flag()?;
                    f.fragment11 = true;
                }
                "dribble" => f.dribble = Some(size(item, need("a size")?, 1, "N")?),
                "delay" => f.delay = Some(duration(item, need("a duration")?)?),
                "reorder" => {
                    f.reorder = Some(match value {
                        Some(v) => duration(item, v)?,
                        None => DEFAULT_REORDER_HOLD,
                    })
                }
                "strip-codesets" => {
                    flag()?;
                    f.strip_codesets = true;
                }
                "close-after" => f.close_after = Some(count(item, need("a count")?, "N")?),
                "message-error-after" => {
                    f.message_error_after = Some(count(item, need("a count")?, "N")?)
                }
                "duplicate" => f.duplicate = Some(count(item, need("a message number")?, "N")?),
                "corrupt" => {
                    let v = need("N@OFFSET")?;
                    let (n, off) = v.split_once('@').ok_or_else(|| {
                        bad(item, "expected corrupt=N@OFFSET (message N, byte OFFSET)")
                    })?;
                    let message = count(item, n, "N")?;
                    let offset = off
                        .parse::<usize>()
                        .map_err(|_| bad(item, "OFFSET must be a byte offset ≥ 0"))?;
                    f.corrupt = Some(Corrupt { message, offset });
                }
                "none" => return Err(bad(item, "`none` stands alone")),
                _ => {
                    return Err(bad(
                        item,
                        format!("unknown fault `{name}` (known: {})", NAMES[..10].join(", ")),
                    ))
                }
            }
            seen.push(name);
        }
        if f.fragment11 && f.fragment.is_none() {
            return Err(bad(s, "`fragment11` needs `fragment=N`"));
        }
        Ok(f)
    }
}

/// `Duration` as the spec takes it back: whole milliseconds when it is
/// one, else microseconds.
fn ms(d: Duration) -> String {
    if d.as_micros().is_multiple_of(1000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

impl fmt::Display for Faults {
    /// The spec that parses back to this value (`none` for no fault).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v: Vec<String> = Vec::new();
        if let Some(n) = self.fragment {
            v.push(format!("fragment={n}"));
        }
        if self.fragment11 {
            v.push("fragment11".into());
        }
        if let Some(n) = self.dribble {
            v.push(format!("dribble={n}"));
        }
        if let Some(d) = self.delay {
            v.push(format!("delay={}", ms(d)));
        }
        if let Some(d) = self.reorder {
            v.push(format!("reorder={}", ms(d)));
        }
        if self.strip_codesets {
            v.push("strip-codesets".into());
        }
        if let Some(n) = self.close_after {
            v.push(format!("close-after={n}"));
        }
        if let Some(n) = self.message_error_after {
            v.push(format!("message-error-after={n}"));
        }
        if let Some(n) = self.duplicate {
            v.push(format!("duplicate={n}"));
        }
        if let Some(c) = self.corrupt {
            v.push(format!("corrupt={}@{}", c.message, c.offset));
        }
        if v.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&v.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_parses_and_prints_back() {
        let s = "fragment=64,fragment11,dribble=7,delay=5ms,reorder,strip-codesets,close-after=10,\
                 message-error-after=12,duplicate=3,corrupt=5@17";
        let f: Faults = s.parse().unwrap();
        assert_eq!(
            f,
            Faults {
                fragment: Some(64),
                fragment11: true,
                dribble: Some(7),
                delay: Some(Duration::from_millis(5)),
                reorder: Some(DEFAULT_REORDER_HOLD),
                strip_codesets: true,
                close_after: Some(10),
                message_error_after: Some(12),
                duplicate: Some(3),
                corrupt: Some(Corrupt {
                    message: 5,
                    offset: 17
                }),
            }
        );
        let back = f.to_string();
        assert_eq!(
            back,
            "fragment=64,fragment11,dribble=7,delay=5ms,reorder=20ms,strip-codesets,close-after=10,\
             message-error-after=12,duplicate=3,corrupt=5@17"
        );
        assert_eq!(back.parse::<Faults>().unwrap(), f);
        assert_eq!("none".parse::<Faults>().unwrap(), Faults::default());
        assert_eq!(Faults::default().to_string(), "none");
        assert_eq!(
            " fragment = 1KiB , reorder=250us "
                .parse::<Faults>()
                .unwrap(),
            Faults {
                fragment: Some(1024),
                reorder: Some(Duration::from_micros(250)),
                ..Faults::default()
            }
        );
    }

    #[test]
    fn bad_specs_are_refused_in_one_line() {
        let cases = [
            ("", "bad fault spec ``: empty (use `none` for no fault)"),
            ("fragment=16", "bad fault spec `fragment=16`: N must be a size in bytes from 32 (e.g. 64 or 1KiB)"),
            ("fragment", "bad fault spec `fragment`: `fragment=` needs a size"),
            ("dribble=0", "bad fault spec `dribble=0`: N must be a size in bytes from 1 (e.g. 64 or 1KiB)"),
            ("delay=soon", "bad fault spec `delay=soon`: expected a duration such as 5ms or 1s"),
            ("strip-codesets=1", "bad fault spec `strip-codesets=1`: `strip-codesets` takes no value"),
            ("close-after=0", "bad fault spec `close-after=0`: N must be a whole number ≥ 1"),
            ("corrupt=5", "bad fault spec `corrupt=5`: expected corrupt=N@OFFSET (message N, byte OFFSET)"),
            ("corrupt=5@x", "bad fault spec `corrupt=5@x`: OFFSET must be a byte offset ≥ 0"),
            ("dribble=7,dribble=8", "bad fault spec `dribble=8`: `dribble` given twice"),
            ("fragment11", "bad fault spec `fragment11`: `fragment11` needs `fragment=N`"),
            ("none,dribble=1", "bad fault spec `none`: `none` stands alone"),
            (
                "jitter=5ms",
                "bad fault spec `jitter=5ms`: unknown fault `jitter` (known: fragment, fragment11, dribble, \
                 delay, reorder, strip-codesets, close-after, message-error-after, duplicate, corrupt)",
            ),
        ];
        for (spec, want) in cases {
            let e = spec.parse::<Faults>().unwrap_err().to_string();
            assert_eq!(e, want, "{spec}");
            assert!(!e.contains('\n'));
        }
    }
}
