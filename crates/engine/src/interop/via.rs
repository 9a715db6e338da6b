//! The suite and the matrix through a fault-injecting proxy
//! (`iiopbench interop --via-proxy SPEC`): a [`Proxy`] in this process in
//! front of the server, and the client given the proxy's reference
//! instead of the server's. In the matrix each cell gets a proxy of its
//! own, so each cell's recording holds that cell's traffic alone.

use std::path::{Path, PathBuf};

use iiop_giop::Ior;

use super::matrix::Cell;
use super::suite;
use crate::proxy::{Faults, Proxy, ProxyConfig, RelayStats};

/// A proxy in front of `ior` injecting `faults`, recording to `record`.
pub fn front(ior: &Ior, faults: &Faults, record: Option<PathBuf>) -> anyhow::Result<Proxy> {
    let mut cfg = ProxyConfig::new(ior.clone(), faults.clone());
    cfg.record = record;
    Proxy::start(cfg).map_err(|e| anyhow::anyhow!("starting the proxy: {e}"))
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
    ) -> anyhow::Result<CellTarget> {
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

    /// The cell ran: stop the proxy, note where its bytes are; the
    /// proxy's counts.
    pub fn finish(self, cell: &mut Cell) -> anyhow::Result<Option<RelayStats>> {
        match self {
            CellTarget::Direct(_) => Ok(None),
            CellTarget::Proxied {
                proxy,
                file,
                recording,
            } => {
                let _ = std::fs::remove_file(&file);
                let st = proxy
                    .stop()
                    .map_err(|e| anyhow::anyhow!("stopping the proxy: {e}"))?;
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
    fn recording_names_are_plain_file_names() {
        assert_eq!(recording_name("ours", "omniorb"), "ours-x-omniorb.pcapng");
        assert_eq!(
            recording_name("jacorb@corbaloc", "tao/2"),
            "jacorb_corbaloc-x-tao_2.pcapng"
        );
    }
}
