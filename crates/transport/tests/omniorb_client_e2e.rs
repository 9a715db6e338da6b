//! Real omniORB clients against our server: `nameclt` (GIOP 1.0 through a
//! corbaloc, 1.2 and 1.1 through our IOR with code sets and a
//! LocateRequest first) talks to a small CosNaming stand-in served by
//! [`serve`], and `catior` decodes an IOR our builder made. Skipped
//! (`SKIP <test>: <reason>`) only when omniORB's tools are not installed,
//! and then a failure under `CI=true`.

use std::process::Command;
use std::sync::{Arc, Mutex};

use iiop_cdr::{Reader, Writer};
use iiop_giop::context::CodeSetContext;
use iiop_giop::ior::Ior;
use iiop_giop::{SystemException, Version};
use iiop_transport::server::handle_builtin;
use iiop_transport::*;
use tokio::net::TcpListener;

mod common;
use common::{installed, skip_or_fail};

const CTX: &str = "IDL:omg.org/CosNaming/NamingContextExt:1.0";

struct Naming {
    bound: Ior,
    seen: Mutex<Vec<(Version, String, Option<CodeSetContext>)>>,
}

impl Default for Naming {
    fn default() -> Self {
        Naming {
            bound: Ior::builder("IDL:Bench/Perf:1.0")
                .iiop("127.0.0.1", 4321, &b"Bench"[..], &[])
                .build(),
            seen: Mutex::new(Vec::new()),
        }
    }
}

fn read_name(r: &mut Reader<'_>) -> Option<Vec<(String, String)>> {
    let n = r.read_u32().ok()?;
    let mut v = Vec::new();
    for _ in 0..n {
        v.push((r.read_string().ok()?, r.read_string().ok()?));
    }
    Some(v)
}

impl Handler for Naming {
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        self.seen.lock().unwrap().push((
            req.version,
            req.operation.to_string(),
            req.contexts.code_sets().unwrap(),
        ));
        if req.object_key != b"NameService" {
            return Dispatch::Done(Outcome::System(SystemException::unknown_object()));
        }
        if let Some(d) = handle_builtin(
            req,
            body,
            reply,
            &[CTX, "IDL:omg.org/CosNaming/NamingContext:1.0"],
        ) {
            return d;
        }
        match req.operation {
            "list" => {
                // BindingList (empty), nil BindingIterator.
                reply.write_u32(0);
                Ior::new("", vec![]).encode(reply).unwrap();
                Dispatch::Done(Outcome::Reply)
            }
            "resolve" => match read_name(body) {
                Some(n) if n == [("test".to_string(), "obj".to_string())] => {
                    self.bound.encode(reply).unwrap();
                    Dispatch::Done(Outcome::Reply)
                }
                Some(n) => {
                    reply
                        .write_string("IDL:omg.org/CosNaming/NamingContext/NotFound:1.0")
                        .unwrap();
                    reply.write_u32(0); // missing_node
                    reply.write_u32(n.len() as u32);
                    for (id, kind) in &n {
                        reply.write_string(id).unwrap();
                        reply.write_string(kind).unwrap();
                    }
                    Dispatch::Done(Outcome::UserException)
                }
                None => Dispatch::Done(Outcome::System(SystemException::marshal(
                    1,
                    iiop_giop::Completion::No,
                ))),
            },
            _ => Dispatch::Done(Outcome::System(SystemException::unknown_operation())),
        }
    }
}

async fn run(args: Vec<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(&args[0])
            .args(&args[1..])
            .output()
            .expect("run omniORB tool");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn omniorb_clients_against_our_server() {
    if !installed("nameclt") || !installed("catior") {
        skip_or_fail(
            "omniorb_clients_against_our_server",
            "omniORB's nameclt/catior are not installed \
             (run scripts/install-deps or scripts/orbs/omniorb/install: Debian's omniorb)",
        );
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handler = Arc::new(Naming::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        handler.clone(),
        ServerConfig::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let ours = Ior::iiop(CTX, "127.0.0.1", port, &b"NameService"[..]);
    let s = |x: &str| x.to_string();

    // GIOP 1.0 through corbaloc: _is_a, then list.
    let loc = format!("NameService=corbaloc:iiop:127.0.0.1:{port}/NameService");
    let (ok, out, err) = run(vec![s("nameclt"), s("-ORBInitRef"), loc.clone(), s("list")]).await;
    assert!(ok, "nameclt list failed: {out} {err}");
    assert_eq!(out.trim(), "");
    {
        let seen = handler.seen.lock().unwrap();
        assert_eq!(
            seen.iter()
                .map(|(v, op, _)| (*v, op.as_str()))
                .collect::<Vec<_>>(),
            vec![(Version::V1_0, "_is_a"), (Version::V1_0, "list")]
        );
    }
    handler.seen.lock().unwrap().clear();

    // GIOP 1.2 through our IOR: code sets on the first request.
    let (ok, out, err) = run(vec![
        s("nameclt"),
        s("-ior"),
        ours.to_string(),
        s("resolve"),
        s("test.obj"),
    ])
    .await;
    assert!(ok, "nameclt resolve failed: {out} {err}");
    let got: Ior = out.trim().parse().unwrap();
    assert_eq!(got.iiop_profile(), handler.bound.iiop_profile());
    {
        let seen = handler.seen.lock().unwrap();
        assert_eq!(seen[0].0, Version::V1_2);
        assert_eq!(seen[0].1, "resolve");
        assert_eq!(
            seen[0].2,
            Some(CodeSetContext {
                char_data: 0x0001_0001,
                wchar_data: 0x0001_0109
            })
        );
    }

    // A user exception, and GIOP 1.1.
    let (ok, out, err) = run(vec![
        s("nameclt"),
        s("-ior"),
        ours.to_string(),
        s("resolve"),
        s("nosuch"),
    ])
    .await;
    assert!(!ok);
    assert!(format!("{out}{err}").contains("NotFound"), "{out} {err}");
    handler.seen.lock().unwrap().clear();
    let (ok, out, err) = run(vec![
        s("nameclt"),
        s("-ORBmaxGIOPVersion"),
        s("1.1"),
        s("-ior"),
        ours.to_string(),
        s("list"),
    ])
    .await;
    assert!(ok, "{out} {err}");
    assert_eq!(handler.seen.lock().unwrap()[0].0, Version::V1_1);

    // catior reads what our builder writes.
    let (ok, out, err) = run(vec![s("catior"), ours.to_string()]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!("IIOP 1.2 127.0.0.1 {port} \"NameService\"")),
        "{out}"
    );
    assert!(
        out.contains("char native code set:       ISO-8859-1"),
        "{out}"
    );
    assert!(out.contains("wchar native code set:      UTF-16"), "{out}");
    assert!(out.contains("TAG_ORB_TYPE"), "{out}");

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
