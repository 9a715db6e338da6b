//! The option groups every job shares, as plain typed values: where
//! client and server run ([`PlacementOpts`], [`CpuList`]), socket options
//! ([`Sockets`]), size sweeps ([`Sizes`]) and what to do when a call
//! fails ([`OnError`]). All have a `Default` equal to the command line's
//! defaults, and a serde form a suite file or an agent's order carries.

use serde::{Deserialize, Serialize};

use crate::error::{check, JobError};

/// Where the client and an embedded server run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlacementOpts {
    /// How to place client and embedded server when no CPU list is given.
    pub pin: Pin,
    /// Pin the client to these CPUs; overrides `pin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<CpuList>,
    /// Pin the embedded server to these CPUs; overrides `pin`. With a
    /// target given, where that server runs: recorded, and what
    /// [`WaitStrategy::Auto`](crate::target::WaitStrategy::Auto) decides by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<CpuList>,
    /// Measure every case as N independent runs, interleaved across cases;
    /// `None`: [`default_runs`](crate::bench::session::default_runs) of the
    /// benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
}

impl PlacementOpts {
    /// Whether the job places client or server itself (a pin other than
    /// `auto`, or a CPU list).
    pub fn placed(&self) -> bool {
        self.pin != Pin::Auto || self.client_cpus.is_some() || self.server_cpus.is_some()
    }

    pub(crate) fn validate(&self) -> Result<(), JobError> {
        check(self.runs != Some(0), || "`runs` must be at least 1".into())
    }
}

/// Placement of client and embedded server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pin {
    /// When the run starts the server, client and server on two different
    /// CPUs where there are two, else both on one; a client facing a server
    /// it did not start is left where the kernel puts it.
    #[default]
    Auto,
    /// Wherever the kernel puts them.
    None,
    /// Both on the first available CPU.
    Same,
    /// Client on the first available CPU, server on the second.
    Cross,
}

/// A list of CPU numbers, sorted and without repeats. Written `0-1,3`
/// as taskset takes it; its serde form is that text or a list of numbers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// The CPUs `cpus` (sorted, repeats dropped); an error for none.
    pub fn new(mut cpus: Vec<usize>) -> Result<CpuList, JobError> {
        cpus.sort_unstable();
        cpus.dedup();
        check(!cpus.is_empty(), || "an empty CPU list".into())?;
        check(cpus.iter().all(|&c| c < 1024), || {
            format!("CPU list {cpus:?}: CPUs are numbered below 1024")
        })?;
        Ok(CpuList(cpus))
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl std::str::FromStr for CpuList {
    type Err = JobError;

    /// As taskset takes it: `0`, `0,1`, `0-3`, `0-1,4`.
    fn from_str(s: &str) -> Result<CpuList, JobError> {
        let bad = || JobError::new(format!("bad CPU list {s:?} (taskset syntax: 0-1,3)"));
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('-') {
                Some((a, b)) => {
                    let a: usize = a.trim().parse().map_err(|_| bad())?;
                    let b: usize = b.trim().parse().map_err(|_| bad())?;
                    if a > b || b >= 1024 {
                        return Err(JobError::new(format!("bad CPU range {part:?}")));
                    }
                    out.extend(a..=b);
                }
                None => out.push(part.parse().map_err(|_| bad())?),
            }
        }
        if out.is_empty() {
            return Err(JobError::new(format!("empty CPU list {s:?}")));
        }
        CpuList::new(out)
    }
}

impl std::fmt::Display for CpuList {
    /// Compact, as taskset takes it (`0-1,3`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_cpu_list(&self.0))
    }
}

impl Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CpuList, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<usize>),
            One(usize),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::List(v) => CpuList::new(v),
            Form::One(c) => CpuList::new(vec![c]),
            Form::Text(t) => t.parse(),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// Format a CPU list compactly for humans (`0-1,3`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Socket options, applied the same way to both ends we control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sockets {
    /// TCP_NODELAY (Nagle off) on every connection.
    pub nodelay: bool,
    /// SO_SNDBUF in bytes; kernel default when `None`.
    #[serde(
        with = "crate::units::opt_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF in bytes; kernel default when `None`.
    #[serde(
        with = "crate::units::opt_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub rcvbuf: Option<u64>,
}

impl Default for Sockets {
    fn default() -> Self {
        Sockets {
            nodelay: true,
            sndbuf: None,
            rcvbuf: None,
        }
    }
}

impl Sockets {
    /// SO_SNDBUF and SO_RCVBUF as GIOP client and server settings take
    /// them (u32, larger values clamped: the kernel caps them far lower).
    pub fn buffers_u32(&self) -> (Option<u32>, Option<u32>) {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        (self.sndbuf.map(clamp), self.rcvbuf.map(clamp))
    }

    pub(crate) fn validate(&self) -> Result<(), JobError> {
        check(self.sndbuf != Some(0) && self.rcvbuf != Some(0), || {
            "`sndbuf` and `rcvbuf` must be more than 0 bytes (leave them out for the kernel's default)".into()
        })
    }
}

/// A list of payload sizes (a sweep), in bytes. Its serde form is a list
/// of numbers; it is also read from sizes as users type them (`64KiB`)
/// or a sweep (`1KiB..128KiB`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sizes(#[serde(deserialize_with = "crate::units::read_sizes")] pub Vec<u64>);

impl std::str::FromStr for Sizes {
    type Err = crate::units::ParseError;

    /// A size, a comma list or a sweep (`1KiB..128KiB`), as
    /// [`parse_sizes`](crate::units::parse_sizes) reads them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::units::parse_sizes(s).map(Sizes)
    }
}

impl Sizes {
    pub(crate) fn validate(&self, field: &str) -> Result<(), JobError> {
        check(!self.0.is_empty(), || format!("`{field}` is empty"))
    }
}

/// What to do when a call fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// End the run at the first failed call (the default).
    #[default]
    Stop,
    /// Count the failure by kind and go on.
    Continue,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        let l: CpuList = "3,0-1".parse().unwrap();
        assert_eq!(l.cpus(), [0, 1, 3]);
        assert_eq!(l.to_string(), "0-1,3");
        assert_eq!(serde_json::to_string(&l).unwrap(), "\"0-1,3\"");
        assert_eq!(
            serde_json::from_str::<CpuList>("[1, 0, 1]").unwrap().cpus(),
            [0, 1]
        );
        assert_eq!(serde_json::from_str::<CpuList>("2").unwrap().cpus(), [2]);
        assert!("".parse::<CpuList>().is_err());
        assert!("2-1".parse::<CpuList>().is_err());
        assert!("x".parse::<CpuList>().is_err());
        assert!(serde_json::from_str::<CpuList>("[]").is_err());
    }

    #[test]
    fn sizes_read_as_numbers_sizes_or_a_sweep() {
        let s = |j: &str| serde_json::from_str::<Sizes>(j).map(|s| s.0);
        assert_eq!(s("[1024, \"64KiB\"]").unwrap(), [1024, 65536]);
        assert_eq!(s("\"1KiB..4KiB\"").unwrap(), [1024, 2048, 4096]);
        assert_eq!(s("16").unwrap(), [16]);
        assert!(s("[]").is_err());
        assert!(s("\"lots\"").is_err());
        assert_eq!(serde_json::to_string(&Sizes(vec![1, 2])).unwrap(), "[1,2]");
    }
}
