//! End to end against a real omniORB: omniNames on 127.0.0.1 (a free
//! port), driven by our client over GIOP 1.0 (corbaloc) and 1.2 (its IOR,
//! with code sets), plus `nameclt bind` and a `corbaname:` resolution.
//! Skipped (`SKIP <test>: <reason>`) only when omniNames is not installed
//! (scripts/install-deps installs it), and then a failure under `CI=true`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iiop_cdr::Options;
use iiop_giop::corbaloc::{NameComponent, Target};
use iiop_giop::exception::{Completion, SystemException};
use iiop_giop::ior::Ior;
use iiop_giop::message::{LocateStatus, ReplyStatus, ResponseMode};
use iiop_giop::Version;
use iiop_transport::naming::write_name;
use iiop_transport::*;

mod common;
use common::{installed, skip_or_fail};

struct Names {
    child: Child,
    port: u16,
    root: Ior,
    _dir: TempDir,
}

impl Drop for Names {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// omniNames on a free port, or `None` (after [`skip_or_fail`]) when it
/// is not installed.
fn start_names(test: &str) -> Option<Names> {
    if !installed("omniNames") {
        skip_or_fail(
            test,
            "omniNames is not installed (run scripts/install-deps: Debian's omniorb-nameserver)",
        );
        return None;
    }
    let port = free_port();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("giop-e2e-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new("omniNames")
        .args(["-start", &port.to_string()])
        .args(["-ORBendPoint", &format!("giop:tcp:127.0.0.1:{port}")])
        .arg("-logdir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start omniNames");
    // omniNames logs its root context's IOR on stderr once it listens.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(i) = line.find("IOR:") {
                let _ = tx.send(line[i..].trim().to_string());
            }
        }
    });
    let ior = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("omniNames printed its root IOR");
    Some(Names {
        child,
        port,
        root: ior.parse().expect("omniNames IOR parses"),
        _dir: TempDir(dir),
    })
}

fn bool_body(b: &iiop_giop::message::Body) -> bool {
    b.reader(Options::default()).read_bool().unwrap()
}

/// `list(how_many)`: the names of the bindings returned.
async fn list(client: &Client, ctx: &Ior) -> Vec<String> {
    let body = client
        .call(ctx, "list", |w| {
            w.write_u32(100);
            Ok(())
        })
        .await
        .unwrap();
    let mut r = body.reader(Options::default());
    let n = r.read_u32().unwrap();
    let mut names = Vec::new();
    for _ in 0..n {
        let comps = r.read_u32().unwrap();
        let mut parts = Vec::new();
        for _ in 0..comps {
            let id = r.read_string().unwrap();
            let kind = r.read_string().unwrap();
            parts.push(if kind.is_empty() {
                id
            } else {
                format!("{id}.{kind}")
            });
        }
        r.read_u32().unwrap();
        names.push(parts.join("/"));
    }
    let iter = Ior::decode(&mut r).unwrap();
    assert!(iter.is_nil(), "all bindings fit in how_many");
    r.expect_end().unwrap();
    names
}

#[tokio::test]
async fn our_client_against_omninames() {
    let Some(names) = start_names("our_client_against_omninames") else {
        return;
    };
    let port = names.port;
    let loc: Target = format!("corbaloc:iiop:127.0.0.1:{port}/NameService")
        .parse()
        .unwrap();
    let client = Client::new(ClientConfig {
        connect_timeout: Duration::from_secs(5),
        request_timeout: Some(Duration::from_secs(10)),
        ..ClientConfig::default()
    });
    let ns = resolve_target(&client, &loc).await.unwrap();
    let route = client.route(&ns).await.unwrap();
    assert_eq!(
        route.connection.version(),
        Version::V1_0,
        "corbaloc without 1.2@ is GIOP 1.0"
    );

    // The omniNames IOR (GIOP 1.2, TAG_CODE_SETS) and the corbaloc one.
    let root = names.root.clone();
    assert_eq!(root.iiop_profile().unwrap().port, port);
    for target in [&ns, &root] {
        let b = client
            .call(target, "_non_existent", |_| Ok(()))
            .await
            .unwrap();
        assert!(!bool_body(&b));
        let b = client
            .call(target, "_is_a", |w| {
                w.write_string("IDL:omg.org/CosNaming/NamingContext:1.0")
            })
            .await
            .unwrap();
        assert!(bool_body(&b));
        let b = client
            .call(target, "_is_a", |w| w.write_string("IDL:Bench/Perf:1.0"))
            .await
            .unwrap();
        assert!(!bool_body(&b));
        assert_eq!(list(&client, target).await, Vec::<String>::new());
        // resolve of an unknown name: NotFound.
        let name = [NameComponent {
            id: "nosuch".into(),
            kind: String::new(),
        }];
        match resolve_name(&client, target, &name).await.unwrap_err() {
            ClientError::User { repo_id, .. } => {
                assert_eq!(repo_id, "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0")
            }
            e => panic!("{e}"),
        }
        // An operation it does not have.
        assert_eq!(
            client
                .call(target, "frobnicate", |_| Ok(()))
                .await
                .unwrap_err(),
            ClientError::System(SystemException::bad_operation(0x4154_0026, Completion::No))
        );
        assert_eq!(
            client.locate(target).await.unwrap().0,
            LocateStatus::ObjectHere
        );
    }
    assert_eq!(
        client.route(&root).await.unwrap().connection.version(),
        Version::V1_2
    );

    // Unknown object key.
    let nokey: Target = format!("corbaloc:iiop:1.2@127.0.0.1:{port}/NoSuchKey")
        .parse()
        .unwrap();
    let nokey = resolve_target(&client, &nokey).await.unwrap();
    assert_eq!(
        client.locate(&nokey).await.unwrap().0,
        LocateStatus::UnknownObject
    );
    match client
        .call(&nokey, "_non_existent", |_| Ok(()))
        .await
        .unwrap_err()
    {
        ClientError::System(e) => assert_eq!(e.name(), "OBJECT_NOT_EXIST"),
        e => panic!("{e}"),
    }

    // Bind with nameclt, resolve with us (resolve_name and corbaname:).
    let ours = Ior::builder("IDL:Bench/Perf:1.0")
        .iiop("127.0.0.1", 1234, &b"Bench"[..], &[])
        .build();
    if installed("nameclt") {
        let st = Command::new("nameclt")
            .args([
                "-ior",
                &root.to_string(),
                "bind",
                "test.obj",
                &ours.to_string(),
            ])
            .status()
            .unwrap();
        assert!(st.success());
    } else {
        // Same effect through our client: bind(Name, Object).
        client
            .call(&root, "bind", |w| {
                write_name(
                    w,
                    &[NameComponent {
                        id: "test".into(),
                        kind: "obj".into(),
                    }],
                )?;
                ours.encode(w)
                    .map_err(|e| iiop_cdr::CdrError::Message(e.to_string()))
            })
            .await
            .unwrap();
    }
    let name = [NameComponent {
        id: "test".into(),
        kind: "obj".into(),
    }];
    let got = resolve_name(&client, &ns, &name).await.unwrap();
    assert_eq!(got.type_id, ours.type_id);
    assert_eq!(got.iiop_profile(), ours.iiop_profile());
    let cn: Target = format!("corbaname::127.0.0.1:{port}#test.obj")
        .parse()
        .unwrap();
    let got = resolve_target(&client, &cn).await.unwrap();
    assert_eq!(got.iiop_profile(), ours.iiop_profile());
    assert_eq!(list(&client, &root).await, vec!["test.obj".to_string()]);

    // GIOP 1.1 and a oneway are accepted too.
    let c11 = Client::new(ClientConfig {
        version: Some(Version::V1_1),
        ..ClientConfig::default()
    });
    let b = c11.call(&root, "_non_existent", |_| Ok(())).await.unwrap();
    assert!(!bool_body(&b));
    let r = c11
        .invoke(&root, "_non_existent", ResponseMode::Twoway, |_| Ok(()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.header.status, ReplyStatus::NoException);

    // Many requests in flight on one GIOP 1.2 connection.
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    let client = std::sync::Arc::new(client);
    for _ in 0..50 {
        let (c, t) = (client.clone(), root.clone());
        set.spawn(async move { c.call(&t, "_non_existent", |_| Ok(())).await });
    }
    while let Some(r) = set.join_next().await {
        assert!(!bool_body(&r.unwrap().unwrap()));
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The blocking (wait-on-read) connection against the same real omniNames:
/// GIOP 1.2 with negotiated code sets (its IOR) and 1.0 (corbaloc).
#[tokio::test]
async fn our_blocking_client_against_omninames() {
    let Some(names) = start_names("our_blocking_client_against_omninames") else {
        return;
    };
    let root = names.root.clone();
    let port = names.port;
    tokio::task::spawn_blocking(move || {
        let cfg = ClientConfig {
            request_timeout: Some(Duration::from_secs(10)),
            ..ClientConfig::default()
        };
        let p = root.iiop_profile().unwrap();
        let key = iiop_giop::TargetAddress::Key(p.object_key.clone());
        let cs12 = root.code_sets().map(|(cs, _)| cs);
        for (version, cs) in [(Version::V1_2, cs12), (Version::V1_0, None)] {
            let mut c =
                BlockingConnection::connect("127.0.0.1", port, version, &cfg, cs.as_ref()).unwrap();
            let call = |c: &mut BlockingConnection, op: &str, arg: Option<&str>| {
                let r = c
                    .request(&key, op, ResponseMode::Twoway, |w| match arg {
                        Some(s) => w.write_string(s),
                        None => Ok(()),
                    })
                    .unwrap()
                    .unwrap();
                iiop_transport::client::reply_result(r)
            };
            for _ in 0..3 {
                let b = call(&mut c, "_non_existent", None).unwrap();
                assert!(!bool_body(&b), "{version}");
                let b = call(
                    &mut c,
                    "_is_a",
                    Some("IDL:omg.org/CosNaming/NamingContext:1.0"),
                )
                .unwrap();
                assert!(bool_body(&b), "{version}");
            }
            assert_eq!(
                call(&mut c, "frobnicate", None).unwrap_err(),
                ClientError::System(SystemException::bad_operation(0x4154_0026, Completion::No))
            );
            assert_eq!(c.locate(&key).unwrap().status, LocateStatus::ObjectHere);
            // Still usable after the exception.
            assert!(!bool_body(&call(&mut c, "_non_existent", None).unwrap()));
        }
    })
    .await
    .unwrap();
}
