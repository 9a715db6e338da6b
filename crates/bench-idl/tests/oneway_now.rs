//! `BenchClient::oneway_now`, which `oneway` tries first: the synchronous
//! oneway of a client that waits by blocking reads. It applies only where
//! the full path would send at once (a `Wait::Read` connection to a target
//! a reply has confirmed), sends the same request, and hands a connection
//! the server closed back to the full path, which reconnects.

use iiop_bench_idl::bench::elements::Elem;
use iiop_bench_idl::bench::types::{Outgoing, Payload};
use iiop_bench_idl::client::{BenchClient, Wait};
use iiop_bench_idl::run::RunningServer;

mod common;
use common::{cfg, server};

const OP: &str = "send_oneway_octet";

/// A client of `srv` that waits as `wait` says.
async fn client(srv: &RunningServer, wait: Wait) -> BenchClient {
    BenchClient::connect_with(&srv.refs().ior, &cfg(), wait)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_only_to_a_blocking_client_whose_target_is_confirmed() {
    let srv = server();
    let o = Outgoing::new(Payload::for_size(Elem::Octet, 1024));

    let reactor = client(&srv, Wait::Reactor).await;
    reactor.ping().await.unwrap();
    assert!(
        reactor.oneway_now(OP, |w| o.encode(w)).is_none(),
        "a reactor client goes the async way"
    );

    let c = client(&srv, Wait::Read).await;
    c.reset().await.unwrap();
    let before = c.stats().await.unwrap();
    // reset() and stats() are twoways: their replies confirmed the target.
    for i in 0..200 {
        match c.oneway_now(OP, |w| o.encode(w)) {
            Some(r) => r.unwrap_or_else(|e| panic!("oneway {i}: {e}")),
            None => panic!("oneway {i} not sent at once on a confirmed route"),
        }
    }
    let after = c.stats().await.unwrap();
    assert_eq!(after.oneways - before.oneways, 200);
    assert_eq!(after.bytes - before.bytes, 200 * 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfirmed_target_goes_the_full_way_first() {
    let srv = server();
    let o = Outgoing::new(Payload::for_size(Elem::Octet, 64));
    let c = client(&srv, Wait::Read).await;
    // Nothing has answered yet: a oneway could not learn of a forward, so
    // the full path probes with _non_existent first.
    assert!(c.oneway_now(OP, |w| o.encode(w)).is_none());
    c.oneway(OP, |w| o.encode(w)).await.unwrap();
    assert!(matches!(c.oneway_now(OP, |w| o.encode(w)), Some(Ok(()))));
    let st = c.stats().await.unwrap();
    assert_eq!(st.oneways, 2);
}
