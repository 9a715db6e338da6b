//! bench.idl's valuetype operations, our client against our reference
//! server (both skeletons, GIOP 1.0 to 1.2, both byte orders, every
//! encoding style our writer has): chains, nulls, shared references,
//! cycles, value boxes, a TaggedNode whole and an unknown truncatable
//! type cut down to its Node, and `same_node` telling one value from two
//! equal ones.

use std::time::Duration;

use iiop_bench_idl::bench::values::{NodeEncoding, Nodes};
use iiop_bench_idl::client::BenchClient;
use iiop_bench_idl::reference::Skeleton;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_cdr::{ByteOrder, ValueStyle};
use iiop_giop::Version;
use iiop_transport::client::ClientConfig;

fn server(skeleton: Skeleton) -> RunningServer {
    RunningServer::start(ServerOptions {
        skeleton,
        threads: 2,
        ..Default::default()
    })
    .unwrap()
}

async fn client(s: &RunningServer, version: Version, order: ByteOrder) -> BenchClient {
    let cfg = ClientConfig {
        version: Some(version),
        order,
        request_timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    BenchClient::connect(&s.refs().ior, &cfg).await.unwrap()
}

/// The encodings the checks use: plain, chunked, omniORB-like (no ids,
/// coalesced end tags, a chunk per member), JacORB-like (ids indirected).
fn encodings() -> Vec<NodeEncoding> {
    vec![
        NodeEncoding::default(),
        NodeEncoding {
            chunk_all: true,
            ..NodeEncoding::default()
        },
        NodeEncoding {
            chunk_all: true,
            omit_ids: true,
            style: ValueStyle {
                coalesce_end_tags: true,
                chunk_size: Some(1),
                ..ValueStyle::default()
            },
            ..NodeEncoding::default()
        },
        NodeEncoding {
            style: ValueStyle {
                share_ids: true,
                ..ValueStyle::default()
            },
            ..NodeEncoding::default()
        },
    ]
}

/// a → b → c, and a cycle x → y → x, and a tagged node t → a.
fn graph() -> (Nodes, usize, usize, usize) {
    let mut n = Nodes::default();
    let c = n.push(3, "c", None);
    let b = n.push(2, "b", Some(c));
    let a = n.push(1, "a", Some(b));
    let x = n.push(10, "x", None);
    let y = n.push(11, "y", Some(x));
    n.nodes[x].next = Some(y);
    let t = n.push(20, "t", Some(a));
    n.nodes[t].tag = Some("tag".into());
    (n, a, x, t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_come_back_with_their_sharing() {
    let (g, a, x, t) = graph();
    for skeleton in [Skeleton::Typed, Skeleton::Dynamic] {
        let s = server(skeleton);
        for (version, order) in [
            (Version::V1_2, ByteOrder::Little),
            (Version::V1_2, ByteOrder::Big),
            (Version::V1_1, ByteOrder::Little),
            (Version::V1_0, ByteOrder::Big),
        ] {
            let c = client(&s, version, order).await;
            for enc in encodings() {
                let what = format!("{skeleton:?} GIOP {version} {order:?} {enc:?}");
                for root in [None, Some(a), Some(x), Some(t)] {
                    let (back, r) = c.echo_node(&g, root, &enc).await.unwrap();
                    assert_eq!(g.differs(&[root], &back, &[r]), None, "{what} {root:?}");
                }
                // Shared across elements and with a cycle inside.
                let roots = [Some(a), Some(x), None, Some(a), Some(t), Some(x)];
                let (back, r) = c.echo_nodes(&g, &roots, &enc).await.unwrap();
                assert_eq!(g.differs(&roots, &back, &r), None, "{what}");
                // Each element its own value, equal ones: still two.
                let mut two = Nodes::default();
                let p = two.push(5, "same", None);
                let q = two.push(5, "same", None);
                let (back, r) = c.echo_nodes(&two, &[Some(p), Some(q)], &enc).await.unwrap();
                assert_eq!(back.nodes.len(), 2, "{what}");
                assert_ne!(r[0], r[1], "{what}");
                assert!(
                    c.same_node(&g, Some(a), Some(a), &enc).await.unwrap(),
                    "{what}"
                );
                assert!(
                    !c.same_node(&two, Some(p), Some(q), &enc).await.unwrap(),
                    "{what}"
                );
                assert!(c.same_node(&g, None, None, &enc).await.unwrap(), "{what}");
                assert!(
                    !c.same_node(&g, Some(a), None, &enc).await.unwrap(),
                    "{what}"
                );
                for b in [None, Some(-7), Some(i32::MAX)] {
                    assert_eq!(c.echo_box(b, &enc).await.unwrap(), b, "{what}");
                }
            }
        }
    }
}

/// A truncatable type derived from Node that the server cannot know: it
/// truncates it to its Node part (the next node comes back whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_derived_node_comes_back_truncated() {
    let (g, _, _, t) = graph();
    for skeleton in [Skeleton::Typed, Skeleton::Dynamic] {
        let s = server(skeleton);
        let c = client(&s, Version::V1_2, ByteOrder::NATIVE).await;
        for style in [
            ValueStyle::default(),
            ValueStyle {
                share_ids: true,
                coalesce_end_tags: true,
                chunk_size: Some(3),
            },
        ] {
            let enc = NodeEncoding {
                tagged_id: Some("IDL:iiopbench/UnknownNode:1.0".into()),
                style,
                ..NodeEncoding::default()
            };
            let (back, r) = c.echo_node(&g, Some(t), &enc).await.unwrap();
            assert_eq!(
                g.truncated().differs(&[Some(t)], &back, &[r]),
                None,
                "{skeleton:?} {style:?}"
            );
        }
    }
}

/// What the counters say: valuetype calls count as calls, not bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valuetype_calls_count_as_calls_only() {
    let s = server(Skeleton::Typed);
    let c = client(&s, Version::V1_2, ByteOrder::NATIVE).await;
    let (g, a, _, _) = graph();
    c.reset().await.unwrap();
    let enc = NodeEncoding::default();
    c.echo_node(&g, Some(a), &enc).await.unwrap();
    c.echo_nodes(&g, &[Some(a)], &enc).await.unwrap();
    c.echo_box(Some(1), &enc).await.unwrap();
    c.same_node(&g, Some(a), Some(a), &enc).await.unwrap();
    let st = c.stats().await.unwrap();
    assert_eq!((st.calls, st.oneways, st.bytes), (4, 0, 0));
}
