//! Black-box: every client path follows forwards. Our reference server in
//! forwarding mode answers the short keys (`Bench`, `Dispatch50`, …) the
//! way TAO's IORTable and Yoko's BootManager do — LOCATION_FORWARD (or
//! _PERM) to a long POA-style key, OBJECT_FORWARD to a LocateRequest, a
//! oneway to a short key lost — and each bench command, the interop suite
//! and `call` must reach the object through a corbaloc with the short key,
//! send every call to it (the server's counters say so), and report the
//! hop in its results.

use std::path::PathBuf;

use iiop_bench_idl::reference::Forwarding;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-fwd-{}-{name}", std::process::id()))
}

fn server(forwarding: Option<Forwarding>) -> RunningServer {
    RunningServer::start(ServerOptions {
        threads: 1,
        forwarding,
        ..Default::default()
    })
    .unwrap()
}

fn forwarding(permanent: bool, to: Option<&RunningServer>) -> Option<Forwarding> {
    Some(Forwarding {
        permanent,
        to: to.map(|s| ("127.0.0.1".to_string(), s.addr().port())),
    })
}

/// `corbaloc:iiop:1.2@127.0.0.1:PORT/Bench` (or GIOP 1.0 without `1.2@`).
fn corbaloc(s: &RunningServer, key: &str, v12: bool) -> String {
    format!(
        "corbaloc:iiop:{}127.0.0.1:{}/{key}",
        if v12 { "1.2@" } else { "" },
        s.addr().port()
    )
}

fn run_json(name: &str, args: &[&str]) -> (i32, Value) {
    let json = tmp(name);
    let j = json.to_str().unwrap().to_string();
    let mut a: Vec<&str> = vec!["iiopbench"];
    a.extend_from_slice(args);
    a.extend(["--quiet", "--json", &j]);
    let code = iiopbench::main_with_args(a);
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| "null".into());
    let _ = std::fs::remove_file(&json);
    (code, serde_json::from_str(&text).unwrap())
}

/// The hop the results record: from the short key to the long one at
/// `to_port`.
fn assert_forwarded(v: &Value, status: &str, from_port: u16, to_port: u16) {
    let f = v["target"]["forwards"]
        .as_array()
        .unwrap_or_else(|| panic!("no forwards recorded: {}", v["target"]));
    assert_eq!(f.len(), 1, "{f:?}");
    let hop = f[0].as_str().unwrap();
    assert!(
        hop.starts_with(&format!(
            "{status} from 127.0.0.1:{from_port} key \"Bench\" to 127.0.0.1:{to_port} key 0x14010f00"
        )),
        "{hop}"
    );
}

#[test]
fn every_bench_path_follows_a_forward_and_loses_no_oneway() {
    let srv = server(forwarding(false, None));
    let port = srv.addr().port();
    let target = corbaloc(&srv, "Bench", true);
    for path in [
        &[][..],
        &["--wait-strategy", "reactor"][..],
        &["--wait-strategy", "spin"][..],
        &["--reuse-request"][..],
        &["--dynamic"][..],
    ] {
        let mut args = vec![
            "bench",
            "throughput",
            "--runs",
            "1",
            "--target",
            &target,
            "--type",
            "long",
            "--size",
            "1KiB",
            "--total",
            "64KiB",
            "--min-duration",
            "0s",
            "--mode",
            "oneway,echo",
        ];
        args.extend_from_slice(path);
        let (code, v) = run_json("tp.json", &args);
        assert_eq!(code, 0, "{path:?}: {}", v["outcome"]);
        assert_forwarded(&v, "LOCATION_FORWARD", port, port);
        for c in v["cases"].as_array().unwrap() {
            assert_eq!(c["calls"], 64, "{path:?}");
            assert_eq!(c["errors"], serde_json::json!({}), "{path:?}");
            // Every call reached the object (the server's own count):
            // no oneway went to the short key, where the server drops it.
            assert_eq!(c["extra"]["server_bytes"], 64 * 1024, "{path:?}");
        }
    }
    for wait in ["read", "reactor"] {
        let (code, v) = run_json(
            "lat.json",
            &[
                "bench",
                "latency",
                "--runs",
                "1",
                "--target",
                &target,
                "--count",
                "50",
                "--wait-strategy",
                wait,
            ],
        );
        assert_eq!(code, 0, "{wait}: {}", v["outcome"]);
        assert_forwarded(&v, "LOCATION_FORWARD", port, port);
        assert_eq!(v["cases"][0]["calls"], 50);
    }
    let (code, v) = run_json(
        "closed.json",
        &[
            "bench",
            "closed",
            "--target",
            &target,
            "--clients",
            "2",
            "--duration",
            "300ms",
        ],
    );
    assert_eq!(code, 0, "{}", v["outcome"]);
    assert_forwarded(&v, "LOCATION_FORWARD", port, port);
    // IDL-driven calls (prepared once, then re-sent).
    let idl = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/idl/bench.idl")
        .display()
        .to_string();
    let (code, v) = run_json(
        "idl.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &target,
            "--idl",
            &idl,
            "--op",
            "Bench::Perf::echo_long",
            "--gen",
            "len=16",
            "--count",
            "40",
            "--check-reply",
        ],
    );
    assert_eq!(code, 0, "{}", v["outcome"]);
    assert_eq!(v["cases"][0]["calls"], 40);
    assert_forwarded(&v, "LOCATION_FORWARD", port, port);
}

#[test]
fn forwards_to_another_server_permanent_and_in_giop_1_0() {
    let back = server(None);
    let front = server(forwarding(true, Some(&back)));
    let (fp, bp) = (front.addr().port(), back.addr().port());
    for (v12, status) in [
        (true, "LOCATION_FORWARD_PERM"),
        // Before GIOP 1.2 there is no _PERM: a plain forward is sent.
        (false, "LOCATION_FORWARD"),
    ] {
        let target = corbaloc(&front, "Bench", v12);
        let (code, v) = run_json(
            "perm.json",
            &[
                "bench",
                "throughput",
                "--runs",
                "1",
                "--target",
                &target,
                "--type",
                "octet",
                "--size",
                "1KiB",
                "--total",
                "32KiB",
                "--min-duration",
                "0s",
                "--mode",
                "oneway,twoway",
            ],
        );
        assert_eq!(code, 0, "{}", v["outcome"]);
        assert_forwarded(&v, status, fp, bp);
        for c in v["cases"].as_array().unwrap() {
            assert_eq!(c["calls"], 32, "GIOP 1.2: {v12}");
            assert_eq!(c["extra"]["server_bytes"], 32 * 1024, "GIOP 1.2: {v12}");
        }
        // The front server only forwarded: it served no bench call.
        assert_eq!(front.stats().calls, 0);
    }
}

#[test]
fn interop_suite_passes_through_a_forwarding_corbaloc() {
    let back = server(None);
    // The field check of a LocateRequest forward runs at the forwarded
    // endpoint: a forwarding server there passes it, the plain `back`
    // server is skipped (it serves `Bench` itself). The 14 checks of the
    // server's maximum message size are skipped too (no
    // --peer-max-message-size).
    for (fwd, hops, locate_forward, skipped) in [
        (
            forwarding(false, None),
            "LOCATION_FORWARD from",
            "pass",
            2 + 14,
        ),
        (
            forwarding(true, Some(&back)),
            "LOCATION_FORWARD_PERM from",
            "skip",
            3 + 14,
        ),
    ] {
        let srv = server(fwd);
        let target = corbaloc(&srv, "Bench", true);
        let (code, v) = run_json("interop.json", &["interop", "--target", &target, "--quick"]);
        assert_eq!(code, 0, "{}", v["outcome"]);
        let checks: Vec<&Value> = v["cases"].as_array().unwrap().iter().collect();
        let by = |name: &str| {
            checks
                .iter()
                .find(|c| c["name"] == name)
                .unwrap_or_else(|| panic!("no check {name}"))
        };
        let f = by("reference: forwards");
        assert!(f["extra"]["detail"].as_str().unwrap().contains(hops), "{f}");
        assert_eq!(v["params"]["failed"], 0);
        assert!(v["params"]["passed"].as_u64().unwrap() > 140);
        // The forwarded IOR carries code sets: the wide checks ran (only
        // GIOP 1.0's, where wide types are illegal, are skipped).
        assert_eq!(by("echo wstring GIOP 1.2 LE")["extra"]["result"], "pass");
        assert_eq!(
            v["params"]["skipped"], skipped,
            "{}",
            v["params"]["skip_reasons"]
        );
        let k = by("LocateRequest answered with a forward -> the forwarded key is OBJECT_HERE");
        assert_eq!(k["extra"]["result"], locate_forward, "{k}");
        // The Dispatch/Single objects through their own short keys.
        for name in [
            "corbaloc Dispatch50: m00, m49",
            "corbaloc Single0: op, op",
            "LocateRequest(corbaloc key Bench)",
        ] {
            assert_eq!(by(name)["extra"]["result"], "pass", "{name}");
        }
    }
}

#[test]
fn serve_forward_keys_from_the_command_line() {
    let exe = env!("CARGO_BIN_EXE_iiopbench");
    let mut child = std::process::Command::new(exe)
        .args(["serve", "--forward-keys", "--server-threads", "1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(out));
    let mut ior = String::new();
    let mut url = String::new();
    let mut config = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for l in lines.by_ref() {
        let l = l.unwrap();
        assert!(std::time::Instant::now() < deadline, "no ready line");
        if l.starts_with("IOR:") {
            ior = l.clone();
        } else if let Some(rest) = l.strip_prefix("corbaloc Bench ") {
            url = rest.to_string();
        } else if l.starts_with("config ") {
            config.push(l.clone());
        } else if l == "ready" {
            break;
        }
    }
    assert!(
        config.contains(&"config forward_keys=temporary".to_string()),
        "{config:?}"
    );
    // The published IOR carries the long key: no forward is needed.
    let parsed: iiop_giop::ior::Ior = ior.parse().unwrap();
    let key = parsed.iiop_profile().unwrap().object_key;
    assert!(
        key.starts_with(iiop_bench_idl::bench::ops::POA_KEY_PREFIX),
        "{key:?}"
    );
    let (code, v) = run_json(
        "serve.json",
        &[
            "bench", "latency", "--runs", "1", "--target", &ior, "--count", "20",
        ],
    );
    assert_eq!(code, 0);
    assert!(v["target"].get("forwards").is_none(), "{}", v["target"]);
    // The corbaloc with the short key is forwarded.
    let (code, v) = run_json(
        "serve2.json",
        &[
            "bench", "latency", "--runs", "1", "--target", &url, "--count", "20",
        ],
    );
    assert_eq!(code, 0, "{}", v["outcome"]);
    assert_eq!(v["target"]["forwards"].as_array().unwrap().len(), 1);
    // SAFETY-free stop: SIGTERM through kill(1).
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// The options of `iiopbench call --idl bench.idl --target URL --op OP
/// --args ARGS [--giop G]`.
fn call_opts(
    url: &str,
    op: &str,
    args: &str,
    giop: Option<&str>,
) -> iiopbench_engine::dynamic::call::CallOpts {
    use clap::Parser;
    let idl = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idl/bench.idl");
    let idl = idl.to_str().unwrap();
    let mut argv = vec![
        "iiopbench",
        "call",
        "--idl",
        idl,
        "--target",
        url,
        "--op",
        op,
        "--args",
        args,
        "--timeout",
        "10s",
    ];
    if let Some(g) = giop {
        argv.extend(["--giop", g]);
    }
    match iiopbench::opts::Cli::try_parse_from(argv)
        .expect("parses")
        .command
    {
        iiopbench::opts::Command::Call(o) => o.engine().unwrap(),
        _ => unreachable!("call command"),
    }
}

/// `call` through a forwarding corbaloc, as TAO's IORTable answers it.
fn call_through(url: &str, op: &str, args: &str, giop: Option<&str>) -> Value {
    let o = call_opts(url, op, args, giop);
    let (v, fine) = iiopbench_engine::dynamic::call::call(&o)
        .unwrap_or_else(|e| panic!("{op} over {url} (GIOP {giop:?}): {e:#}"));
    assert!(fine, "{op}: {v}");
    v
}

#[test]
fn wide_characters_through_a_corbaloc_take_the_code_sets_of_the_forward() {
    // A corbaloc names no code sets, so wchar data cannot be encoded for
    // it; the short key's forward (an IOR with TAG_CODE_SETS) can. The
    // client asks where the object is (LocateRequest: OBJECT_FORWARD),
    // then calls the forwarded reference on a connection of its own, and
    // reads the reply with that connection's code sets.
    let s = server(forwarding(false, None));
    // GIOP 1.2 and 1.1 forced, and a plain corbaloc (GIOP 1.0, where
    // wchar is illegal) that the forward moves to its profile's 1.2.
    for (v12, giop) in [(true, Some("1.2")), (true, Some("1.1")), (false, None)] {
        let url = corbaloc(&s, "Bench", v12);
        let got = call_through(
            &url,
            "Bench::Perf::echo_wstring",
            r#"[["abé", "ж€"]]"#,
            giop,
        );
        assert_eq!(got["return"], serde_json::json!(["abé", "ж€"]), "{giop:?}");
        let got = call_through(&url, "Bench::Perf::echo_wchar", r#"["Aé"]"#, giop);
        assert_eq!(got["return"], "Aé", "{giop:?}");
    }
    // The bench paths too: their connection resolves the object
    // (`_non_existent`, forwarded), then echoes wide strings on a
    // connection that negotiated the forwarded reference's code sets.
    for ty in ["wstring", "wchar"] {
        let url = corbaloc(&s, "Bench", true);
        let (code, v) = run_json(
            &format!("wide-{ty}.json"),
            &[
                "bench", "latency", "--runs", "1", "--target", &url, "--op", "echo", "--type", ty,
                "--size", "64", "--count", "20",
            ],
        );
        assert_eq!(code, 0, "{ty}: {}", v["outcome"]);
        assert_eq!(v["target"]["forwards"].as_array().unwrap().len(), 1, "{ty}");
        assert_eq!(v["cases"][0]["calls"], 20, "{ty}");
    }
    // A server that answers the key itself (OBJECT_HERE) gives nothing to
    // learn the code sets from: the call is refused, with the reason.
    let plain = server(None);
    let url = corbaloc(&plain, "Bench", true);
    let err = call_opts(&url, "Bench::Perf::echo_wchar", r#"["A"]"#, None);
    let err = iiopbench_engine::dynamic::call::call(&err)
        .expect_err("no code sets to encode wchar with")
        .to_string();
    assert!(err.contains("without a negotiated wide code set"), "{err}");
}
