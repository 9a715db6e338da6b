//! What every interop check reports, its [`Verdict`] and [`Check`], and
//! the helpers that word a check's detail the same way everywhere (the
//! suite, the value checks): bytes as hex, a call error in one line, the
//! padding rule.

use std::fmt::Write as _;

use iiop_bench_idl::client::BenchError;
use iiop_giop::exception::SystemException;
use iiop_transport::client::ClientError;
use serde::Serialize;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Note,
    /// Not run, for the reason in the detail (a capability the server does
    /// not advertise, or a combination the spec forbids): counted apart,
    /// never as a pass.
    Skip,
}

impl Verdict {
    /// `pass`, `FAIL`, `note`, `skip`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Note => "note",
            Verdict::Skip => "skip",
        }
    }
}

/// One reported check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub verdict: Verdict,
    pub detail: String,
    /// Element type token, when the check is about one.
    #[serde(rename = "type")]
    pub ty: String,
    /// Largest payload in bytes (bench.idl counting), 0 when meaningless.
    pub size: u64,
    /// `echo`, `oneway`, `twoway`, `locate`, `ior`, …
    pub mode: String,
    /// GIOP version used, e.g. `1.2`.
    pub giop: String,
    /// `big` / `little` for checks that fix the byte order.
    pub order: String,
    pub calls: u64,
    pub seconds: f64,
}

impl Check {
    pub(crate) fn new(name: impl Into<String>, mode: &str) -> Check {
        Check {
            name: name.into(),
            verdict: Verdict::Pass,
            detail: String::new(),
            ty: String::new(),
            size: 0,
            mode: mode.into(),
            giop: String::new(),
            order: String::new(),
            calls: 0,
            seconds: 0.0,
        }
    }

    pub(crate) fn set(mut self, v: Verdict, detail: impl Into<String>) -> Check {
        self.verdict = v;
        self.detail = detail.into();
        self
    }
}

/// Hex of at most `max` bytes, with the total length when cut.
pub fn hex(bytes: &[u8], max: usize) -> String {
    let mut s = String::new();
    for (i, b) in bytes.iter().take(max).enumerate() {
        if i > 0 && i % 4 == 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    if bytes.len() > max {
        let _ = write!(s, " … ({} bytes)", bytes.len());
    }
    s
}

/// A call error in one line, naming the exception, minor code and vendor.
pub fn describe(e: &BenchError) -> String {
    match e {
        BenchError::Call(ClientError::System(x)) => system_text(x),
        other => other.to_string(),
    }
}

/// What may follow the last argument of a request or the result of a
/// reply ([`Reader::only_padding_left`]), in the words checks use: the one
/// rule we hold both directions to.
pub const PADDING_RULE: &str = "after the last argument or result only alignment padding may \
     follow: fewer than 8 bytes ending 8-aligned";

/// A system exception in one line: name, minor code and its vendor,
/// completion status.
pub(crate) fn system_text(x: &SystemException) -> String {
    format!(
        "{} minor 0x{:08x} ({:?}) completed {}",
        x.name(),
        x.minor,
        x.vendor(),
        x.completed
    )
}
