//! `iiopbench bench params`: seed 001's parameter passing (E1.2). An array
//! of `struct CD { char c; double d; }` passed three ways, with zero
//! service time, one client, back-to-back cycles:
//! - option I: `pass_cd(sequence<CD>)`;
//! - option II: `pass_both(sequence<char>, sequence<double>)`;
//! - option III: `pass_chars(sequence<char>)` then `pass_doubles(sequence<double>)`
//!   (one cycle = both calls).
//!
//! Mean R of each option is normalised to option I at the same size, and
//! the argument bytes on the wire (CDR, GIOP 1.2 body alignment) are given
//! with the padding they contain.

use std::rc::Rc;

use bytes::BytesMut;
use iiop_bench_idl::bench::types::{Cd, Payload};
use iiop_bench_idl::bench::Elem;
use iiop_bench_idl::client::BenchClient;
use iiop_cdr::{ByteOrder, Writer};
use serde_json::json;

use serde::{Deserialize, Serialize};

use super::session::{self, Session};
use super::workload::{self, ClientSpec, RunRule};
use crate::error::{check, fail, Error, JobError, Result};
use crate::options::{PlacementOpts, Sockets};
use crate::results::{param, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;

/// A `bench params` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParamsJob {
    pub target: TargetOpts,
    /// Array sizes (elements).
    pub elements: Vec<u32>,
    pub run: RunRule,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for ParamsJob {
    fn default() -> Self {
        ParamsJob {
            target: TargetOpts::default(),
            elements: vec![1, 10, 100, 1000, 10000],
            run: RunRule::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl ParamsJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(!self.elements.is_empty(), || "`elements` is empty".into())?;
        self.run.validate()?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(ParamsJob, "params");

/// The three ways of passing the array.
const OPTIONS: [(&str, &str); 3] = [
    ("I", "pass_cd(sequence<CD>)"),
    ("II", "pass_both(sequence<char>, sequence<double>)"),
    ("III", "pass_chars + pass_doubles (two calls)"),
];

/// The arguments of one option for `n` elements, encoded.
struct Args3 {
    cd: Vec<Cd>,
    chars: Payload,
    doubles: Payload,
}

impl Args3 {
    fn new(n: u32) -> Args3 {
        let chars = Payload::generate(Elem::Char, n as usize, false);
        let doubles = Payload::generate(Elem::Double, n as usize, false);
        let cd = (0..n)
            .map(|i| Cd {
                c: char::from(b'a' + (i % 26) as u8),
                d: i as f64 * 0.5,
            })
            .collect();
        Args3 { cd, chars, doubles }
    }
}

/// Argument bytes of each option's request bodies (GIOP 1.2: the body
/// starts 8-aligned), summed over the option's calls.
pub fn wire_bytes(n: u32) -> Result<[u64; 3]> {
    let a = Args3::new(n);
    let enc = |f: &dyn Fn(&mut Writer<'_>) -> Result<(), iiop_cdr::CdrError>| {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, ByteOrder::NATIVE);
        f(&mut w).map(|_| buf.len() as u64)
    };
    let one = enc(&|w| iiop_cdr::to_writer(w, &a.cd))?;
    let two = enc(&|w| {
        a.chars.encode(w)?;
        a.doubles.encode(w)
    })?;
    let three = enc(&|w| a.chars.encode(w))? + enc(&|w| a.doubles.encode(w))?;
    Ok([one, two, three])
}

/// Run a parameter-passing job.
pub fn run(o: &ParamsJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            param(&mut r.params, "elements", &o.elements);
            o.run.record(&mut r.params);
        },
        async |s: &Session, r: &mut Results| {
            tokio::task::LocalSet::new()
                .run_until(measure(o, s, r))
                .await
        },
    )
}

async fn measure(o: &ParamsJob, s: &Session, r: &mut Results) -> Result<()> {
    let spec = o.run.spec(s.gate.as_ref());
    let c = s
        .connect()
        .await
        .map_err(|e| fail!(Target, "connecting to the target: {e}"))?;
    let progress = s.progress.clone();
    for &n in &o.elements {
        let a = Rc::new(Args3::new(n));
        let bytes = wire_bytes(n)?;
        let mut r_first = None;
        for (k, (label, what)) in OPTIONS.iter().enumerate() {
            let name = format!("option {label} n={n}");
            let pb = progress.case(&name);
            let call = option_call(k, c.clone(), a.clone());
            let res = workload::run(
                spec.clone(),
                vec![ClientSpec {
                    think: std::time::Duration::ZERO,
                    think_dist: super::stats::Dist::Fixed,
                    class: "client".into(),
                    call,
                }],
            )
            .await;
            pb.done();
            let r_mean = res.r_mean_us();
            let base = *r_first.get_or_insert(r_mean);
            let params = workload::case_params(
                "cd",
                bytes[k],
                label,
                json!({ "elements": n, "option": label, "operations": what }),
            );
            let mut case = res.case(&name, params);
            let calls_per_cycle = if k == 2 { 2 } else { 1 };
            case.bytes = case.calls * bytes[k];
            case.throughput_mbps = case.bytes as f64 * 8.0 / case.seconds.max(1e-9) / 1e6;
            param(
                &mut case.extra,
                "ratio_to_option_i",
                r_mean / base.max(1e-9),
            );
            param(&mut case.extra, "wire_arg_bytes", bytes[k]);
            param(
                &mut case.extra,
                "padding_bytes",
                bytes[k] - 9 * n as u64 - 4 * (calls_per_cycle + u64::from(k == 1)),
            );
            param(&mut case.extra, "calls_per_cycle", calls_per_cycle);
            let failure = res.failure(&name);
            r.cases.push(case);
            if let Some(e) = failure {
                return Err(e);
            }
        }
    }
    Ok(())
}

fn option_call(k: usize, c: BenchClient, a: Rc<Args3>) -> workload::CallFn {
    Box::new(move |_| {
        let (c, a) = (c.clone(), a.clone());
        Box::pin(async move {
            match k {
                0 => c
                    .call("pass_cd", |w| iiop_cdr::to_writer(w, &a.cd))
                    .await
                    .map(drop),
                1 => c
                    .call("pass_both", |w| {
                        a.chars.encode(w)?;
                        a.doubles.encode(w)
                    })
                    .await
                    .map(drop),
                _ => {
                    c.call("pass_chars", |w| a.chars.encode(w)).await?;
                    c.call("pass_doubles", |w| a.doubles.encode(w))
                        .await
                        .map(drop)
                }
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_show_the_padding() {
        // I: count 4, then per CD char at 4+16i, pad 3/7, double: 4 + 16n - 4
        // (the first char sits at offset 4, its double at 8).
        // II: 4 + n chars, pad to 4, count 4, pad to 8, 8n.
        // III: (4 + n) + (4 + pad to 8 + 8n) in two bodies.
        assert_eq!(wire_bytes(1).unwrap(), [16, 24, 21]);
        assert_eq!(wire_bytes(10).unwrap(), [160, 104, 102]);
        assert_eq!(wire_bytes(1000).unwrap(), [16000, 9008, 9012]);
    }
}
