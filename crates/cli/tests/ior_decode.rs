//! `iiopbench ior decode` and `ior make`, black-box through the real
//! binary, checked against omniORB's `catior`: IORs handed out by our
//! server, by omniORB's and JacORB's bench servers and by omniNames (a
//! fixture), and IORs built byte by byte (a TAG_MULTIPLE_COMPONENTS
//! profile, an SSL component). Every field both tools print must agree.
//!
//! `catior` (Debian's omniorb package; scripts/install-deps) and the
//! vendor servers are required under `CI` (scripts/test installs and
//! builds them); elsewhere a test without them is SKIPPED with a reason.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-ior-{}-{name}", std::process::id()))
}

/// `catior`, if installed; panics under CI when it is not.
fn catior_installed() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v catior"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        common::skip_or_fail(
            "ior_decode",
            "catior is not installed (Debian package omniorb; scripts/install-deps)",
        );
    }
    found
}

/// Whether `orb`'s server is built; panics under CI when it is not.
fn vendor_available(orb: &str) -> bool {
    common::vendor_built("ior_decode", orb, true)
}

/// Run the iiopbench binary; returns (exit code, stdout, stderr).
fn iiopbench(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iiopbench runs");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `iiopbench ior decode --json - REF`, parsed.
fn decode_json(reference: &str) -> Value {
    let (code, out, err) = iiopbench(&["ior", "decode", "--json", "-", reference], None);
    assert_eq!(code, 0, "ior decode --json - {reference}: {err}");
    assert!(!err.contains("deprecated"), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn catior(ior: &str) -> String {
    let out = Command::new("catior")
        .arg("-x")
        .arg(ior)
        .output()
        .expect("catior runs");
    assert!(out.status.success(), "catior -x failed on {ior}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What catior prints, and we print too, for one profile.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    /// `IIOP 1.2 127.0.0.1 2809 0x4b6579 (3 bytes)`, `multiple`, or
    /// `unknown 0x42`.
    head: String,
    /// Vendor name as catior prints it (`omniORB (ATT\x00)`).
    orb_type: Option<String>,
    /// char native, char conversion, wchar native, wchar conversion.
    code_sets: Option<[String; 4]>,
    /// `port = P supports S requires R`.
    ssl: Option<String>,
    /// TAG_ALTERNATE_IIOP_ADDRESS entries, `host port`.
    alternates: Vec<String>,
    /// Tags of other components, as catior names them (`TAG_… ` word or
    /// `Unknown component tag N`).
    others: Vec<String>,
}

/// catior -x's output: type id and one [`Seen`] per profile.
fn parse_catior(text: &str) -> (String, Vec<Seen>) {
    let mut lines = text.lines().peekable();
    let type_id = lines
        .next()
        .and_then(|l| l.strip_prefix("Type ID: \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no type id in {text}"))
        .to_string();
    assert_eq!(lines.next(), Some("Profiles:"), "{text}");
    let mut profiles: Vec<Seen> = Vec::new();
    let mut cs: Vec<String> = Vec::new();
    for line in lines {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        // `N. ...` starts a profile.
        if let Some((n, rest)) = t.split_once(". ") {
            if n.chars().all(|c| c.is_ascii_digit()) && !line.starts_with(' ') {
                let mut s = Seen::default();
                if let Some(r) = rest.strip_prefix("Multiple Component Profile") {
                    s.head = "multiple".into();
                    let r = r.trim();
                    if !r.is_empty() {
                        component_line(&mut s, r, &mut cs);
                    }
                } else if let Some(r) = rest.strip_prefix("Unrecognised profile tag: ") {
                    s.head = format!("unknown {r}");
                } else {
                    s.head = rest.trim().to_string();
                }
                profiles.push(s);
                continue;
            }
        }
        let cur = profiles.last_mut().expect("a profile line first");
        component_line(cur, t, &mut cs);
    }
    (type_id, profiles)
}

fn component_line(s: &mut Seen, t: &str, cs: &mut Vec<String>) {
    let after_colon = |t: &str| t.split_once(':').map(|x| x.1.trim().to_string()).unwrap();
    if let Some(r) = t.strip_prefix("TAG_ORB_TYPE ") {
        s.orb_type = Some(r.to_string());
    } else if let Some(r) = t.strip_prefix("TAG_CODE_SETS ") {
        cs.clear();
        cs.push(after_colon(r));
    } else if t.starts_with("char conversion")
        || t.starts_with("wchar native")
        || t.starts_with("wchar conversion")
    {
        cs.push(after_colon(t));
        if cs.len() == 4 {
            s.code_sets = Some([cs[0].clone(), cs[1].clone(), cs[2].clone(), cs[3].clone()]);
        }
    } else if let Some(r) = t.strip_prefix("TAG_SSL_SEC_TRANS ") {
        s.ssl = Some(r.to_string());
    } else if let Some(r) = t.strip_prefix("TAG_ALTERNATE_IIOP_ADDRESS ") {
        s.alternates.push(r.to_string());
    } else if let Some(r) = t.strip_prefix("Unknown component tag ") {
        s.others.push(format!("tag {r}"));
    } else if t.starts_with("TAG_") {
        s.others
            .push(t.split_whitespace().next().unwrap().to_string());
    } else {
        panic!("catior line not understood: {t:?}");
    }
}

/// A code set as catior names it, from our JSON entry.
fn catior_code_set(v: &Value) -> String {
    match v["name"].as_str() {
        Some("UCS-2") => "UCS-2-level-1".into(),
        Some(n) => n.into(),
        None => format!("({})", v["hex"].as_str().unwrap()),
    }
}

/// catior's rendering of an ORB type: vendor, then its four octets.
fn catior_orb_type(t: u32) -> String {
    let vendor = match t {
        0x4154_5400 => "omniORB",
        0x4A41_4300 => "JacORB",
        0x5441_4F00 => "TAO",
        _ => "(unknown)",
    };
    let mut raw = String::new();
    for b in t.to_be_bytes() {
        if b.is_ascii_graphic() {
            raw.push(b as char);
        } else {
            raw.push_str(&format!("\\x{b:02x}"));
        }
    }
    format!("{vendor} ({raw})")
}

/// What we print, in catior's terms.
fn from_json(d: &Value) -> (String, Vec<Seen>) {
    let mut out = Vec::new();
    for p in d["profiles"].as_array().unwrap() {
        let mut s = Seen::default();
        let tag = p["tag"].as_u64().unwrap();
        s.head = match tag {
            0 => {
                let i = &p["iiop"];
                format!(
                    "IIOP {} {} {} 0x{}  ({} bytes)",
                    i["version"].as_str().unwrap(),
                    i["host"].as_str().unwrap(),
                    i["port"],
                    i["object_key_hex"].as_str().unwrap(),
                    i["object_key_length"]
                )
            }
            1 => "multiple".into(),
            t => format!("unknown {t:#x}"),
        };
        for c in p["components"].as_array().unwrap() {
            let v = &c["value"];
            match c["tag"].as_u64().unwrap() {
                0 => s.orb_type = Some(catior_orb_type(v["orb_type"].as_u64().unwrap() as u32)),
                1 => {
                    let list = |k: &str, w: &str| -> String {
                        v[k][w]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(catior_code_set)
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    s.code_sets = Some([
                        catior_code_set(&v["char"]["native"]),
                        list("char", "conversion"),
                        catior_code_set(&v["wchar"]["native"]),
                        list("wchar", "conversion"),
                    ]);
                }
                20 => {
                    s.ssl = Some(format!(
                        "port = {} supports {} requires {}",
                        v["port"], v["target_supports"]["bits"], v["target_requires"]["bits"]
                    ))
                }
                3 => s
                    .alternates
                    .push(format!("{} {}", v["host"].as_str().unwrap(), v["port"])),
                t => s.others.push(match c["name"].as_str() {
                    // catior names only some tags.
                    Some(n)
                        if n.starts_with("TAG_OMNIORB")
                            || n == "TAG_POLICIES"
                            || n == "TAG_CSI_SEC_MECH_LIST" =>
                    {
                        n.into()
                    }
                    _ => format!("tag {t}"),
                }),
            }
        }
        out.push(s);
    }
    (d["type_id"].as_str().unwrap().to_string(), out)
}

/// Decode `ior` with both tools and compare; returns our JSON.
fn agree_with_catior(ior: &str) -> Value {
    let ours = decode_json(ior);
    let (theirs_type, theirs) = parse_catior(&catior(ior));
    let (our_type, our_profiles) = from_json(&ours);
    assert_eq!(our_type, theirs_type, "type id of {ior}");
    assert_eq!(our_profiles, theirs, "profiles of {ior}");
    ours
}

/// The text output names the same things (spot check).
fn text_mentions(reference: &str, want: &[&str]) {
    let (code, out, err) = iiopbench(&["ior", "decode", reference], None);
    assert_eq!(code, 0, "{err}");
    for w in want {
        assert!(out.contains(w), "{w:?} not in:\n{out}");
    }
}

#[test]
fn our_servers_ior_decodes_as_catior_reads_it() {
    let server = RunningServer::start(ServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let ior = server.refs().ior.to_string();
    let port = server.addr().port();
    if catior_installed() {
        agree_with_catior(&ior);
    }
    let d = decode_json(&ior);
    assert_eq!(d["source"], "ior");
    assert_eq!(d["type_id"], "IDL:Bench/Perf:1.0");
    let p = &d["profiles"][0];
    assert_eq!(p["iiop"]["port"], port);
    assert_eq!(p["iiop"]["object_key"], "Bench");
    assert_eq!(p["components"][0]["value"]["vendor"], "iiopbench");
    assert_eq!(
        p["components"][1]["summary"],
        "char native ISO-8859-1 (0x00010001), conversion UTF-8 (0x05010001); \
         wchar native UTF-16 (0x00010109), conversion UCS-2 (0x00010100)"
    );
    text_mentions(
        &ior,
        &[
            &format!("IIOP 1.2 127.0.0.1 {port} (big-endian)"),
            "TAG_ORB_TYPE (tag 0): iiopbench (0x49494f50)",
        ],
    );
    server.stop().unwrap();
}

/// A vendor's bench server, started by its script, stopped by its pid.
struct Vendor {
    child: Child,
}

impl Vendor {
    /// Start `scripts/orbs/ORB/start --ior-file F` and return it with the
    /// IOR it printed (at most 180 s: a stale JacORB build is rebuilt).
    fn start(orb: &str) -> (Vendor, String) {
        let ior_file = tmp(&format!("{orb}.ior"));
        let mut child = Command::new(root().join(format!("scripts/orbs/{orb}/start")))
            .arg("--ior-file")
            .arg(&ior_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the start script runs");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let v = Vendor { child };
        let deadline = Instant::now() + Duration::from_secs(180);
        let mut ior = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.trim() == "ready" => break,
                Ok(l) if l.starts_with("IOR:") => ior = Some(l.trim().to_string()),
                Ok(_) => {}
                Err(e) => panic!("{orb}: no `ready` line ({e})"),
            }
        }
        let ior = ior.unwrap_or_else(|| panic!("{orb}: no IOR line"));
        let file = std::fs::read_to_string(&ior_file).expect("--ior-file written");
        let _ = std::fs::remove_file(&ior_file);
        assert_eq!(file.trim(), ior, "{orb}: the file holds the printed IOR");
        (v, ior)
    }
}

impl Drop for Vendor {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) of our own child, not yet reaped.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while let Ok(None) = self.child.try_wait() {
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.wait();
        }
    }
}

#[test]
fn omniorb_ior_decodes_as_catior_reads_it() {
    if !catior_installed() || !vendor_available("omniorb") {
        return;
    }
    let (server, ior) = Vendor::start("omniorb");
    let d = agree_with_catior(&ior);
    let p = &d["profiles"][0];
    assert_eq!(d["byte_order"], "little", "omniORB writes host order");
    assert_eq!(p["iiop"]["version"], "1.2");
    assert_eq!(p["iiop"]["object_key"], "Bench");
    assert_eq!(p["components"][0]["value"]["vendor"], "omniORB");
    let cs = &p["components"][1]["value"];
    assert_eq!(cs["char"]["native"]["name"], "ISO-8859-1");
    assert_eq!(cs["char"]["conversion"][0]["name"], "UTF-8");
    assert_eq!(cs["wchar"]["native"]["name"], "UTF-16");
    // The file form (what users have) and stdin give the same document.
    let file = tmp("omni-ref.ior");
    std::fs::write(&file, format!("{ior}\n")).unwrap();
    assert_eq!(decode_json(file.to_str().unwrap()), d);
    let _ = std::fs::remove_file(&file);
    let (code, out, _) = iiopbench(&["ior", "decode", "--json", "-", "-"], Some(&ior));
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), d);
    drop(server);
}

#[test]
fn jacorb_ior_decodes_as_catior_reads_it() {
    if !catior_installed() || !vendor_available("jacorb") {
        return;
    }
    let (server, ior) = Vendor::start("jacorb");
    let d = agree_with_catior(&ior);
    let p = &d["profiles"][0];
    assert_eq!(d["byte_order"], "big", "JacORB is always big-endian");
    assert_eq!(p["iiop"]["object_key"], "iiopbench%2fbench%2fBench");
    assert_eq!(p["components"][0]["value"]["vendor"], "JacORB");
    let cs = &p["components"][1]["value"];
    assert_eq!(cs["char"]["native"]["name"], "UTF-8", "the JVM's default");
    drop(server);
}

#[test]
fn omninames_fixture_decodes_as_catior_reads_it() {
    let path = root().join("fixtures/giop/omniorb/omninames-root.ior");
    let d = decode_json(path.to_str().unwrap());
    assert_eq!(d["type_id"], "IDL:omg.org/CosNaming/NamingContextExt:1.0");
    let comps = d["profiles"][0]["components"].as_array().unwrap();
    assert_eq!(comps.len(), 3);
    assert_eq!(comps[2]["name"], "TAG_OMNIORB_PERSISTENT_ID");
    assert_eq!(comps[2]["hex"], "e7fb016b0100359a");
    assert_eq!(comps[2]["value"], Value::Null);
    if catior_installed() {
        let text = std::fs::read_to_string(&path).unwrap();
        agree_with_catior(text.trim());
    }
}

fn make(args: &[&str]) -> String {
    let mut a = vec!["ior", "make"];
    a.extend_from_slice(args);
    let (code, out, err) = iiopbench(&a, None);
    assert_eq!(code, 0, "ior make {args:?}: {err}");
    let ior = out.trim().to_string();
    assert!(ior.starts_with("IOR:"), "{out}");
    ior
}

#[test]
fn make_then_decode_gives_everything_back() {
    let cases: [(&[&str], &str, &str); 4] = [
        (
            &["--giop", "1.2", "--code-sets", "--orb-type", "iiopbench"],
            "1.2",
            "big",
        ),
        (
            &["--giop", "1.1", "--code-sets", "--byte-order", "little"],
            "1.1",
            "little",
        ),
        (&["--giop", "1.0"], "1.0", "big"),
        (
            &["--orb-type", "0x54414f00", "--alternate", "10.0.0.2:7"],
            "1.2",
            "big",
        ),
    ];
    for (extra, version, order) in cases {
        let mut args = vec![
            "--host",
            "host.example",
            "--port",
            "4711",
            "--key",
            "%14%01%0f%00RST/x%00",
            "--type-id",
            "IDL:Bench/Perf:1.0",
        ];
        args.extend_from_slice(extra);
        let ior = make(&args);
        let d = decode_json(&ior);
        assert_eq!(d["type_id"], "IDL:Bench/Perf:1.0");
        assert_eq!(d["byte_order"], order);
        let p = &d["profiles"][0];
        assert_eq!(d["profiles"].as_array().unwrap().len(), 1);
        let i = &p["iiop"];
        assert_eq!(i["version"], version);
        assert_eq!(i["host"], "host.example");
        assert_eq!(i["port"], 4711);
        assert_eq!(i["object_key"], "%14%01%0f%00RST%2fx%00");
        assert_eq!(i["object_key_hex"], "14010f005253542f7800");
        let comps = p["components"].as_array().unwrap();
        let tags: Vec<u64> = comps.iter().map(|c| c["tag"].as_u64().unwrap()).collect();
        let want_tags: Vec<u64> = match extra {
            [_, _, "--code-sets", "--orb-type", _] => vec![0, 1],
            [_, _, "--code-sets", ..] => vec![1],
            ["--orb-type", ..] => vec![0, 3],
            _ => vec![],
        };
        assert_eq!(tags, want_tags, "{extra:?}");
        for c in comps {
            match c["tag"].as_u64().unwrap() {
                1 => assert_eq!(
                    c["value"],
                    serde_json::json!({
                        "char": {
                            "native": {"id": 0x0001_0001, "hex": "0x00010001", "name": "ISO-8859-1"},
                            "conversion": [{"id": 0x0501_0001, "hex": "0x05010001", "name": "UTF-8"}],
                        },
                        "wchar": {
                            "native": {"id": 0x0001_0109, "hex": "0x00010109", "name": "UTF-16"},
                            "conversion": [{"id": 0x0001_0100, "hex": "0x00010100", "name": "UCS-2"}],
                        },
                    })
                ),
                3 => assert_eq!(
                    c["value"],
                    serde_json::json!({"host": "10.0.0.2", "port": 7})
                ),
                0 => assert!(c["value"]["vendor"] == "iiopbench" || c["value"]["vendor"] == "TAO"),
                t => panic!("unexpected tag {t}"),
            }
        }
        if catior_installed() {
            agree_with_catior(&ior);
        }
    }
    // Components cannot go in a 1.0 profile.
    let (code, _, err) = iiopbench(
        &[
            "ior",
            "make",
            "--host",
            "h",
            "--port",
            "1",
            "--key",
            "k",
            "--type-id",
            "",
            "--giop",
            "1.0",
            "--code-sets",
        ],
        None,
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("IIOP 1.0 profiles carry no components"),
        "{err}"
    );
    // --ior-file writes the file ior decode reads.
    let f = tmp("made.ior");
    let (code, out, _) = iiopbench(
        &[
            "ior",
            "make",
            "--host",
            "h",
            "--port",
            "1",
            "--key",
            "k",
            "--type-id",
            "IDL:X:1.0",
            "--ior-file",
            f.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(
        decode_json(f.to_str().unwrap())["profiles"][0]["iiop"]["host"],
        "h"
    );
    let _ = std::fs::remove_file(&f);
}

#[test]
fn corbaloc_and_corbaname_decode_to_what_they_name() {
    let d = decode_json("corbaloc:iiop:1.2@127.0.0.1:2809,iiop:other/Bench%2fx");
    assert_eq!(d["source"], "corbaloc");
    assert_eq!(d["type_id"], "");
    assert_eq!(d["byte_order"], Value::Null);
    let p = d["profiles"].as_array().unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["iiop"]["version"], "1.2");
    assert_eq!(p[0]["iiop"]["object_key_hex"], "42656e63682f78");
    assert_eq!(p[1]["iiop"]["version"], "1.0", "no 1.2@ means IIOP 1.0");
    assert_eq!(p[1]["iiop"]["port"], 2809);
    let (code, out, _) = iiopbench(
        &["ior", "decode", "--json", "-", "-"],
        Some("corbaname::ns.example:5000#a/b.kind\n"),
    );
    assert_eq!(code, 0);
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["source"], "corbaname");
    assert_eq!(d["naming_name"], "a/b.kind");
    assert_eq!(d["profiles"][0]["iiop"]["object_key"], "NameService");
    assert_eq!(d["profiles"][0]["iiop"]["host"], "ns.example");
    let (code, _, err) = iiopbench(&["ior", "decode", "corbaloc:rir:/NameService"], None);
    assert_eq!(code, 1);
    assert!(err.contains("initial references"), "{err}");
}

/// Big-endian CDR, built by hand: every offset is visible.
struct Cdr(Vec<u8>);

impl Cdr {
    fn encap() -> Cdr {
        Cdr(vec![0]) // byte order: big-endian
    }
    fn align(&mut self, n: usize) {
        while !self.0.len().is_multiple_of(n) {
            self.0.push(0);
        }
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.align(2);
        self.0.extend(v.to_be_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.align(4);
        self.0.extend(v.to_be_bytes());
        self
    }
    fn octets(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32);
        self.0.extend(b);
        self
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.u32(s.len() as u32 + 1);
        self.0.extend(s.as_bytes());
        self.0.push(0);
        self
    }
}

/// An IOR with an IIOP 1.2 profile (ORB type TAO, SSL port 2810 with
/// supports 0x66 / requires 0x46, a CSIv2 mechanism list, TAG_POLICIES
/// and an unknown component), a TAG_MULTIPLE_COMPONENTS profile (code
/// sets, Java codebase, RMI stream format) and an unknown profile.
fn hand_built_ior() -> String {
    let mut orb = Cdr::encap();
    orb.u32(0x5441_4F00);
    let mut ssl = Cdr::encap();
    ssl.u16(0x66).u16(0x46).u16(2810);
    assert_eq!(ssl.0, [0, 0, 0, 0x66, 0, 0x46, 0x0a, 0xfa]);
    let mut tls = Cdr::encap();
    tls.u16(0x66)
        .u16(0x46)
        .u32(1)
        .string("tls.example")
        .u16(2811);
    let gssup = [0x06, 0x06, 0x67, 0x81, 0x02, 0x01, 0x01, 0x01];
    let mut csi = Cdr::encap();
    csi.0.push(0); // stateful = false
    csi.u32(1) // one mechanism
        .u16(0x46)
        .u32(36) // TAG_TLS_SEC_TRANS
        .octets(&tls.0.clone())
        .u16(0x40)
        .u16(0x40)
        .octets(&gssup)
        .octets(b"\x04\x01realm")
        .u16(0x400)
        .u16(0)
        .u32(0) // no privilege authorities
        .u32(1)
        .octets(&gssup)
        .u32(0x0f);
    let mut pol = Cdr::encap();
    pol.u32(1).u32(24).octets(&[0, 0, 0, 3]); // SYNC_SCOPE_POLICY
    let mut iiop = Cdr::encap();
    iiop.0.extend([1, 2]); // IIOP 1.2
    iiop.string("127.0.0.1").u16(2809).octets(b"Key").u32(5);
    for (tag, body) in [
        (0, &orb.0),
        (20, &ssl.0),
        (33, &csi.0),
        (2, &pol.0),
        (0x99, &vec![1, 2, 3]),
    ] {
        iiop.u32(tag).octets(body);
    }
    let mut cs = Cdr::encap();
    cs.u32(0x0001_0001)
        .u32(1)
        .u32(0x0501_0001)
        .u32(0x0001_0109)
        .u32(1)
        .u32(0x0001_0100);
    let mut cb = Cdr::encap();
    cb.string("http://cb.example/classes");
    let mut rmi = Cdr::encap();
    rmi.0.push(2);
    let mut multi = Cdr::encap();
    multi.u32(3);
    for (tag, body) in [(1, &cs.0), (25, &cb.0), (38, &rmi.0)] {
        multi.u32(tag).octets(body);
    }
    let mut ior = Cdr::encap();
    ior.string("IDL:Hand/Built:1.0").u32(3);
    ior.u32(0).octets(&iiop.0.clone());
    ior.u32(1).octets(&multi.0.clone());
    ior.u32(0x42).octets(&[0xaa, 0xbb]);
    let mut s = String::from("IOR:");
    for b in &ior.0 {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

#[test]
fn hand_built_ssl_csi_and_multiple_components_profile() {
    let ior = hand_built_ior();
    let d = if catior_installed() {
        agree_with_catior(&ior)
    } else {
        decode_json(&ior)
    };
    let p = d["profiles"].as_array().unwrap();
    assert_eq!(p.len(), 3);
    let c = p[0]["components"].as_array().unwrap();
    assert_eq!(c[0]["value"]["vendor"], "TAO");
    assert_eq!(c[1]["name"], "TAG_SSL_SEC_TRANS");
    assert_eq!(
        c[1]["value"],
        serde_json::json!({
            "target_supports": {"bits": 0x66, "names": ["Integrity", "Confidentiality", "EstablishTrustInTarget", "EstablishTrustInClient"]},
            "target_requires": {"bits": 0x46, "names": ["Integrity", "Confidentiality", "EstablishTrustInClient"]},
            "port": 2810,
        })
    );
    assert_eq!(c[2]["name"], "TAG_CSI_SEC_MECH_LIST");
    let m = &c[2]["value"]["mechanisms"][0];
    assert_eq!(c[2]["value"]["stateful"], false);
    assert_eq!(m["transport"]["name"], "TAG_TLS_SEC_TRANS");
    assert_eq!(
        m["transport"]["value"]["addresses"],
        serde_json::json!([{"host": "tls.example", "port": 2811}])
    );
    assert_eq!(
        m["as_context"]["client_authentication_mech"],
        "2.23.130.1.1.1"
    );
    assert_eq!(m["as_context"]["target_name_hex"], "04017265616c6d");
    assert_eq!(
        m["sas_context"]["supported_naming_mechanisms"][0],
        "2.23.130.1.1.1"
    );
    assert_eq!(m["sas_context"]["supported_identity_types"], 15);
    assert_eq!(
        c[3]["value"]["policies"][0],
        serde_json::json!({"type": 24, "name": "SYNC_SCOPE_POLICY", "value_hex": "00000003"})
    );
    assert_eq!(
        (c[4]["tag"].as_u64(), &c[4]["name"]),
        (Some(0x99), &Value::Null)
    );
    assert_eq!(c[4]["hex"], "010203");
    assert_eq!(p[1]["tag_name"], "TAG_MULTIPLE_COMPONENTS");
    let mc = p[1]["components"].as_array().unwrap();
    assert_eq!(mc[0]["value"]["wchar"]["conversion"][0]["name"], "UCS-2");
    assert_eq!(mc[1]["value"]["codebase"], "http://cb.example/classes");
    assert_eq!(mc[2]["value"]["max_stream_format"], 2);
    assert_eq!(
        (
            &p[2]["tag"],
            &p[2]["tag_name"],
            &p[2]["length"],
            &p[2]["hex"]
        ),
        (
            &Value::from(0x42),
            &Value::Null,
            &Value::from(2),
            &Value::from("aabb")
        )
    );
    text_mentions(
        &ior,
        &[
            "TAG_SSL_SEC_TRANS (tag 20): port 2810, target_supports 0x0066 \
             (Integrity,Confidentiality,EstablishTrustInTarget,EstablishTrustInClient), \
             target_requires 0x0046 (Integrity,Confidentiality,EstablishTrustInClient)",
            "TAG_CSI_SEC_MECH_LIST (tag 33): 1 mechanism(s), stateful false",
            "  transport TAG_TLS_SEC_TRANS addresses tls.example:2811",
            "mech 2.23.130.1.1.1",
            "2. TAG_MULTIPLE_COMPONENTS (tag 1), ",
            "TAG_JAVA_CODEBASE (tag 25): http://cb.example/classes",
            "3. unknown profile tag 66 (0x42), 2 bytes\n   hex: aabb",
            "unknown component tag 153: 3 bytes: 010203",
        ],
    );
}
