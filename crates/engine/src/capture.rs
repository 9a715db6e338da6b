//! Passive measurement of captured GIOP traffic as results: the capture
//! files fed in order to `iiop_capture`'s analyzer ([`analyze`]), and what
//! it counted as a results document of kind `pcap` ([`to_results`]), so
//! that `report`, `compare` and `merge` read it. The table a person reads
//! is the command line's (`iiopbench pcap`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use iiop_capture::analysis::Analyzer;
use iiop_capture::{Config, OpStats, Summary};
use serde_json::{json, Value};

use crate::hist::Latency;
use crate::results::{Case, CaseParams, Outcome, Overhead, Placement, Results, TargetInfo};

/// Feed every file to `a`, numbering frames across files.
pub fn feed_files<O: iiop_giop::conn::observer::Sink>(
    files: &[PathBuf],
    a: &mut Analyzer<O>,
) -> crate::error::Result<u64> {
    let mut offset = 0u64;
    for f in files {
        let file = std::fs::File::open(f)
            .map_err(|e| crate::error::fail!(Local, "{}: {e}", f.display()))?;
        let input = std::io::BufReader::with_capacity(1 << 20, file);
        let n = iiop_capture::source::for_each_packet(input, |p| {
            a.packet(offset + p.frame, p.ts_ns, p.linktype, p.data);
            true
        })
        .map_err(|e| crate::error::fail!(Local, "{}: {e}", f.display()))?;
        offset += n;
    }
    Ok(offset)
}

/// Analyse the files.
pub fn analyze(files: &[PathBuf], keep_findings: usize) -> crate::error::Result<Summary> {
    let mut a = Analyzer::new(Config {
        max_findings: keep_findings,
        ..Config::default()
    });
    feed_files(files, &mut a)?;
    Ok(a.finish().0)
}

/// The latency histogram of an operation as the engine's [`Latency`].
pub fn latency_of(op: &OpStats) -> crate::error::Result<Latency> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&op.latency, &mut buf)
        .map_err(|e| crate::error::fail!(Local, "histogram: {e:?}"))?;
    use base64::Engine;
    Latency::from_base64(&base64::engine::general_purpose::STANDARD.encode(buf))
}

/// Bytes as space-separated hex pairs.
pub fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Identity params of an operation's case (shared with `replay`, so that
/// `compare pcap.json replay.json` matches them).
pub fn case_params(op: &OpStats) -> CaseParams {
    let n = op.calls + op.oneways;
    let mut extra = BTreeMap::new();
    extra.insert("command".into(), json!("pcap"));
    extra.insert("operation".into(), json!(op.operation));
    extra.insert("object_key".into(), json!(op.object_key));
    CaseParams {
        ty: String::new(),
        size: op.request_body_bytes.checked_div(n).unwrap_or(0),
        mode: mode(&op.operation, op.calls > 0).into(),
        extra,
    }
}

/// A case's `mode`: `locate` for LocateRequests, else `twoway` when any
/// call expected a reply, else `oneway`.
pub fn mode(operation: &str, twoway: bool) -> &'static str {
    if operation == iiop_capture::analysis::LOCATE_OP {
        "locate"
    } else if twoway {
        "twoway"
    } else {
        "oneway"
    }
}

/// The summary as a results document (kind `pcap`).
pub fn to_results(s: &Summary, files: &[PathBuf]) -> crate::error::Result<Results> {
    let seconds = s.duration_s();
    let mut cases = Vec::new();
    for op in &s.ops {
        let n = op.calls + op.oneways;
        let lat = latency_of(op)?;
        let mut extra = BTreeMap::new();
        extra.insert("twoway_calls".into(), json!(op.calls));
        extra.insert("oneways".into(), json!(op.oneways));
        extra.insert("replies".into(), json!(op.replies));
        extra.insert("unanswered".into(), json!(op.unanswered));
        extra.insert("request_giop_bytes".into(), json!(op.request_bytes));
        extra.insert("reply_giop_bytes".into(), json!(op.reply_bytes));
        extra.insert("reply_body_bytes".into(), json!(op.reply_body_bytes));
        extra.insert("statuses".into(), json!(op.statuses));
        extra.insert("exceptions".into(), json!(op.exceptions));
        extra.insert("giop_versions".into(), json!(op.versions));
        cases.push(Case {
            name: format!("{} {}", op.operation, op.object_key),
            params: case_params(op),
            calls: n,
            bytes: op.request_body_bytes,
            seconds,
            calls_per_sec: if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            },
            throughput_mbps: if seconds > 0.0 {
                op.request_body_bytes as f64 * 8.0 / seconds / 1e6
            } else {
                0.0
            },
            latency_us: (!lat.is_empty()).then(|| lat.summary()),
            histogram: (!lat.is_empty()).then(|| lat.to_base64()),
            errors: op.exceptions.clone(),
            overhead: (n > 0).then(|| Overhead {
                request_bytes: (op.request_bytes - op.request_body_bytes) as f64 / n as f64,
                reply_bytes: if op.replies > 0 {
                    (op.reply_bytes - op.reply_body_bytes) as f64 / op.replies as f64
                } else {
                    0.0
                },
            }),
            extra,
            ..Case::default()
        });
    }
    let mut params: BTreeMap<String, Value> = BTreeMap::new();
    params.insert(
        "files".into(),
        json!(files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()),
    );
    params.insert("frames".into(), json!(s.frames));
    params.insert("tcp_segments".into(), json!(s.tcp_segments));
    params.insert("skipped_frames".into(), json!(s.skipped));
    params.insert("connections".into(), json!(s.connections));
    params.insert(
        "mid_stream_connections".into(),
        json!(s.mid_stream_connections),
    );
    params.insert(
        "tcp".into(),
        json!({"retransmitted_bytes": s.retransmitted_bytes, "out_of_order_segments": s.out_of_order_segments,
               "gaps": s.gaps, "missing_bytes": s.missing_bytes, "resyncs": s.resyncs, "unframed_bytes": s.unframed_bytes}),
    );
    params.insert("messages".into(), json!(s.messages));
    params.insert("giop_versions".into(), json!(s.versions));
    params.insert("giop_bytes".into(), json!(s.giop_bytes));
    params.insert("fragmented_messages".into(), json!(s.fragmented_messages));
    params.insert("fragments".into(), json!(s.fragments));
    params.insert("locate_requests".into(), json!(s.locate_requests));
    params.insert("locate_replies".into(), json!(s.locate_replies));
    params.insert("cancel_requests".into(), json!(s.cancel_requests));
    params.insert("close_connections".into(), json!(s.close_connections));
    params.insert("message_errors".into(), json!(s.message_errors));
    params.insert("unmatched_replies".into(), json!(s.unmatched_replies));
    params.insert("capture_seconds".into(), json!(seconds));
    params.insert(
        "per_second".into(),
        json!(s
            .seconds
            .iter()
            .enumerate()
            .map(|(i, x)| json!({"t": i, "requests": x.requests, "replies": x.replies, "messages": x.messages, "bytes": x.bytes}))
            .collect::<Vec<_>>()),
    );
    params.insert("finding_counts".into(), json!(s.finding_counts));
    params.insert(
        "findings".into(),
        json!(s
            .findings
            .iter()
            .map(|f| json!({"frame": f.frame, "connection": f.connection, "rule": f.rule, "detail": f.detail, "bytes": hex(&f.bytes)}))
            .collect::<Vec<_>>()),
    );
    let total_findings: u64 = s.finding_counts.values().sum();
    let target = TargetInfo {
        kind: "capture".into(),
        reference: files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(","),
        ..TargetInfo::default()
    };
    Ok(complete_results(
        "pcap",
        target,
        params,
        cases,
        (total_findings > 0).then(|| format!("{total_findings} conformance finding(s)")),
    ))
}

/// A complete results document of a capture's `kind` (`pcap`, `replay`):
/// no placement (nothing was pinned), and `failure` what the traffic
/// showed wrong, if anything.
pub fn complete_results(
    kind: &str,
    target: TargetInfo,
    params: BTreeMap<String, Value>,
    cases: Vec<Case>,
    failure: Option<String>,
) -> Results {
    let mut r = crate::results::Results::new(kind, Vec::new());
    r.target = target;
    r.placement = Placement::new(Vec::new(), None);
    r.params = params;
    r.cases = cases;
    r.outcome = Outcome {
        complete: true,
        failure,
    };
    r
}
