//! Passive GIOP analysis of packet captures: pcap and pcapng files are read
//! as a stream ([`source`]), frames parsed down to TCP ([`net`]), each
//! direction of each connection reassembled ([`reassembly`]), and each
//! connection's bytes fed to an observer of the pure GIOP core
//! (`iiop_giop::conn::observer`), which frames the messages, pairs
//! requests with their answers and makes the conformance findings;
//! [`analysis`] counts what it reports. No sockets and no results schema
//! here: the engine (`iiopbench_engine::capture`) turns a [`Summary`] into
//! a results document, and its replay hears the observers through a sink
//! of its own ([`Analyzer::with_sink`]).
//!
//! ```no_run
//! let file = std::fs::File::open("capture.pcapng")?;
//! let summary = iiop_capture::analyze(file, iiop_capture::Config::default())?;
//! for op in &summary.ops {
//!     println!("{} {} calls", op.operation, op.calls);
//! }
//! # Ok::<(), iiop_capture::CaptureError>(())
//! ```

pub mod analysis;
pub mod net;
pub mod reassembly;
pub mod source;
pub mod synth;

pub use analysis::{Analyzer, Config, Finding, NoSink, OpStats, Summary};
pub use source::CaptureError;

/// Analyse one capture read from `input` (streamed).
pub fn analyze<R: std::io::Read + Send>(input: R, cfg: Config) -> Result<Summary, CaptureError> {
    let mut a = Analyzer::new(cfg);
    feed(input, &mut a)?;
    Ok(a.finish().0)
}

/// Feed every packet of `input` to `analyzer` (several files may be fed
/// to one analyzer, in order).
pub fn feed<R: std::io::Read + Send, O: iiop_giop::conn::observer::Sink>(
    input: R,
    analyzer: &mut Analyzer<O>,
) -> Result<u64, CaptureError> {
    source::for_each_packet(input, |p| {
        analyzer.packet(p.frame, p.ts_ns, p.linktype, p.data);
        true
    })
}
