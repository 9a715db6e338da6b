//! `iiopbench pcap FILE…`: passive measurement of captured GIOP traffic
//! (crates/capture does the work). Prints per operation and object key the
//! calls, oneways, sizes, reply statuses, exceptions and response times at
//! the capture point; traffic per second; Locate/Cancel/Close/MessageError
//! counts; and the conformance findings with frame numbers and bytes.
//! `--json` writes the results schema (kind `pcap`), so `report`,
//! `compare` and `merge` read it; `--report DIR` draws it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use iiop_capture::analysis::{Analyzer, Observer};
use iiop_capture::{Config, OpStats, Summary};
use serde_json::{json, Value};

use crate::opts::OutputOpts;
use crate::table::Table;
use iiopbench_engine::hist::Latency;
use iiopbench_engine::results::{
    Case, CaseParams, Outcome, Overhead, Placement, Results, TargetInfo,
};

/// Options of `iiopbench pcap`.
#[derive(Debug, Clone, Args)]
pub struct PcapOpts {
    /// pcap or pcapng files, read in order as one capture (frame numbers
    /// continue from one file to the next).
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputOpts,
    /// Also draw the results as a report (index.html, report.md, SVG).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Findings printed in the table (all are counted; the JSON keeps up
    /// to --keep-findings of them with their bytes).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub show_findings: usize,
    /// Findings kept with frame number and bytes.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub keep_findings: usize,
}

/// Feed every file to `a`, numbering frames across files.
pub fn feed_files<O: Observer>(files: &[PathBuf], a: &mut Analyzer<O>) -> anyhow::Result<u64> {
    let mut offset = 0u64;
    for f in files {
        let file = std::fs::File::open(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        let input = std::io::BufReader::with_capacity(1 << 20, file);
        let n = iiop_capture::source::for_each_packet(input, |p| {
            a.packet(offset + p.frame, p.ts_ns, p.linktype, p.data);
            true
        })
        .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        offset += n;
    }
    Ok(offset)
}

/// Analyse the files.
pub fn analyze(files: &[PathBuf], keep_findings: usize) -> anyhow::Result<Summary> {
    let mut a = Analyzer::new(Config {
        max_findings: keep_findings,
        ..Config::default()
    });
    feed_files(files, &mut a)?;
    Ok(a.finish().0)
}

/// The latency histogram of an operation in the CLI's type.
pub fn latency_of(op: &OpStats) -> anyhow::Result<Latency> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&op.latency, &mut buf)
        .map_err(|e| anyhow::anyhow!("histogram: {e:?}"))?;
    use base64::Engine;
    Latency::from_base64(&base64::engine::general_purpose::STANDARD.encode(buf))
}

fn hex(b: &[u8]) -> String {
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
        mode: if op.calls > 0 { "twoway" } else { "oneway" }.into(),
        extra,
    }
}

/// The summary as a results document (kind `pcap`).
pub fn to_results(s: &Summary, files: &[PathBuf]) -> anyhow::Result<Results> {
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
    let mut r =
        iiopbench_engine::context::new_results("pcap", target, Placement::new(Vec::new(), None));
    r.params = params;
    r.cases = cases;
    r.outcome = Outcome {
        complete: true,
        failure: (total_findings > 0).then(|| format!("{total_findings} conformance finding(s)")),
    };
    Ok(r)
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// The human table.
pub fn human(s: &Summary, show_findings: usize) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "capture: {} frames, {} TCP segments, {} connections ({} seen from mid-stream), {:.3} s; GIOP {} messages, {} bytes\n",
        s.frames,
        s.tcp_segments,
        s.connections,
        s.mid_stream_connections,
        s.duration_s(),
        s.messages.values().sum::<u64>(),
        s.giop_bytes
    ));
    let mut t = Table::new([
        "operation",
        "object key",
        "calls",
        "oneways",
        "req B",
        "reply B",
        "statuses",
        "p50 µs",
        "p90 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
    ]);
    for op in &s.ops {
        let n = (op.calls + op.oneways).max(1);
        let h = &op.latency;
        let q = |p: f64| {
            if h.is_empty() {
                "-".to_string()
            } else {
                us(h.value_at_quantile(p))
            }
        };
        let mut st: Vec<String> = op
            .statuses
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        st.extend(op.exceptions.iter().map(|(k, v)| format!("{k}={v}")));
        if op.unanswered > 0 {
            st.push(format!("unanswered={}", op.unanswered));
        }
        t.row([
            op.operation.clone(),
            op.object_key.clone(),
            op.calls.to_string(),
            op.oneways.to_string(),
            format!("{}", op.request_bytes / n),
            format!("{}", op.reply_bytes.checked_div(op.replies).unwrap_or(0)),
            st.join(" "),
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            if h.is_empty() {
                "-".into()
            } else {
                us(h.max())
            },
        ]);
    }
    out.push_str(&t.render());
    out.push_str(&format!(
        "messages: {}\nversions: {}\nLocateRequest {} (replies {}), CancelRequest {}, CloseConnection {}, MessageError {}; fragmented messages {} ({} fragments); unmatched replies {}\n",
        s.messages.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
        s.versions.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
        s.locate_requests,
        if s.locate_replies.is_empty() {
            "none".to_string()
        } else {
            s.locate_replies.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        },
        s.cancel_requests,
        s.close_connections,
        s.message_errors,
        s.fragmented_messages,
        s.fragments,
        s.unmatched_replies
    ));
    out.push_str(&format!(
        "tcp: retransmitted {} B, out of order {} segments, gaps {} ({} B missing), resyncs {}, unframed {} B\n",
        s.retransmitted_bytes, s.out_of_order_segments, s.gaps, s.missing_bytes, s.resyncs, s.unframed_bytes
    ));
    if !s.seconds.is_empty() {
        let rps: Vec<u64> = s.seconds.iter().map(|x| x.requests).collect();
        let show: Vec<String> = rps.iter().take(30).map(|x| x.to_string()).collect();
        out.push_str(&format!(
            "requests per second: {}{} (max {}, mean {:.0})\n",
            show.join(" "),
            if rps.len() > 30 { " …" } else { "" },
            rps.iter().max().unwrap_or(&0),
            rps.iter().sum::<u64>() as f64 / rps.len() as f64
        ));
    }
    let total: u64 = s.finding_counts.values().sum();
    if total == 0 {
        out.push_str("conformance: no findings\n");
    } else {
        out.push_str(&format!(
            "conformance: {total} finding(s): {}\n",
            s.finding_counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for f in s.findings.iter().take(show_findings) {
            out.push_str(&format!(
                "  frame {} {} [{}] {}\n    {}\n",
                f.frame,
                f.connection,
                f.rule,
                f.detail,
                hex(&f.bytes)
            ));
        }
    }
    out
}

/// Run `iiopbench pcap`.
pub fn run(o: &PcapOpts) -> anyhow::Result<()> {
    let s = analyze(&o.files, o.keep_findings)?;
    let r = to_results(&s, &o.files)?;
    let to_stdout = o.output.json.as_deref() == Some(std::path::Path::new("-"));
    if !o.output.quiet && !to_stdout {
        print!("{}", human(&s, o.show_findings));
    }
    let quiet = OutputOpts {
        quiet: true,
        ..o.output.clone()
    };
    crate::output::emit(&r, &quiet)?;
    if let Some(dir) = &o.report {
        std::fs::create_dir_all(dir)?;
        let json = match &o.output.json {
            Some(p) if !to_stdout => p.clone(),
            _ => {
                let p = dir.join("pcap.json");
                iiopbench_engine::results::write_atomic(
                    &p,
                    &iiopbench_engine::results::to_json(&r),
                )?;
                p
            }
        };
        crate::cmd::report::run(&crate::cmd::report::ReportOpts {
            inputs: vec![json],
            report: dir.clone(),
        })?;
    }
    Ok(())
}
