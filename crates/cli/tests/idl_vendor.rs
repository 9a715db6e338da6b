//! `call` and `serve --idl` against vendor ORBs, using only
//! fixtures/idl/bench.idl at run time:
//! - `call` against the omniORB and JacORB bench servers gives the same
//!   answers as our typed client (`BenchClient`) for echo_perfstruct,
//!   echo_variant, echo_wstring, get_stats and work;
//! - `iiopbench serve --idl bench.idl` is answered by the omniORB client
//!   (latency echo of longs, and every echo check of its conformance run).
//!
//! The vendor programs are built by `scripts/orbs/<orb>/build`. When they
//! are missing the tests SKIP with a printed reason, unless `CI` is set
//! (there they are installed and built first, so missing is a failure).

mod common;

use std::path::PathBuf;
use std::process::Command;

use bytes::BytesMut;
use clap::Parser;
use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::bench::work::{Dist, Kind};
use iiop_bench_idl::client::BenchClient;
use iiop_cdr::{ByteOrder, Reader, Value, Writer};
use iiopbench::opts::{Cli, Command as Cmd};
use iiopbench_engine::dynamic::call::{call, CallOpts};
use iiopbench_engine::dynamic::json::to_json;
use serde_json::json;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench_idl() -> PathBuf {
    root().join("fixtures/idl/bench.idl")
}

/// Whether the vendor's programs are built; prints the skip reason, or
/// panics under CI.
fn available(orb: &str) -> bool {
    common::vendor_built("idl_vendor", orb, true)
}

use common::{start, vendor_server};

fn call_opts(ior: &str, op: &str, args: &serde_json::Value) -> CallOpts {
    let idl = bench_idl().display().to_string();
    let a = args.to_string();
    let argv = [
        "iiopbench",
        "call",
        "--idl",
        &idl,
        "--target",
        ior,
        "--op",
        op,
        "--args",
        &a,
        "--timeout",
        "30s",
    ];
    match Cli::try_parse_from(argv).expect("parses").command {
        Cmd::Call(o) => o.engine().unwrap(),
        _ => unreachable!("call command"),
    }
}

fn dyn_call(ior: &str, op: &str, args: serde_json::Value) -> serde_json::Value {
    let (j, ok) = call(&call_opts(ior, op, &args)).unwrap_or_else(|e| panic!("call {op}: {e:#}"));
    assert!(ok, "{op}: {j}");
    j
}

/// A typed payload as bench.idl JSON (through the IDL's TypeCode).
fn payload_json(spec: &iiop_idl::Spec, op: &str, p: &Payload) -> serde_json::Value {
    let found = iiopbench_engine::dynamic::find_op(spec, op).unwrap();
    let tc = &found.sig.params[0].tc;
    let mut b = BytesMut::new();
    p.encode(&mut Writer::new(&mut b, ByteOrder::Big)).unwrap();
    let v = Value::decode(tc, &mut Reader::new(&b, ByteOrder::Big)).unwrap();
    to_json(tc, &v).unwrap()
}

fn same_answers_as_typed_client(orb: &str) {
    if !available(orb) {
        return;
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-idl-{orb}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ior_file = dir.join("ior");
    let _srv = vendor_server(orb, &ior_file);
    let ior_text = std::fs::read_to_string(&ior_file)
        .unwrap()
        .trim()
        .to_string();
    let spec = iiopbench_engine::dynamic::load_spec(&bench_idl(), &[]).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ior: iiop_giop::Ior = ior_text.parse().unwrap();
    let typed = rt
        .block_on(BenchClient::connect(&ior, &Default::default()))
        .unwrap();

    for (elem, op, size) in [
        (Elem::PerfStruct, "Bench::Perf::echo_perfstruct", 24 * 7),
        (Elem::Variant, "Bench::Perf::echo_variant", 12 * 5),
        (Elem::WString, "Bench::Perf::echo_wstring", 20 * 4),
    ] {
        let p = Payload::for_size(elem, size);
        let back = rt
            .block_on(typed.payload(CallMode::Echo, &p))
            .unwrap()
            .expect("echo returns");
        let want = payload_json(&spec, op, &back);
        assert!(want.as_array().is_some_and(|a| !a.is_empty()), "{want}");
        let got = dyn_call(&ior_text, op, json!({"s": payload_json(&spec, op, &p)}));
        assert_eq!(got, json!({"return": want}), "{orb} {op}");
    }

    // get_stats after a known sequence, dynamically and typed.
    dyn_call(&ior_text, "Bench::Perf::reset", json!({}));
    dyn_call(&ior_text, "Bench::Perf::send_long", json!({"s": [1, 2, 3]}));
    dyn_call(&ior_text, "Bench::Perf::ping", json!({}));
    let got = dyn_call(&ior_text, "Bench::Perf::get_stats", json!({}))["return"].clone();
    let st = rt.block_on(typed.stats()).unwrap();
    for (k, v) in [
        ("calls", st.calls),
        ("oneways", st.oneways),
        ("bytes", st.bytes),
        ("last_mark", st.last_mark),
        ("mark_disorder", st.mark_disorder),
    ] {
        assert_eq!(got[k], json!(v), "{orb} get_stats.{k}: {got}");
    }
    assert_eq!((st.calls, st.oneways, st.bytes), (2, 0, 12), "{orb}");
    assert!(
        got["cpu_seconds"].as_f64().is_some_and(|c| c >= 0.0),
        "{got}"
    );

    // work: both say at least the requested 2000 µs of sleep.
    let typed_us = rt
        .block_on(typed.work(2000.0, Dist::Fixed, Kind::Sleep))
        .unwrap();
    let got = dyn_call(
        &ior_text,
        "Bench::Perf::work",
        json!({"service_us": 2000.0, "dist": "DIST_FIXED", "kind": "KIND_SLEEP"}),
    );
    let dyn_us = got["return"].as_f64().expect("work returns a double");
    assert!(
        (2000.0..1e6).contains(&typed_us),
        "{orb} typed work {typed_us}"
    );
    assert!((2000.0..1e6).contains(&dyn_us), "{orb} dynamic work {got}");

    // bench latency --idl against the vendor server: exact call count, no
    // errors, replies decoded.
    let out = dir.join("lat.json");
    let idl = bench_idl().display().to_string();
    let code = iiopbench::main_with_args([
        "iiopbench",
        "bench",
        "latency",
        "--runs",
        "1",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::echo_perfstruct",
        "--gen",
        "len=100",
        "--check-reply",
        "--count",
        "200",
        "--warmup",
        "20",
        "--target",
        &ior_text,
        "--json",
        &out.display().to_string(),
        "-q",
    ]);
    assert_eq!(code, 0, "{orb} bench latency --idl");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["cases"][0]["calls"], 200, "{orb}");
    assert_eq!(r["cases"][0]["errors"], json!({}), "{orb}");
    // sequence<PerfStruct> of 100 {short s; char c; long l; octet o;
    // double d}: the first row starts right after the 4-byte count (a
    // short needs 2-byte alignment) and ends at 24; each further row is
    // 24 bytes: 4 + 20 + 99 × 24 = 2400.
    assert_eq!(r["cases"][0]["params"]["size"], 2400, "{orb}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn call_matches_typed_client_on_omniorb() {
    same_answers_as_typed_client("omniorb");
}

#[test]
fn call_matches_typed_client_on_jacorb() {
    same_answers_as_typed_client("jacorb");
}

#[test]
fn omniorb_client_is_answered_by_serve_idl() {
    if !available("omniorb") {
        return;
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-serve-idl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ior_file = dir.join("ior");
    let mut c = Command::new(env!("CARGO_BIN_EXE_iiopbench"));
    c.args(["serve", "--idl"])
        .arg(bench_idl())
        .args([
            "--interface",
            "Bench::Perf",
            "--listen",
            "127.0.0.1:0",
            "--server-threads",
            "1",
            "--ior-file",
        ])
        .arg(&ior_file);
    let _srv = start(c);
    let client = root().join("scripts/orbs/omniorb/client");
    let run = |args: &[&str]| -> serde_json::Value {
        let out = Command::new(&client)
            .arg("--target")
            .arg(&ior_file)
            .args(args)
            .output()
            .expect("omniORB client runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let last = text.lines().last().unwrap_or("").to_string();
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("client output {text:?}: {e}"))
    };
    let lat = run(&[
        "--mode", "latency", "--op", "echo", "--type", "long", "--size", "1024", "--count", "200",
        "--warmup", "10",
    ]);
    assert_eq!(lat["calls"], json!(200), "{lat}");
    assert_eq!(lat["elements"], json!(256), "{lat}");
    assert_eq!(lat["op"], json!("echo"), "{lat}");
    // The conformance run: every echo check (all element types, 0/1/7/1000
    // elements, 4 MiB octets) and the object checks pass; the counter
    // checks need bench.idl's semantics, which an echo skeleton lacks.
    let conf = run(&["--mode", "conformance"]);
    let checks = conf["checks"].as_array().expect("checks");
    let echoes: Vec<&serde_json::Value> = checks
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("echo_")))
        .collect();
    assert!(echoes.len() >= 4 * 20, "{} echo checks", echoes.len());
    for c in echoes {
        assert_eq!(c["pass"], json!(true), "{c}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
