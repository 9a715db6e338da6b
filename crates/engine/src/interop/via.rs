//! The suite and the matrix through a fault-injecting proxy
//! (`iiopbench interop --via-proxy SPEC`): a [`Proxy`] in this process in
//! front of the server, and the client given the proxy's reference
//! instead of the server's. In the matrix each cell gets a proxy of its
//! own, so each cell's recording holds that cell's traffic alone.

use std::path::{Path, PathBuf};

use iiop_giop::Ior;

use super::report::Cell;
use super::suite::{self, Check, Verdict};
use crate::proxy::{Faults, Proxy, ProxyConfig, RelayStats};

/// A proxy in front of `ior` injecting `faults`, recording to `record`.
pub fn front(ior: &Ior, faults: &Faults, record: Option<PathBuf>) -> crate::error::Result<Proxy> {
    let mut cfg = ProxyConfig::new(ior.clone(), faults.clone());
    cfg.record = record;
    Proxy::start(cfg).map_err(|e| crate::error::Error::local(format!("starting the proxy: {e}")))
}

/// How a failed check's detail names the faults it ran under: the detail,
/// then ` [through a proxy injecting SPEC: what the faults did]`.
pub const FAULT_MARK: &str = " [through a proxy injecting ";

/// The faults `f` and what they did (`st`), as [`FAULT_MARK`] appends them.
pub fn fault_note(f: &Faults, st: &RelayStats) -> String {
    format!("{FAULT_MARK}{f}: {}]", st.faults_acted())
}

/// Name the faults in every failed check of a run through a proxy that
/// injected some (a pure relay names none): whoever reads a failure sees
/// what the proxy did to that run.
pub fn name_faults(checks: &mut [Check], f: &Faults, st: &RelayStats) {
    if f.is_none() {
        return;
    }
    let note = fault_note(f, st);
    for c in checks.iter_mut().filter(|c| c.verdict == Verdict::Fail) {
        c.detail.push_str(&note);
    }
}

/// The faults a detail names (`SPEC: what they did`), when it names any.
pub fn faults_named(detail: &str) -> Option<&str> {
    let at = detail.rfind(FAULT_MARK)?;
    detail[at + FAULT_MARK.len()..].strip_suffix(']')
}

/// A file name for a cell's recording: `client-x-server.pcapng`, with
/// anything but letters, digits, `.`, `_` and `-` replaced by `_`.
pub fn recording_name(client: &str, server: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}-x-{}.pcapng", clean(client), clean(server))
}

/// What a matrix cell's client is given: the server's IOR file, or the
/// IOR file of a proxy in front of it.
#[derive(Debug)]
pub enum CellTarget {
    Direct(PathBuf),
    Proxied {
        proxy: Box<Proxy>,
        faults: Faults,
        file: PathBuf,
        recording: Option<PathBuf>,
    },
}

impl CellTarget {
    /// For `client` × `server` (whose IOR is in `ior_file`): a proxy with
    /// `faults` when given, its IOR written in `dir`, recording into
    /// `record_dir` when given.
    pub fn start(
        faults: Option<&Faults>,
        record_dir: Option<&Path>,
        ior_file: &Path,
        client: &str,
        server: &str,
        dir: &Path,
    ) -> crate::error::Result<CellTarget> {
        let Some(faults) = faults else {
            return Ok(CellTarget::Direct(ior_file.to_path_buf()));
        };
        let ior = suite::load_target(&ior_file.display().to_string())?;
        let recording = match record_dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                Some(d.join(recording_name(client, server)))
            }
            None => None,
        };
        let proxy = front(&ior, faults, recording.clone())?;
        let file = dir.join(format!(
            "via-{}",
            recording_name(client, server).replace(".pcapng", ".ior")
        ));
        crate::results::write_atomic(&file, &format!("{}\n", proxy.ior()))?;
        Ok(CellTarget::Proxied {
            proxy: Box::new(proxy),
            faults: faults.clone(),
            file,
            recording,
        })
    }

    /// The IOR file the client is given.
    pub fn ior_file(&self) -> &Path {
        match self {
            CellTarget::Direct(f) => f,
            CellTarget::Proxied { file, .. } => file,
        }
    }

    /// The cell ran: stop the proxy, name its faults in the cell's
    /// failures, note where its bytes are; the proxy's counts.
    pub fn finish(self, cell: &mut Cell) -> crate::error::Result<Option<RelayStats>> {
        match self {
            CellTarget::Direct(_) => Ok(None),
            CellTarget::Proxied {
                proxy,
                faults,
                file,
                recording,
            } => {
                let _ = std::fs::remove_file(&file);
                let st = proxy
                    .stop()
                    .map_err(|e| crate::error::Error::local(format!("stopping the proxy: {e}")))?;
                name_faults(&mut cell.checks, &faults, &st);
                if !faults.is_none() {
                    let note = fault_note(&faults, &st);
                    for f in &mut cell.failures {
                        f.push_str(&note);
                    }
                    if let Some(e) = &mut cell.error {
                        e.push_str(&note);
                    }
                }
                cell.recording = recording;
                Ok(Some(st))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_checks_name_the_faults_and_what_they_did() {
        let check = |v: Verdict| Check {
            name: "echo long".into(),
            verdict: v,
            detail: "echo_long 1 elements: connection closed by the peer".into(),
            ty: String::new(),
            size: 0,
            mode: "echo".into(),
            giop: "1.2".into(),
            order: String::new(),
            calls: 1,
            seconds: 0.0,
        };
        let mut checks = vec![check(Verdict::Fail), check(Verdict::Pass)];
        let f: Faults = "message-error-after=3".parse().unwrap();
        let st = RelayStats {
            message_errors: 2,
            references_rewritten: 1,
            ..RelayStats::default()
        };
        name_faults(&mut checks, &f, &st);
        assert_eq!(
            checks[0].detail,
            "echo_long 1 elements: connection closed by the peer \
             [through a proxy injecting message-error-after=3: 2 MessageError injected]"
        );
        assert_eq!(
            faults_named(&checks[0].detail),
            Some("message-error-after=3: 2 MessageError injected")
        );
        assert_eq!(checks[1].detail, check(Verdict::Pass).detail);
        // A pure relay names nothing.
        let mut relay = vec![check(Verdict::Fail)];
        name_faults(&mut relay, &Faults::default(), &st);
        assert_eq!(relay[0].detail, check(Verdict::Fail).detail);
        assert_eq!(faults_named(&relay[0].detail), None);
    }

    #[test]
    fn recording_names_are_plain_file_names() {
        assert_eq!(recording_name("ours", "omniorb"), "ours-x-omniorb.pcapng");
        assert_eq!(
            recording_name("jacorb@corbaloc", "tao/2"),
            "jacorb_corbaloc-x-tao_2.pcapng"
        );
    }
}
