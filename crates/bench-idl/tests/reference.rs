//! Black-box tests of our reference server through our own client over
//! loopback: every operation with exact results, both skeletons, every
//! GIOP version and byte order, concurrency, and oneway bursts.

use std::time::Duration;

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::bench::work::{Dist, Kind};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_bench_idl::reference::Skeleton;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_cdr::ByteOrder;
use iiop_giop::Version;
use iiop_transport::client::{ClientConfig, ClientError};

fn server(skeleton: Skeleton) -> RunningServer {
    RunningServer::start(ServerOptions {
        skeleton,
        threads: 2,
        ..Default::default()
    })
    .unwrap()
}

fn cfg(version: Version, order: ByteOrder) -> ClientConfig {
    ClientConfig {
        version: Some(version),
        order,
        request_timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    }
}

async fn client(s: &RunningServer, version: Version, order: ByteOrder) -> BenchClient {
    BenchClient::connect(&s.refs().ior, &cfg(version, order))
        .await
        .unwrap()
}

fn system_name(e: BenchError) -> String {
    match e {
        BenchError::Call(ClientError::System(s)) => format!("{} {:#x}", s.name(), s.minor),
        other => panic!("expected a system exception, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_gives_exact_results() {
    for skeleton in [Skeleton::Typed, Skeleton::Dynamic] {
        let s = server(skeleton);
        let c = client(&s, Version::V1_2, ByteOrder::NATIVE).await;
        c.ping().await.unwrap();
        c.reset().await.unwrap();
        let st = c.stats().await.unwrap();
        assert_eq!(
            (
                st.calls,
                st.oneways,
                st.bytes,
                st.last_mark,
                st.mark_disorder
            ),
            (0, 0, 0, 0, 0)
        );
        let mut expected_bytes = 0;
        for elem in Elem::ALL {
            for n in [0, 1, 7, 1000] {
                let p = Payload::generate(elem, n, false);
                assert_eq!(
                    c.payload(CallMode::Echo, &p).await.unwrap(),
                    Some(p.clone()),
                    "{skeleton:?} echo_{elem} x{n}"
                );
                expected_bytes += p.counted_bytes(iiop_cdr::CharCodeSet::Latin1);
            }
            let p = Payload::generate(elem, 3, false);
            assert_eq!(c.payload(CallMode::Twoway, &p).await.unwrap(), None);
            assert_eq!(c.payload(CallMode::Oneway, &p).await.unwrap(), None);
            expected_bytes += 2 * p.counted_bytes(iiop_cdr::CharCodeSet::Latin1);
        }
        let st = c.stats().await.unwrap();
        // 26 × (4 echoes + 1 send) since the reset; oneways 26
        assert_eq!(st.calls, 26 * 5, "{skeleton:?}");
        assert_eq!(st.oneways, 26);
        assert_eq!(st.bytes, expected_bytes);
        assert!(st.cpu_seconds >= 0.0);

        c.reset().await.unwrap();
        for n in 1..=1000 {
            c.mark(n).await.unwrap();
        }
        let st = c.stats().await.unwrap();
        assert_eq!(
            (st.oneways, st.last_mark, st.mark_disorder),
            (1000, 1000, 0)
        );
        c.mark(5).await.unwrap();
        assert_eq!(c.stats().await.unwrap().mark_disorder, 1);

        assert!(c.work(2000.0, Dist::Fixed, Kind::Sleep).await.unwrap() >= 2000.0);
        assert!(c.work(500.0, Dist::Fixed, Kind::Spin).await.unwrap() >= 500.0);
        assert!(c.work(100.0, Dist::Exponential, Kind::Sleep).await.unwrap() >= 0.0);

        let single = c.get_single(7).await.unwrap();
        assert_eq!(single.type_id, "IDL:Bench/Single:1.0");
        let sc = BenchClient::connect(&single, &cfg(Version::V1_2, ByteOrder::Big))
            .await
            .unwrap();
        sc.call("op", |_| Ok(())).await.unwrap();
        assert_eq!(
            system_name(c.get_single(500).await.unwrap_err()),
            "BAD_PARAM 0x4f4d0001"
        );

        for (key, ops) in [
            ("Dispatch50", ["m00", "m49"]),
            ("Dispatch500", ["m000", "m499"]),
        ] {
            let d = c.with_key(key.as_bytes());
            for op in ops {
                d.call(op, |_| Ok(())).await.unwrap();
            }
            assert!(d.is_a(&format!("IDL:Bench/{key}:1.0")).await.unwrap());
            assert_eq!(
                system_name(d.call("m500", |_| Ok(())).await.unwrap_err()),
                "BAD_OPERATION 0x4f4d0002"
            );
        }
        assert!(c.is_a("IDL:Bench/Perf:1.0").await.unwrap());
        assert!(c.is_a("IDL:omg.org/CORBA/Object:1.0").await.unwrap());
        assert!(!c.is_a("IDL:Bench/Single:1.0").await.unwrap());
        assert!(!c.non_existent().await.unwrap());
        assert_eq!(
            system_name(c.call("no_such_op", |_| Ok(())).await.unwrap_err()),
            "BAD_OPERATION 0x4f4d0002"
        );
        let ghost = c.with_key(b"Ghost");
        assert_eq!(
            system_name(ghost.ping().await.unwrap_err()),
            "OBJECT_NOT_EXIST 0x4f4d0001"
        );
        // A truncated argument is a MARSHAL exception, and the connection lives on.
        let e = c.call("echo_long", |w| {
            w.write_u32(10);
            Ok(())
        });
        assert!(system_name(e.await.unwrap_err()).starts_with("MARSHAL"));
        c.ping().await.unwrap();
        s.stop().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_version_and_byte_order() {
    let s = server(Skeleton::Typed);
    for version in [Version::V1_0, Version::V1_1, Version::V1_2] {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let c = client(&s, version, order).await;
            for elem in Elem::ALL {
                if elem.is_wide() && version == Version::V1_0 {
                    continue;
                }
                let p = Payload::generate(elem, 13, false);
                assert_eq!(
                    c.payload(CallMode::Echo, &p).await.unwrap(),
                    Some(p),
                    "{version:?} {order:?} {elem}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_and_dynamic_skeletons_reply_byte_for_byte() {
    let typed = server(Skeleton::Typed);
    let dynamic = server(Skeleton::Dynamic);
    let a = client(&typed, Version::V1_2, ByteOrder::Little).await;
    let b = client(&dynamic, Version::V1_2, ByteOrder::Little).await;
    for elem in Elem::ALL {
        let p = Payload::generate(elem, 57, false);
        let op = elem.op_name(CallMode::Echo);
        let ra = a.call(op, |w| p.encode(w)).await.unwrap();
        let rb = b.call(op, |w| p.encode(w)).await.unwrap();
        assert_eq!(ra.bytes, rb.bytes, "{elem}");
        assert_eq!(ra.offset, rb.offset);
    }
    let (sa, sb) = (a.stats().await.unwrap(), b.stats().await.unwrap());
    assert_eq!((sa.calls, sa.bytes), (sb.calls, sb.bytes));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_are_all_counted() {
    let s = server(Skeleton::Typed);
    let c0 = client(&s, Version::V1_2, ByteOrder::NATIVE).await;
    c0.reset().await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = client(
            &s,
            Version::V1_2,
            if i % 2 == 0 {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            },
        )
        .await;
        tasks.push(tokio::spawn(async move {
            let p = Payload::generate(Elem::Double, 100 + i, false);
            for _ in 0..200 {
                assert_eq!(
                    c.payload(CallMode::Echo, &p).await.unwrap().as_ref(),
                    Some(&p)
                );
            }
            (100 + i as u64) * 8 * 200
        }));
    }
    let mut bytes = 0;
    for t in tasks {
        bytes += t.await.unwrap();
    }
    let st = c0.stats().await.unwrap();
    assert_eq!(st.calls, 1600);
    assert_eq!(st.bytes, bytes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_burst_then_stats_counts_every_byte() {
    let s = server(Skeleton::Typed);
    let c = client(&s, Version::V1_2, ByteOrder::NATIVE).await;
    c.reset().await.unwrap();
    let p = Payload::for_size(Elem::Long, 1024);
    for _ in 0..5000 {
        c.payload(CallMode::Oneway, &p).await.unwrap();
    }
    let st = c.stats().await.unwrap();
    assert_eq!(st.oneways, 5000);
    assert_eq!(st.bytes, 5000 * 1024);
    assert_eq!(s.stats().oneways, 5000);
}
