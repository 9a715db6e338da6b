//! Black-box: `suite fixtures/suites/ttcp-1996.toml --quick` against the
//! embedded server chained into `report`, with every SVG and the HTML page
//! parsed as XML and the expected series (types × modes × paths) looked
//! up; `compare` and `merge` on hand-made results with known histograms.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use iiopbench_engine::compare::{self, Basis, Verdict};
use iiopbench_engine::hist::Latency;
use iiopbench_engine::results::{self, Case, CaseParams, Placement, Results, TargetInfo};

fn tmp(name: &str) -> PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> i32 {
    iiopbench::main_with_args(std::iter::once("iiopbench").chain(args.iter().copied()))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `<text>` of an SVG document, parsed as XML.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

const TYPES: [&str; 6] = ["short", "char", "long", "octet", "double", "perfstruct"];

#[test]
fn ttcp_quick_suite_then_report() {
    let dir = tmp("ttcp");
    let json = dir.join("ttcp.json");
    let rep = dir.join("report");
    let suite = repo().join("fixtures/suites/ttcp-1996.toml");
    let code = run(&[
        "suite",
        suite.to_str().unwrap(),
        "--quick",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--report",
        rep.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let r = results::read(&json).unwrap();
    assert_eq!(r.kind, "suite");
    assert!(r.outcome.complete, "{:?}", r.outcome.failure);
    assert_eq!(r.params["suite"], "ttcp-1996");
    assert_eq!(r.params["quick"], true);
    // 6 cases × 6 types × 2 sizes, plus breakdown: 2 types × 2 modes × 1 size… ×2 sizes.
    assert_eq!(r.cases.len(), 6 * 6 * 2 + 2 * 2 * 2);
    for c in &r.cases {
        assert_eq!(c.params.extra["command"], "throughput", "{}", c.name);
        assert_eq!(c.params.extra["target"], "ours", "{}", c.name);
        assert!([1024, 4096].contains(&c.params.size), "{}", c.name);
        // Calls stop at the first one reaching --total 256KiB.
        let per_call = c.bytes / c.calls;
        assert_eq!(c.bytes % c.calls, 0, "{}", c.name);
        assert!(
            c.bytes >= 256 * 1024 && c.bytes - per_call < 256 * 1024,
            "{}: {}",
            c.name,
            c.bytes
        );
        assert!(c.errors.is_empty(), "{}: {:?}", c.name, c.errors);
    }
    let per_case = |id: &str| {
        r.cases
            .iter()
            .filter(|c| c.params.extra["suite_case"] == id)
            .count()
    };
    assert_eq!(per_case("oneway-dii"), 12);
    assert_eq!(per_case("breakdown"), 8);

    // The page and every figure are well-formed, and the page embeds them.
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc =
        roxmltree::Document::parse_with_options(&html, opt).expect("index.html is well-formed XML");
    let inline = doc.descendants().filter(|n| n.has_tag_name("svg")).count();
    assert!(!html.contains("<script") && !html.contains("src=\"http"));
    let mut figs: Vec<PathBuf> = std::fs::read_dir(&rep)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    figs.sort();
    // 8 throughput (6 cases + breakdown's oneway and twoway), 8 percentile
    // (every twoway case at each of 2 sizes), 2 breakdown.
    assert_eq!(figs.len(), 18, "{figs:?}");
    assert_eq!(inline, 18);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    let mut titles = BTreeMap::new();
    for f in &figs {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(md.contains(&format!("]({name})")), "report.md links {name}");
        let texts = svg_texts(&std::fs::read_to_string(f).unwrap());
        titles.insert(texts[0].clone(), texts);
    }
    for (mode, path, case) in [
        ("oneway", "typed", "oneway-static"),
        ("twoway", "typed", "twoway-static"),
        ("oneway", "dynamic", "oneway-dii"),
        ("twoway", "dynamic", "twoway-dii"),
        ("oneway", "reuse", "oneway-reuse"),
        ("twoway", "reuse", "twoway-reuse"),
    ] {
        let title = format!("Throughput: throughput · {mode} · path={path} · [{case}]");
        let texts = titles
            .get(&title)
            .unwrap_or_else(|| panic!("no figure {title:?}: {:?}", titles.keys()));
        for t in TYPES {
            assert!(
                texts.iter().any(|x| *x == format!("ours {t}")),
                "{title}: no series {t}: {texts:?}"
            );
        }
        assert!(
            texts.iter().any(|x| x == "1KiB") && texts.iter().any(|x| x == "4KiB"),
            "{texts:?}"
        );
    }
    let pct = titles
        .get("Latency percentiles: throughput · twoway · path=typed · [twoway-static] · 4KiB")
        .expect("percentile figure");
    assert!(pct.iter().any(|x| x == "ours perfstruct"), "{pct:?}");
    assert!(pct.iter().any(|x| x == "99%"), "{pct:?}");
    let bd = titles
        .get("Time breakdown: throughput · oneway · path=typed · [breakdown]")
        .expect("breakdown figure");
    for t in [
        "marshal",
        "write",
        "wait",
        "read",
        "demarshal",
        "ours octet 1KiB",
        "ours perfstruct 4KiB",
        "ours perfstruct 4KiB · server",
        "server upcall",
    ] {
        assert!(bd.iter().any(|x| x == t), "{t}: {bd:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn suite_refuses_missing_commands_before_running() {
    let dir = tmp("missing");
    let f = dir.join("s.toml");
    std::fs::write(
        &f,
        "name = \"s\"\ntitle = \"t\"\n\
         [[case]]\nid = \"a\"\njob = { bench = \"latency\", count = 10 }\n\
         [[case]]\nid = \"b\"\njob = { bench = \"nosuch\" }\n",
    )
    .unwrap();
    let o = iiopbench::cmd::suite::SuiteOpts {
        file: f.clone(),
        target: vec![],
        all_orbs: false,
        quick: false,
        json: Some(dir.join("out.json")),
        report: None,
        ready_timeout: std::time::Duration::from_secs(1),
        quiet: true,
    };
    let e = iiopbench::cmd::suite::run_suite(&o, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("case \"b\" needs `iiopbench bench nosuch`")
            && e.contains("throughput, latency"),
        "{e}"
    );
    // Nothing ran, nothing was written.
    assert!(!dir.join("out.json").exists());
    // Every case of the seed-001 suite is a job this iiopbench has, and
    // one that can run (loading checks every case, full and quick).
    let s = iiopbench_engine::suite::StudySuite::load(
        &repo().join("fixtures/suites/application-2002.toml"),
    )
    .unwrap();
    let plan = s.plan(false).unwrap();
    let kinds: Vec<&str> = plan.iter().map(|(_, j)| j.kind()).collect();
    for c in ["closed", "params", "dispatch"] {
        assert!(kinds.contains(&c), "{c}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_suite_file_parses_and_quick_plans_are_smaller() {
    for f in [
        "ttcp-1996",
        "application-2002",
        "aton-2001",
        "network-2003-loopback",
        "babar-1998",
    ] {
        let s = iiopbench_engine::suite::StudySuite::load(
            &repo().join(format!("fixtures/suites/{f}.toml")),
        )
        .unwrap();
        assert_eq!(s.name, f);
        let (full, quick) = (s.plan(false).unwrap(), s.plan(true).unwrap());
        assert!(!quick.is_empty() && quick.len() <= full.len(), "{f}");
        assert_ne!(
            quick.iter().map(|q| &q.1).collect::<Vec<_>>(),
            full.iter().map(|q| &q.1).collect::<Vec<_>>(),
            "{f}: quick is a reduction"
        );
    }
    let lab = iiopbench_engine::suite::StudySuite::load(
        &repo().join("fixtures/suites/network-2003.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(lab.contains("iiopbench lab suite"), "{lab}");
    let s =
        iiopbench_engine::suite::StudySuite::load(&repo().join("fixtures/suites/ttcp-1996.toml"))
            .unwrap();
    let q = s.plan(true).unwrap();
    let job = &q.iter().find(|c| c.0.id == "oneway-dii").unwrap().1;
    let iiopbench_engine::job::Job::Throughput(t) = job else {
        panic!("{job:?}")
    };
    assert_eq!(t.sizes.0, [1024, 4096]);
    assert_eq!(t.total, 256 * 1024);
    assert!(t.dynamic);
    assert_eq!(t.placement.runs, Some(1));
}

fn lat_case(name: &str, mode: &str, size: u64, values_ns: &[u64], mbps: f64) -> Case {
    let mut h = Latency::new();
    for &v in values_ns {
        h.record_ns(v);
    }
    Case {
        name: name.into(),
        params: CaseParams {
            ty: "octet".into(),
            size,
            mode: mode.into(),
            extra: BTreeMap::new(),
        },
        calls: values_ns.len() as u64,
        bytes: values_ns.len() as u64 * size,
        seconds: 1.0,
        calls_per_sec: values_ns.len() as f64,
        throughput_mbps: mbps,
        latency_us: Some(h.summary()),
        histogram: Some(h.to_base64()),
        ..Default::default()
    }
}

fn file(kind: &str, cases: Vec<Case>) -> Results {
    let mut r = Results::new(kind, Vec::new());
    r.placement = Placement::default();
    r.target = TargetInfo::default();
    r.cases = cases;
    r.outcome.complete = true;
    r
}

/// A oneway client can send faster than its server takes the calls in:
/// then the server's count is the throughput, and `compare` must judge by
/// it (and say so), not by what the client wrote.
#[test]
fn compare_judges_oneways_by_what_the_server_counted() {
    let oneway = |name: &str, size: u64, sent: f64, counted: Option<f64>| Case {
        receiver_throughput_mbps: counted,
        ..lat_case(name, "oneway", size, &[10_000; 100], sent)
    };
    let a = file(
        "throughput",
        vec![
            // The clients send alike, B's server takes 2x more.
            oneway("oneway 1KiB", 1024, 1000.0, Some(500.0)),
            // B's client sends 2x more, its server takes the same.
            oneway("oneway 2KiB", 2048, 1000.0, Some(600.0)),
            // Only A's server counted: the clients' figures are compared.
            oneway("oneway 4KiB", 4096, 1000.0, Some(400.0)),
        ],
    );
    let b = file(
        "throughput",
        vec![
            oneway("oneway 1KiB", 1024, 1010.0, Some(1000.0)),
            oneway("oneway 2KiB", 2048, 2000.0, Some(610.0)),
            oneway("oneway 4KiB", 4096, 800.0, None),
        ],
    );
    let rows = compare_ab(&a, &b, &BTreeMap::new());
    let row = |n: &str| rows.iter().find(|r| r.case == n).unwrap();
    let (r1, r2, r4) = (row("oneway 1KiB"), row("oneway 2KiB"), row("oneway 4KiB"));
    assert_eq!(
        (r1.throughput_basis, r1.throughput),
        (Basis::Receiver, Verdict::Faster)
    );
    assert!((r1.throughput_ratio.unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(
        (r2.throughput_basis, r2.throughput),
        (Basis::Receiver, Verdict::Same)
    );
    assert!((r2.throughput_ratio.unwrap() - 610.0 / 600.0).abs() < 1e-12);
    assert_eq!(
        (r4.throughput_basis, r4.throughput),
        (Basis::Sender, Verdict::Slower)
    );
    assert!((r4.throughput_ratio.unwrap() - 0.8).abs() < 1e-12);

    // The noise of repeated runs is taken from the same figure: the
    // server's counts vary by 0.5 %, the client's by 30 %.
    let runs: Vec<Results> = [(1000.0, 600.0), (1300.0, 603.0), (700.0, 597.0)]
        .iter()
        .map(|&(sent, counted)| {
            file(
                "throughput",
                vec![oneway("oneway 2KiB", 2048, sent, Some(counted))],
            )
        })
        .collect();
    let noise = compare::noise_from_runs(&runs);
    let recv = noise[&(first_case_key(&runs[0]), Basis::Receiver)];
    assert!((recv - 0.015).abs() < 1e-9, "{recv}");
    assert!(noise[&(first_case_key(&runs[0]), Basis::Sender)] > 0.8);
    let rows = compare_ab(&a, &b, &noise);
    let r2 = rows.iter().find(|r| r.case == "oneway 2KiB").unwrap();
    // 1.7 % more counted, beyond 1.5 %: faster.
    assert_eq!(r2.throughput, Verdict::Faster);

    // The table says whose count each ratio is, and the command runs.
    let text = iiopbench::cmd::compare::render(&rows);
    let line = |n: &str| text.lines().find(|l| l.contains(n)).unwrap().to_string();
    for (case, ratio, basis) in [
        ("oneway 1KiB", "2.00x faster", "receiver"),
        ("oneway 4KiB", "0.800x slower", "sender"),
    ] {
        let l = line(case);
        assert!(l.contains(ratio) && l.contains(basis), "{text}");
    }
    let dir = tmp("compare-receiver");
    let (pa, pb) = compare_files(&dir, &a, &b);

    // For a CI job: the rows as JSON, and a failing exit when B is slower
    // anywhere (here the client-counted 4 KiB case), naming what was.
    assert_eq!(
        compare::slower(&rows),
        vec![(
            "oneway 4KiB".to_string(),
            vec!["throughput 0.800x".to_string()]
        )]
    );
    let (sa, sb) = (pa.to_str().unwrap(), pb.to_str().unwrap());
    let out = dir.join("cmp.json");
    let so = out.to_str().unwrap();
    assert_eq!(
        run(&["compare", sa, sb, "--json", so, "--fail-if-slower"]),
        1
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["schema"], compare::SCHEMA);
    assert_eq!(doc["b"], sb);
    let jrow = |n: &str| {
        doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["case"] == n)
            .unwrap()
            .clone()
    };
    let j1 = jrow("oneway 1KiB");
    assert_eq!(
        (&j1["throughput_counted_by"], &j1["throughput"], &j1["p50"]),
        (&"receiver".into(), &"faster".into(), &"same".into())
    );
    assert!((j1["throughput_ratio"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(jrow("oneway 4KiB")["throughput"], "slower");
    assert!(jrow("oneway 4KiB")["placements"].is_null());
    // Without the flag the same comparison succeeds; B against itself
    // passes the guard.
    assert_eq!(run(&["compare", sa, sb, "--json", so]), 0);
    assert_eq!(run(&["compare", sb, sb, "--fail-if-slower"]), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// B against A with a 10 % default noise and a 5 % minimum effect.
fn compare_ab(
    a: &Results,
    b: &Results,
    noise: &BTreeMap<(String, Basis), f64>,
) -> Vec<compare::Row> {
    compare::compare(("a", a, None), ("b", b, None), noise, 0.10, 0.05).unwrap()
}

/// Writes A and B into `dir` and checks that `iiopbench compare` accepts them.
fn compare_files(dir: &Path, a: &Results, b: &Results) -> (PathBuf, PathBuf) {
    let (pa, pb) = (dir.join("a.json"), dir.join("b.json"));
    results::write_atomic(&pa, &results::to_json(a)).unwrap();
    results::write_atomic(&pb, &results::to_json(b)).unwrap();
    assert_eq!(
        run(&["compare", pa.to_str().unwrap(), pb.to_str().unwrap()]),
        0
    );
    (pa, pb)
}

fn first_case_key(r: &Results) -> String {
    iiopbench_engine::merge::case_key(r, &r.cases[0], false)
}

#[test]
fn compare_judges_only_beyond_the_noise() {
    let around = |base: u64| {
        (0..2000u64)
            .map(|i| base + (i % 100) * 100)
            .collect::<Vec<_>>()
    };
    let a = file(
        "latency",
        vec![
            lat_case("echo 1KiB", "echo", 1024, &around(100_000), 100.0),
            lat_case("echo 2KiB", "echo", 2048, &around(100_000), 100.0),
            lat_case("echo 4KiB", "echo", 4096, &around(100_000), 100.0),
            lat_case("only in A", "echo", 8192, &around(100_000), 100.0),
        ],
    );
    let b = file(
        "latency",
        vec![
            // Twice as slow, intervals far apart.
            lat_case("echo 1KiB", "echo", 1024, &around(200_000), 50.0),
            // 1 % slower: intervals may not overlap with 2000 samples, but
            // below --min-effect.
            lat_case("echo 2KiB", "echo", 2048, &around(101_000), 105.0),
            // Faster.
            lat_case("echo 4KiB", "echo", 4096, &around(50_000), 150.0),
        ],
    );
    let rows = compare_ab(&a, &b, &BTreeMap::new());
    assert_eq!(rows.len(), 3);
    let r1 = rows.iter().find(|r| r.case == "echo 1KiB").unwrap();
    assert_eq!(
        (r1.p50, r1.p99, r1.throughput),
        (Verdict::Slower, Verdict::Slower, Verdict::Slower)
    );
    assert!((r1.throughput_ratio.unwrap() - 0.5).abs() < 1e-12);
    let p50 = r1.p50_ratio.unwrap();
    assert!((p50 - 204.95 / 104.95).abs() < 0.01, "{p50}");
    let r2 = rows.iter().find(|r| r.case == "echo 2KiB").unwrap();
    assert_eq!((r2.p50, r2.throughput), (Verdict::Same, Verdict::Same));
    let r3 = rows.iter().find(|r| r.case == "echo 4KiB").unwrap();
    assert_eq!((r3.p50, r3.throughput), (Verdict::Faster, Verdict::Faster));
    // A 5 % throughput gain is noise at 10 %, a change when repeated runs
    // say the case varies by 0.5 % (3 × 0.5 % → 1.5 %).
    let key_runs: Vec<Results> = [100.0, 100.5, 99.5]
        .iter()
        .map(|&m| {
            file(
                "latency",
                vec![lat_case("echo 2KiB", "echo", 2048, &around(100_000), m)],
            )
        })
        .collect();
    let noise = compare::noise_from_runs(&key_runs);
    assert_eq!(noise.len(), 1);
    assert!(noise.keys().all(|(_, b)| *b == Basis::Sender), "{noise:?}");
    let thr = *noise.values().next().unwrap();
    assert!((thr - 0.015).abs() < 1e-9, "{thr}");
    let rows = compare_ab(&a, &b, &noise);
    let r2 = rows.iter().find(|r| r.case == "echo 2KiB").unwrap();
    assert_eq!(r2.throughput, Verdict::Faster);

    // Through the CLI.
    let dir = tmp("compare");
    let (pa, _) = compare_files(&dir, &a, &b);
    let empty = dir.join("e.json");
    results::write_atomic(&empty, &results::to_json(&file("latency", vec![]))).unwrap();
    assert_eq!(
        run(&["compare", pa.to_str().unwrap(), empty.to_str().unwrap()]),
        1
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn merge_is_lossless() {
    let xs: Vec<u64> = (0..3000u64).map(|i| 20_000 + i * 37).collect();
    let ys: Vec<u64> = (0..1000u64).map(|i| 900_000 + i * 1013).collect();
    let a = file(
        "latency",
        vec![
            lat_case("echo 1KiB", "echo", 1024, &xs, 10.0),
            lat_case("echo 2KiB", "echo", 2048, &xs[..10], 1.0),
        ],
    );
    let mut bc = lat_case("echo 1KiB", "echo", 1024, &ys, 10.0);
    bc.seconds = 3.0;
    bc.errors.insert("timeout".into(), 2);
    let b = file(
        "latency",
        vec![bc, lat_case("echo 64KiB", "echo", 65536, &ys[..5], 1.0)],
    );
    let dir = tmp("merge");
    let (pa, pb, pm) = (dir.join("a.json"), dir.join("b.json"), dir.join("m.json"));
    results::write_atomic(&pa, &results::to_json(&a)).unwrap();
    results::write_atomic(&pb, &results::to_json(&b)).unwrap();
    assert_eq!(
        run(&[
            "merge",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "--json",
            pm.to_str().unwrap()
        ]),
        0
    );
    let m = results::read(&pm).unwrap();
    let names: Vec<&str> = m.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["echo 1KiB", "echo 2KiB", "echo 64KiB"]);
    let c = &m.cases[0];
    assert_eq!(c.calls, 4000);
    assert_eq!(c.bytes, 4000 * 1024);
    assert_eq!(c.seconds, 4.0);
    assert_eq!(c.calls_per_sec, 1000.0);
    assert_eq!(c.errors["timeout"], 2);
    assert_eq!(c.extra["merged_runs"], 2);
    let mut all = Latency::new();
    for &v in xs.iter().chain(&ys) {
        all.record_ns(v);
    }
    let merged = Latency::from_base64(c.histogram.as_deref().unwrap()).unwrap();
    assert_eq!(merged.inner(), all.inner());
    assert_eq!(c.latency_us.unwrap(), all.summary());
    // Each file measured the case once: the merged case holds both runs,
    // and its intervals span them (not the first file's alone).
    assert_eq!(c.runs.len(), 2);
    let p50 = c.intervals["p50"];
    assert_eq!(p50.n, 2);
    let (pa50, pb50) = (
        a.cases[0].latency_us.unwrap().p50,
        b.cases[0].latency_us.unwrap().p50,
    );
    assert_eq!((p50.min, p50.max), (pa50, pb50));
    assert_eq!(m.cases[1].calls, 10);
    assert_eq!(m.cases[2].calls, 5);
    // Fits are recomputed over the merged means: three sizes, one series.
    assert_eq!(m.fits.len(), 1);
    assert_eq!(m.fits[0].label, "echo octet");
    assert_eq!(m.fits[0].points, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files of several `--runs` each merge into one case holding every run,
/// and `compare` names a side whose runs fall in two groups (its verdicts
/// compare mixtures of them).
#[test]
fn merged_runs_all_count_and_runs_in_two_groups_are_named() {
    let ping = |p50s: &[u64]| {
        let runs = p50s
            .iter()
            .map(|&ns| vec![lat_case("ping", "ping", 0, &[ns; 50], 0.0)])
            .collect();
        file("latency", iiopbench_engine::runs::aggregate(runs))
    };
    let dir = tmp("groups");
    let path = |n: &str| dir.join(n).to_str().unwrap().to_string();
    // A: two files of three runs, at 7.85 or 8.79 µs; B: steady.
    for (name, p50s) in [
        ("a1.json", &[7_850, 7_850, 7_850][..]),
        ("a2.json", &[8_790, 8_790, 8_790][..]),
        ("b.json", &[8_550, 8_560, 8_540, 8_550, 8_555, 8_545][..]),
    ] {
        results::write_atomic(Path::new(&path(name)), &results::to_json(&ping(p50s))).unwrap();
    }
    let merge = [
        "merge",
        &path("a1.json"),
        &path("a2.json"),
        "--json",
        &path("a.json"),
    ];
    assert_eq!(run(&merge), 0);
    let a = results::read(Path::new(&path("a.json"))).unwrap();
    assert_eq!(a.cases[0].runs.len(), 6);
    assert_eq!(a.cases[0].intervals["p50"].n, 6);
    let cmp = [
        "compare",
        &path("a.json"),
        &path("b.json"),
        "--json",
        &path("c.json"),
    ];
    assert_eq!(run(&cmp), 0);
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("c.json")).unwrap()).unwrap();
    let split = &c["rows"][0]["split_runs"];
    assert_eq!(split.as_array().map(Vec::len), Some(1), "{c}");
    let said = split[0].as_str().unwrap();
    assert!(said.starts_with("A: p50 7.8"), "{said}");
    assert!(said.contains("µs in 3 runs, 8.7"), "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_draws_fits_intervals_and_the_interop_matrix() {
    // Latency sweep: mean = 50 µs + 1 ns/B exactly (one value per case).
    let sizes = [1024u64, 4096, 16384];
    let cases: Vec<Case> = sizes
        .iter()
        .map(|&s| lat_case(&format!("echo octet {s}"), "echo", s, &[50_000 + s; 1], 0.0))
        .collect();
    let mut lat = file("latency", cases);
    lat.fits = iiopbench_engine::merge::refit(&lat);
    assert_eq!(lat.fits.len(), 1);
    assert!((lat.fits[0].a_us - 50.0).abs() < 0.1, "{:?}", lat.fits[0]);
    assert!(
        (lat.fits[0].b_us_per_byte - 0.001).abs() < 1e-5,
        "{:?}",
        lat.fits[0]
    );
    // A workload case with R and its interval.
    let mut w = lat_case("closed C=4 S=2", "closed", 0, &[1000], 0.0);
    w.histogram = None;
    w.extra.insert("R_ms".into(), 12.5.into());
    w.extra.insert("R_ms_ci95".into(), 0.5.into());
    w.extra.insert("X_per_s".into(), 7.0.into());
    w.extra
        .insert("X_per_s_ci".into(), serde_json::json!([6.5, 7.5]));
    // The workload engine's form.
    w.extra.insert(
        "r_ci95".into(),
        serde_json::json!({"mean": 1250.0, "half_width": 50.0, "relative": 0.04, "batches": 10}),
    );
    let wl = file("closed", vec![w]);
    // A 2 × 2 interop matrix.
    let cell = |cl: &str, sv: &str, res: &str| {
        let mut c = Case {
            name: format!("{cl} client x {sv} server"),
            ..Default::default()
        };
        for (k, v) in [("client", cl), ("server", sv), ("result", res)] {
            c.extra.insert(k.into(), v.into());
        }
        c
    };
    let im = file(
        "interop-matrix",
        vec![
            cell("ours", "omniorb", "pass 195/195"),
            cell("ours", "jacorb", "FAIL 3/169"),
            cell("omniorb", "ours", "pass 40/40"),
        ],
    );
    let dir = tmp("figs");
    let inputs = vec![
        ("lat.json".to_string(), lat),
        ("wl.json".to_string(), wl),
        ("matrix.json".to_string(), im),
    ];
    let figs = iiopbench::cmd::report::write(&inputs, &dir.join("r")).unwrap();
    let titles: Vec<&str> = figs.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Latency vs size: latency · echo",
            "Latency percentiles: latency · echo · 1KiB",
            "Latency percentiles: latency · echo · 4KiB",
            "Latency percentiles: latency · echo · 16KiB",
            "R (response time, µs) with 95% interval: closed · closed",
            "R_ms with 95% interval: closed · closed",
            "X_per_s with 95% interval: closed · closed",
            "Interop matrix: matrix (rows: clients, columns: servers)",
        ]
    );
    let texts = svg_texts(&figs[0].svg);
    assert!(texts.iter().any(|t| t == "lat octet"), "{texts:?}");
    // The line is the file's fit (HDR means are quantized to 0.1 %).
    let f = &inputs[0].1.fits[0];
    let fit = format!(
        "lat octet fit: {:.1} µs + {:.3} ns/B",
        f.a_us,
        f.b_us_per_byte * 1e3
    );
    assert!(texts.contains(&fit), "{fit}: {texts:?}");
    let texts = svg_texts(&figs[4].svg);
    assert!(texts.iter().any(|t| t == "wl closed C=4 S=2"), "{texts:?}");
    let texts = svg_texts(&figs[7].svg);
    for t in ["ours", "omniorb", "jacorb", "pass 195/195", "FAIL 3/169"] {
        assert!(texts.iter().any(|x| x == t), "{t}: {texts:?}");
    }
    // Columns omniorb, jacorb, ours; cells never measured stay grey.
    let doc = roxmltree::Document::parse(&figs[7].svg).unwrap();
    let fills: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .filter_map(|n| n.attribute("fill"))
        .collect();
    assert_eq!(
        fills,
        ["white", "#A5D6A7", "#EF9A9A", "#E0E0E0", "#E0E0E0", "#E0E0E0", "#A5D6A7"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn case_identity_keeps_suite_cases_apart_and_ignores_the_target() {
    let tagged = |suite_case: &str, target: &str| {
        let mut c = lat_case("oneway octet 128KiB", "oneway", 131072, &[1000], 1.0);
        for (k, v) in [
            ("command", "throughput"),
            ("suite_case", suite_case),
            ("target", target),
        ] {
            c.params.extra.insert(k.into(), v.into());
        }
        c
    };
    let r = file("suite", vec![]);
    use iiopbench_engine::merge::case_key;
    let (a, b, c) = (
        tagged("oneway-static", "ours"),
        tagged("breakdown", "ours"),
        tagged("oneway-static", "omniorb"),
    );
    assert_ne!(case_key(&r, &a, false), case_key(&r, &b, false));
    assert_eq!(case_key(&r, &a, false), case_key(&r, &c, false));
    assert_ne!(case_key(&r, &a, true), case_key(&r, &c, true));
    assert_eq!(
        case_key(&r, &a, false),
        "throughput | oneway | octet | 131072 | suite_case=\"oneway-static\""
    );
}

#[test]
fn runs_decide_verdicts_and_mixed_placements_are_refused_or_split() {
    // Two runs files folded from three runs each: B's throughput
    // intervals clear of A's on one case, overlapping on the other.
    let fold = |vals: &[(f64, f64)]| {
        iiopbench_engine::runs::aggregate(
            vals.iter()
                .map(|&(x, y)| {
                    vec![
                        lat_case("send 1KiB", "send", 1024, &[10_000; 50], x),
                        lat_case("send 2KiB", "send", 2048, &[10_000; 50], y),
                    ]
                })
                .collect(),
        )
    };
    let a = file(
        "throughput",
        fold(&[(100.0, 100.0), (102.0, 90.0), (98.0, 110.0)]),
    );
    let b = file(
        "throughput",
        fold(&[(120.0, 104.0), (121.0, 95.0), (119.0, 113.0)]),
    );
    assert_eq!(a.cases[0].intervals["throughput_mbps"].n, 3);
    let rows = compare_ab(&a, &b, &BTreeMap::new());
    assert_eq!(rows[0].throughput, Verdict::Faster, "{rows:?}");
    assert_eq!(rows[1].throughput, Verdict::Same, "{rows:?}");
    assert!(rows.iter().all(|r| r.placements.is_none()));

    // The same runs, B placed on one CPU: refused, unless asked.
    let d = tmp("mixed");
    let (pa, pb) = (d.join("a.json"), d.join("b.json"));
    let mut a = a;
    a.placement = Placement::new(vec![0], Some(vec![1]));
    let mut b = b;
    b.placement = Placement::new(vec![0], Some(vec![0]));
    results::write_atomic(&pa, &results::to_json(&a)).unwrap();
    results::write_atomic(&pb, &results::to_json(&b)).unwrap();
    let (sa, sb) = (pa.to_str().unwrap(), pb.to_str().unwrap());
    assert_ne!(run(&["compare", sa, sb]), 0);
    assert_eq!(run(&["compare", sa, sb, "--mixed-placement"]), 0);
    let rows = compare_ab(&a, &b, &BTreeMap::new());
    assert!(rows[0]
        .placements
        .as_ref()
        .unwrap()
        .0
        .starts_with("cross-cpu"));

    // A report of both never puts the two placements in one figure, and
    // says why.
    let out = d.join("report");
    assert_eq!(
        run(&["report", sa, sb, "--report", out.to_str().unwrap()]),
        0
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("2 different placements"), "{md}");
    let titles: Vec<&str> = md.lines().filter(|l| l.starts_with("### ")).collect();
    assert!(!titles.is_empty());
    for t in &titles {
        assert!(
            t.contains("placed cross-cpu") ^ t.contains("placed same-cpu"),
            "{t}"
        );
    }

    // A version 1 file (no runs, no placement details) still reads.
    let mut v: serde_json::Value = serde_json::from_str(&results::to_json(&a)).unwrap();
    v["schema_version"] = 1.into();
    for c in v["cases"].as_array_mut().unwrap() {
        let c = c.as_object_mut().unwrap();
        c.remove("runs");
        c.remove("intervals");
    }
    v["placement"].as_object_mut().unwrap().remove("chosen");
    let old = d.join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let r = results::read(&old).unwrap();
    assert_eq!(r.schema_version, 1);
    assert!(r.cases[0].intervals.is_empty());
    assert_eq!(run(&["compare", old.to_str().unwrap(), sa]), 0);
    let _ = std::fs::remove_dir_all(&d);
}

/// Cases measured over several runs carry their intervals onto the page:
/// the throughput figure draws a whisker (a line and two caps) per case
/// with an interval and none for a single run, and the runs' noise
/// warnings are printed with the figures.
#[test]
fn report_shows_the_runs_intervals_and_noise_warnings() {
    let d = tmp("whiskers");
    let tp = |runs: &[&[f64]]| {
        let cases = runs
            .iter()
            .zip([1024u64, 4096, 16384])
            .map(|(r, size)| {
                let mut c = lat_case(
                    &format!("twoway octet {size}"),
                    "twoway",
                    size,
                    &[1000],
                    0.0,
                );
                c.throughput_mbps = r.iter().sum::<f64>() / r.len() as f64;
                c.intervals
                    .insert("throughput_mbps".into(), results::Interval::of(r));
                c
            })
            .collect();
        file("throughput", cases)
    };
    let lines = |r: &Results, name: &str| {
        let f = d.join(format!("{name}.json"));
        results::write_atomic(&f, &results::to_json(r)).unwrap();
        let out = d.join(name);
        assert_eq!(
            run(&[
                "report",
                f.to_str().unwrap(),
                "--report",
                out.to_str().unwrap()
            ]),
            0
        );
        let svg = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .contains("throughput")
            })
            .expect("a throughput figure");
        let svg = std::fs::read_to_string(svg).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let n = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .count();
        (n, std::fs::read_to_string(out.join("index.html")).unwrap())
    };
    // The same y axis for both (its ticks are lines too): the single
    // runs reach as high as the highest whisker.
    let top = results::Interval::of(&[280.0, 300.0, 320.0]);
    let (single, _) = lines(&tp(&[&[100.0], &[200.0], &[top.mean + top.ci95]]), "single");
    let mut noisy = tp(&[&[90.0, 100.0, 110.0], &[200.0], &[280.0, 300.0, 320.0]]);
    noisy.quality = Some(results::Quality {
        warnings: vec!["Warning: the machine was busy during twoway octet 1KiB".into()],
        runs: Vec::new(),
    });
    let (runs, page) = lines(&noisy, "runs");
    assert_eq!(runs, single + 2 * 3, "two whiskers of three lines each");
    assert!(
        page.contains("runs: the machine was busy during twoway octet 1KiB"),
        "{page}"
    );
}
