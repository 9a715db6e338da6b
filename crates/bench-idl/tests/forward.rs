//! The bench client and forwards: LOCATION_FORWARD and OBJECT_FORWARD are
//! followed on both ways of waiting, the chain is kept, the hop limit
//! holds, and every error names the peer that caused it.

use std::sync::Arc;
use std::time::Duration;

use iiop_bench_idl::bench::ops::POA_KEY_PREFIX;
use iiop_bench_idl::client::{BenchClient, BenchError, Wait};
use iiop_bench_idl::reference::Forwarding;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_cdr::{Reader, Writer};
use iiop_giop::ior::Ior;
use iiop_giop::message::LocateStatus;
use iiop_transport::client::{ClientConfig, ClientError};
use iiop_transport::server::{
    serve, Dispatch, Handler, LocateOutcome, Outcome, RequestContext, ServerConfig,
};

fn cfg() -> ClientConfig {
    ClientConfig {
        request_timeout: Some(Duration::from_secs(10)),
        max_forwards: 4,
        ..Default::default()
    }
}

/// A server that forwards every request and LocateRequest to itself,
/// under the same key: a loop no client may follow for ever.
#[derive(Debug)]
struct Loop {
    me: std::sync::OnceLock<Ior>,
}

impl Handler for Loop {
    fn handle(&self, _: &RequestContext<'_>, _: &mut Reader<'_>, _: &mut Writer<'_>) -> Dispatch {
        Dispatch::Done(Outcome::Forward(self.me.get().unwrap().clone()))
    }

    fn locate(&self, _: &[u8]) -> LocateOutcome {
        LocateOutcome::Forward(self.me.get().unwrap().clone())
    }
}

async fn looping() -> (Ior, String) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let me = Ior::builder("IDL:Bench/Perf:1.0")
        .iiop("127.0.0.1", addr.port(), b"loop".to_vec(), &[])
        .build();
    let h = Arc::new(Loop {
        me: std::sync::OnceLock::new(),
    });
    h.me.set(me.clone()).unwrap();
    tokio::spawn(serve(l, h, ServerConfig::default(), std::future::pending()));
    (me, addr.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_loop_stops_at_the_hop_limit_naming_the_peer() {
    let (ior, addr) = looping().await;
    for wait in [Wait::Reactor, Wait::Read] {
        let c = BenchClient::connect_with(&ior, &cfg(), wait).await.unwrap();
        let e = c.ping().await.unwrap_err();
        assert_eq!(
            e,
            BenchError::Call(ClientError::TooManyForwards {
                addr: addr.clone(),
                limit: 4
            }),
            "{wait:?}"
        );
        assert!(e.to_string().contains(&addr), "{e}");
        // Four hops were followed, each from the same place to itself.
        assert_eq!(c.forwards().len(), 4, "{wait:?}");
        let e = c.locate().await.unwrap_err();
        assert!(matches!(
            e,
            BenchError::Call(ClientError::TooManyForwards { limit: 4, .. })
        ));
        // A oneway cannot be sent blind to a place that only forwards.
        assert!(c.mark(1).await.is_err());
    }
}

fn forwarding_server(permanent: bool) -> RunningServer {
    RunningServer::start(ServerOptions {
        threads: 1,
        forwarding: Some(Forwarding {
            permanent,
            to: None,
        }),
        ..Default::default()
    })
    .unwrap()
}

fn short_key_ior(s: &RunningServer, key: &str) -> Ior {
    Ior::builder("IDL:Bench/Perf:1.0")
        .iiop("127.0.0.1", s.addr().port(), key.as_bytes().to_vec(), &[])
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locate_follows_object_forward_and_oneways_resolve_first() {
    let srv = forwarding_server(false);
    let addr = srv.addr().to_string();
    for wait in [Wait::Reactor, Wait::Read] {
        let c = BenchClient::connect_with(&short_key_ior(&srv, "Bench"), &cfg(), wait)
            .await
            .unwrap();
        assert!(c.forwarded_to().is_none());
        let l = c.locate().await.unwrap();
        assert_eq!(l.status, LocateStatus::ObjectHere, "{wait:?}");
        let hops = c.forwards();
        assert_eq!(hops.len(), 1);
        assert_eq!(hops[0].status, "OBJECT_FORWARD");
        assert_eq!(hops[0].from, format!("{addr} key \"Bench\""));
        assert!(hops[0].to.starts_with(&format!("{addr} key 0x14010f00")));
        let mut long = POA_KEY_PREFIX.to_vec();
        long.extend_from_slice(b"Bench");
        assert_eq!(
            c.forwarded_to().unwrap().iiop_profile().unwrap().object_key,
            long
        );
        c.reset().await.unwrap();

        // A fresh client's first call is a oneway: it resolves the
        // location first, so the oneway reaches the object.
        let o = BenchClient::connect_with(&short_key_ior(&srv, "Bench"), &cfg(), wait)
            .await
            .unwrap();
        o.mark(7).await.unwrap();
        let st = o.stats().await.unwrap();
        assert_eq!((st.oneways, st.last_mark), (1, 7), "{wait:?}");
        assert_eq!(o.forwards()[0].status, "LOCATION_FORWARD");

        // with_key on a forwarded client: the other object's short key is
        // forwarded in turn (same connection, same endpoint).
        let d = o.with_key(b"Dispatch50");
        d.call("m49", |_| Ok(())).await.unwrap();
        assert_eq!(d.forwards().len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_forwards_and_exceptions_name_the_peer() {
    let srv = forwarding_server(true);
    let addr = srv.addr().to_string();
    let c = BenchClient::connect(&short_key_ior(&srv, "Bench"), &cfg())
        .await
        .unwrap();
    c.ping().await.unwrap();
    assert_eq!(c.forwards()[0].status, "LOCATION_FORWARD_PERM");
    // An exception from the forwarded-to object names where it came from.
    let e = c.call("no_such_operation", |_| Ok(())).await.unwrap_err();
    assert!(
        matches!(&e, BenchError::Call(ClientError::System(x)) if x.name() == "BAD_OPERATION"),
        "{e}"
    );
    // A reply that does not decode names the operation and the peer.
    let body = c.call("ping", |_| Ok(())).await.unwrap();
    let e = c.decode("ping", &body, |r| r.read_u64()).unwrap_err();
    assert!(e.to_string().contains(&addr), "{e}");
    // A key the server does not know is not forwarded.
    let bad = BenchClient::connect(&short_key_ior(&srv, "Nobody"), &cfg())
        .await
        .unwrap();
    let e = bad.ping().await.unwrap_err();
    assert!(
        matches!(&e, BenchError::Call(ClientError::System(x)) if x.name() == "OBJECT_NOT_EXIST"),
        "{e}"
    );
    assert!(bad.forwards().is_empty());
}
