//! `call` against `serve --idl`'s dynamic skeleton for an IDL of another
//! shape than bench.idl (tests/idl/shapes.idl: out/inout, unions on an
//! enum, any, TypeCode, arrays, fixed, recursion, wstring, exceptions,
//! inheritance, attributes, oneway), all in-process on loopback.

mod common;

use std::path::PathBuf;

use clap::Parser;
use iiopbench::opts::{Cli, Command};
use iiopbench_engine::dynamic::call::{call, CallOpts};
use iiopbench_engine::dynamic::serve::{start, IdlServeOpts};
use iiopbench_engine::dynamic::server::{IdlServer, IdlServerOptions};
use serde_json::json;

fn idl() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/idl/shapes.idl")
}

/// One server thread on 127.0.0.1, a free port.
fn loopback() -> IdlServerOptions {
    IdlServerOptions::default()
}

fn server(interface: &str, behaviour: &str) -> IdlServer {
    let o = IdlServeOpts {
        idl: idl(),
        include: vec![],
        interface: Some(interface.into()),
        behaviour: behaviour.into(),
    };
    let (srv, name) = start(&o, loopback()).expect("server starts");
    assert_eq!(name, interface);
    srv
}

fn opts(srv: &IdlServer, op: &str, args: Option<serde_json::Value>) -> CallOpts {
    let ior = srv.ior().to_string();
    let idl = idl().display().to_string();
    let mut argv = vec![
        "iiopbench",
        "call",
        "--idl",
        &idl,
        "--target",
        &ior,
        "--op",
        op,
        "--timeout",
        "10s",
    ];
    let a = args.map(|a| a.to_string());
    if let Some(a) = &a {
        argv.extend(["--args", a]);
    }
    match Cli::try_parse_from(argv).expect("parses").command {
        Command::Call(o) => o.engine().unwrap(),
        _ => unreachable!("call command"),
    }
}

fn ok(srv: &IdlServer, op: &str, args: serde_json::Value) -> serde_json::Value {
    let (j, fine) = call(&opts(srv, op, Some(args))).expect("call works");
    assert!(fine, "{op}: {j}");
    j
}

#[test]
fn echo_skeleton_answers_every_shape() {
    let srv = server("Shapes::Drawing", "echo");
    // Union on an enum, inout echoed from itself, out without a matching
    // input gets its default (empty path).
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::transform",
            json!({"s": {"_d": "SQUARE", "corner": {"x": 1.5, "y": -2}}, "origin": {"x": 3, "y": 4}})
        ),
        json!({"return": {"_d": "SQUARE", "corner": {"x": 1.5, "y": -2.0}}, "origin": {"x": 3.0, "y": 4.0}, "trail": []})
    );
    // Default branch of the union.
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::transform",
            json!([{"_d": "TRIANGLE", "label": "tri"}, {"x": 0, "y": 0}])
        )["return"],
        json!({"_d": "TRIANGLE", "label": "tri"})
    );
    // any with a described TypeCode, and with a type named in the IDL; the
    // TypeCode out parameter has no input of its type: tk_null.
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::wrap",
            json!({"a": {"type": {"kind": "sequence", "element": "wstring", "bound": 0}, "value": ["ж", "b"]}})
        ),
        json!({"return": {"type": {"kind": "sequence", "element": "wstring", "bound": 0}, "value": ["ж", "b"]}, "t": "null"})
    );
    let named = ok(
        &srv,
        "Shapes::Drawing::wrap",
        json!({"a": {"type": "::Shapes::Kind", "value": "CIRCLE"}}),
    );
    assert_eq!(named["return"]["value"], json!("CIRCLE"));
    assert_eq!(
        named["return"]["type"]["id"],
        json!("IDL:example.org/Shapes/Kind:1.0")
    );
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::greet",
            json!({"who": "Zoë €", "mark": "ж"})
        ),
        json!({"return": "Zoë €"})
    );
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::flip",
            json!({"m": [[1, 2, 3], [4, 5, -6]]})
        ),
        json!({"return": [[1, 2, 3], [4, 5, -6]]})
    );
    assert_eq!(
        ok(&srv, "Shapes::Drawing::price", json!({"p": "-1234.5"})),
        json!({"return": "-1234.50"})
    );
    let tree = json!({"name": "root", "children": [{"name": "a", "children": []}, {"name": "b", "children": [{"name": "c", "children": []}]}]});
    assert_eq!(
        ok(&srv, "Shapes::Drawing::tree", json!({"n": tree.clone()})),
        json!({"return": tree})
    );
    // 64-bit integers beyond 2^53 travel as strings; out `c` echoes `a`.
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::minmax",
            json!({"a": "-9223372036854775808", "b": "18446744073709551615"})
        ),
        json!({"return": "-9223372036854775808", "c": "-9223372036854775808"})
    );
    // Inherited operation, attributes (defaults: no inputs of their type).
    assert_eq!(
        ok(&srv, "Shapes::Drawing::version", json!({})),
        json!({"return": 0})
    );
    assert_eq!(
        ok(&srv, "Shapes::Drawing::_get_title", json!({})),
        json!({"return": ""})
    );
    assert_eq!(
        ok(&srv, "Shapes::Drawing::_set_title", json!({"value": "t"})),
        json!({})
    );
    assert_eq!(
        ok(&srv, "Shapes::Drawing::_get_big", json!({})),
        json!({"return": 0})
    );
    // Object references as IOR strings (the server's own), nil as null.
    let me = srv.ior().to_string();
    assert_eq!(
        ok(&srv, "Shapes::Drawing::self_ref", json!({"o": me.clone()})),
        json!({"return": me})
    );
    assert_eq!(
        ok(&srv, "Shapes::Drawing::self_ref", json!({"o": null})),
        json!({"return": null})
    );
    // Oneway.
    assert_eq!(
        ok(&srv, "Shapes::Drawing::note", json!({"s": "x"})),
        json!({"oneway": true})
    );
    // A twoway after the oneway on the same connection: both processed.
    ok(&srv, "Shapes::Drawing::version", json!({}));
    let s = srv.handler().counters().snapshot();
    assert_eq!((s.calls, s.oneways), (16, 1));
}

#[test]
fn bad_arguments_are_refused_before_sending() {
    let srv = server("Shapes::Drawing", "sink");
    let e = call(&opts(
        &srv,
        "Shapes::Drawing::transform",
        Some(json!({"s": {"_d": "CIRCLE", "radius": "big"}, "origin": {"x": 0, "y": 0}})),
    ))
    .unwrap_err();
    // The engine names the option by its field; the command line says it
    // as its flag.
    assert_eq!(
        iiopbench::words::flags(&e.to_string()),
        "--args: parameter s: .radius: \"big\" is not a number"
    );
    let e = call(&opts(
        &srv,
        "Shapes::Drawing::flip",
        Some(json!({"m": [[1, 2, 3]]})),
    ))
    .unwrap_err();
    assert_eq!(
        iiopbench::words::flags(&e.to_string()),
        "--args: parameter m: value: 1 elements for an array of 2"
    );
    let e = call(&opts(
        &srv,
        "Shapes::Drawing::greet",
        Some(json!({"who": "x"})),
    ))
    .unwrap_err();
    assert_eq!(
        iiopbench::words::flags(&e.to_string()),
        "--args: missing parameter \"mark\" of greet"
    );
    let e = call(&opts(&srv, "Shapes::Drawing::nope", None)).unwrap_err();
    assert!(iiopbench::words::flags(&e.to_string()).starts_with("--op \"Shapes::Drawing::nope\": interface Shapes::Drawing has no operation nope (it has: version, _get_title"), "{e}");
    // Sink answers defaults: the union's first member, zero point, empty path.
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::transform",
            json!({"s": {"_d": "SQUARE", "corner": {"x": 1, "y": 1}}, "origin": {"x": 3, "y": 4}})
        ),
        json!({"return": {"_d": "CIRCLE", "radius": 0.0}, "origin": {"x": 0.0, "y": 0.0}, "trail": []})
    );
}

#[test]
fn exceptions_print_by_name_with_members() {
    let fixed = r#"fixed:{"transform": {"raise": {"_id": "IDL:example.org/Shapes/Invalid:1.0", "reason": "no", "code": 7}}, "greet": {"return": "fixed!"}}"#;
    let srv = server("Shapes::Drawing", fixed);
    let (j, fine) = call(&opts(
        &srv,
        "Shapes::Drawing::transform",
        Some(json!({"s": {"_d": "CIRCLE", "radius": 1}, "origin": {"x": 0, "y": 0}})),
    ))
    .unwrap();
    assert!(!fine);
    assert_eq!(
        j,
        json!({"exception": "Invalid", "_id": "IDL:example.org/Shapes/Invalid:1.0", "reason": "no", "code": 7})
    );
    assert_eq!(
        ok(
            &srv,
            "Shapes::Drawing::greet",
            json!({"who": "a", "mark": "b"})
        ),
        json!({"return": "fixed!"})
    );
    // A server of the base interface does not know Drawing's operations.
    let base = server("Shapes::Base", "echo");
    let (j, fine) = call(&opts(
        &base,
        "Shapes::Drawing::greet",
        Some(json!({"who": "a", "mark": "b"})),
    ))
    .unwrap();
    assert!(!fine);
    assert_eq!(
        j,
        json!({"system_exception": "BAD_OPERATION", "_id": "IDL:omg.org/CORBA/BAD_OPERATION:1.0", "minor": "0x4f4d0002", "vendor": "Omg", "completed": "COMPLETED_NO"})
    );
    // The exit status of the command is 1 for an exception.
    let ior = base.ior().to_string();
    let idl = idl().display().to_string();
    assert_eq!(
        iiopbench::main_with_args([
            "iiopbench",
            "call",
            "--idl",
            &idl,
            "--target",
            &ior,
            "--op",
            "Shapes::Drawing::greet",
            "--args",
            r#"["a","b"]"#,
            "--compact"
        ]),
        1
    );
    assert_eq!(
        iiopbench::main_with_args([
            "iiopbench",
            "call",
            "--idl",
            &idl,
            "--target",
            &ior,
            "--op",
            "Shapes::Base::version",
            "--compact"
        ]),
        0
    );
}

#[test]
fn is_a_answers_for_the_interface_and_its_bases() {
    let srv = server("Shapes::Drawing", "echo");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = iiop_bench_idl::client::BenchClient::connect(srv.ior(), &Default::default())
            .await
            .unwrap();
        for (id, want) in [
            ("IDL:example.org/Shapes/Drawing:1.0", true),
            ("IDL:example.org/Shapes/Base:1.0", true),
            ("IDL:omg.org/CORBA/Object:1.0", true),
            ("IDL:Bench/Perf:1.0", false),
        ] {
            assert_eq!(c.is_a(id).await.unwrap(), want, "{id}");
        }
    });
}

/// Real IDL no one here wrote: omniORB's CosNaming (Debian omniorb-idl,
/// installed by scripts/install-deps), served by the dynamic skeleton
/// and called by `call`, including a user exception with a nested
/// sequence of structs and an enum.
#[test]
fn cos_naming_from_omniorb_idl() {
    let cos = PathBuf::from("/usr/share/idl/omniORB/COS/CosNaming.idl");
    if !cos.exists() {
        common::skip_or_fail(
            "cos_naming_from_omniorb_idl",
            &format!(
                "{} is missing (scripts/install-deps installs omniorb-idl)",
                cos.display()
            ),
        );
        return;
    }
    let fixed = r#"fixed:{"resolve": {"raise": {"_id": "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0", "why": "not_context", "rest_of_name": [{"id": "a", "kind": "b"}]}}}"#;
    let o = IdlServeOpts {
        idl: cos.clone(),
        include: vec![],
        interface: Some("CosNaming::NamingContextExt".into()),
        behaviour: fixed.into(),
    };
    let (srv, _) = start(&o, loopback()).unwrap();
    let ior = srv.ior().to_string();
    let path = cos.display().to_string();
    let run = |op: &str, args: serde_json::Value| {
        let a = args.to_string();
        let argv = [
            "iiopbench",
            "call",
            "--idl",
            &path,
            "--target",
            &ior,
            "--op",
            op,
            "--args",
            &a,
        ];
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Call(o) => call(&o.engine().unwrap()).unwrap(),
            _ => unreachable!("call command"),
        }
    };
    assert_eq!(
        run(
            "CosNaming::NamingContext::resolve",
            json!({"n": [{"id": "a", "kind": "b"}]})
        ),
        (
            json!({"exception": "NotFound", "_id": "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0", "why": "not_context", "rest_of_name": [{"id": "a", "kind": "b"}]}),
            false
        )
    );
    assert_eq!(
        run("CosNaming::NamingContext::list", json!({"how_many": 10})),
        (json!({"bl": [], "bi": null}), true)
    );
    assert_eq!(
        run(
            "CosNaming::NamingContextExt::to_string",
            json!({"n": [{"id": "x", "kind": ""}]})
        ),
        (json!({"return": ""}), true)
    );
    assert_eq!(
        run(
            "CosNaming::NamingContext::bind",
            json!([[{"id": "x", "kind": ""}], ior.clone()])
        ),
        (json!({}), true)
    );
}

/// Without --target, `call` talks to our reference server embedded in the
/// process, as the bench commands do.
#[test]
fn call_without_target_uses_the_embedded_reference_server() {
    let idl = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/idl/bench.idl")
        .display()
        .to_string();
    let run = |op: &str, args: &str| {
        let argv = [
            "iiopbench",
            "call",
            "--idl",
            &idl,
            "--op",
            op,
            "--args",
            args,
        ];
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Call(o) => call(&o.engine().unwrap()).unwrap(),
            _ => unreachable!("call command"),
        }
    };
    assert_eq!(
        run("Bench::Perf::echo_wstring", r#"{"s": ["añ€", ""]}"#),
        (json!({"return": ["añ€", ""]}), true)
    );
    assert_eq!(
        run("Bench::Perf::echo_color", r#"[["BLUE", 0]]"#),
        (json!({"return": ["BLUE", "RED"]}), true)
    );
    let (j, ok) = run("Bench::Perf::get_single", "[3]");
    assert!(ok);
    let ior: iiop_giop::Ior = j["return"].as_str().unwrap().parse().unwrap();
    assert_eq!(ior.type_id, "IDL:Bench/Single:1.0");
    assert_eq!(&ior.iiop_profile().unwrap().object_key[..], b"Single3");
    let (j, ok) = run("Bench::Perf::get_single", "[100000]");
    assert!(!ok);
    assert_eq!(j["system_exception"], "BAD_PARAM");
    assert_eq!(j["completed"], "COMPLETED_NO");
}

#[test]
fn the_idl_server_serves_tls_only_and_says_so_in_its_ior() {
    use iiop_giop::ior::Ior;
    use iiop_transport::hosted::TlsServer;
    use iiop_transport::tls::{server_config, test_pki::TestPki};

    let pki = TestPki::new("idl-serve");
    let o = IdlServeOpts {
        idl: idl(),
        include: vec![],
        interface: Some("Shapes::Drawing".into()),
        behaviour: "echo".into(),
    };
    let tls = TlsServer {
        config: server_config(&pki.server_cert, &pki.server_key, None).expect("TLS config"),
        client_certificates: false,
    };
    let (srv, _) = start(
        &o,
        IdlServerOptions {
            tls: Some(tls),
            ..loopback()
        },
    )
    .expect("server starts");
    // As our reference server's TLS IORs: plain port 0, the listening port
    // in TAG_SSL_SEC_TRANS.
    let ior: Ior = srv.ior().to_string().parse().unwrap();
    let p = ior.iiop_profile().expect("an IIOP profile");
    assert_eq!(p.port, 0);
    let decoded = iiopbench::cmd::ior::render_text(
        &iiopbench::cmd::ior::decode_str(&srv.ior().to_string()).unwrap(),
    );
    let ssl = decoded
        .lines()
        .find(|l| l.contains("TAG_SSL_SEC_TRANS"))
        .unwrap_or_else(|| panic!("no TAG_SSL_SEC_TRANS in\n{decoded}"));
    assert!(ssl.contains(&srv.addr().port().to_string()), "{ssl}");
    // A call with the CA goes through over TLS …
    let ior_s = srv.ior().to_string();
    let idl_s = idl().display().to_string();
    let ca = pki.ca.display().to_string();
    let argv = |with_ca: bool| {
        let mut a = vec![
            "iiopbench",
            "call",
            "--idl",
            &idl_s,
            "--target",
            &ior_s,
            "--op",
            "Shapes::Drawing::transform",
            "--timeout",
            "10s",
            "--args",
            r#"[{"_d": "TRIANGLE", "label": "tri"}, {"x": 0, "y": 0}]"#,
        ];
        if with_ca {
            a.extend(["--tls-ca", &ca]);
        }
        match Cli::try_parse_from(a).expect("parses").command {
            Command::Call(o) => o.engine().unwrap(),
            _ => unreachable!("call command"),
        }
    };
    let (j, fine) = call(&argv(true)).expect("call over TLS works");
    assert!(fine, "{j}");
    assert_eq!(j["return"], json!({"_d": "TRIANGLE", "label": "tri"}));
    // … and one without a CA to verify the server is refused up front, in
    // one line that says what is missing.
    let e = iiopbench::words::flags(&format!(
        "{:#}",
        call(&argv(false)).expect_err("no CA, no TLS")
    ));
    assert!(e.contains("--tls-ca") && !e.contains('\n'), "{e}");
    assert_eq!(srv.handler().counters().snapshot().calls, 1);
}
