//! `iiopbench pcap FILE…`: passive measurement of captured GIOP traffic
//! (crates/capture decodes, the engine's `capture` module makes results;
//! here are the flags and the table). Prints per operation and object key the
//! calls, oneways, sizes, reply statuses, exceptions and response times at
//! the capture point; traffic per second; Locate/Cancel/Close/MessageError
//! counts; and the conformance findings with frame numbers and bytes.
//! `--json` writes the results schema (kind `pcap`), so `report`,
//! `compare` and `merge` read it; `--report DIR` draws it.

use std::path::PathBuf;

use clap::Args;
use iiop_capture::Summary;
use iiopbench_engine::capture::{analyze, hex, to_results};

use crate::flags::OutputOpts;
use crate::table::Table;

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
pub fn run(o: &PcapOpts, argv: &[String]) -> anyhow::Result<()> {
    let s = analyze(&o.files, o.keep_findings)?;
    let mut r = to_results(&s, &o.files)?;
    r.command = argv.to_vec();
    let to_stdout = o.output.json.as_deref() == Some(std::path::Path::new("-"));
    if !o.output.quiet && !to_stdout {
        out!("{}", human(&s, o.show_findings));
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
