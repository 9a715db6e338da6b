//! Rough loopback numbers for our client against our server (same
//! process, 127.0.0.1): sequential round trips, many in flight on one
//! connection, and a 64 KiB body sent by closure vs. as a prepared request.
//!
//! `cargo run --release -p iiop-giop --example loopback_perf`

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use iiop_cdr::{ByteOrder, Reader, Writer};
use iiop_giop::message::{ResponseMode, TargetAddress};
use iiop_giop::transport::*;
use iiop_giop::{SystemException, Version};

struct Echo;

impl Handler for Echo {
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        let r = match req.operation {
            "echo_long" => body.read_u32().map(|v| reply.write_u32(v)),
            "send_octets" => body.read_octet_seq().map(|_| ()),
            _ => return Dispatch::Done(Outcome::System(SystemException::unknown_operation())),
        };
        match r {
            Ok(()) => Dispatch::Done(Outcome::Reply),
            Err(_) => Dispatch::Done(Outcome::System(SystemException::marshal(
                1,
                iiop_giop::Completion::No,
            ))),
        }
    }
}

#[tokio::main]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(serve(
        listener,
        Arc::new(Echo),
        ServerConfig::default(),
        std::future::pending(),
    ));
    let key = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let connect = |direct_write| async move {
        let cfg = ClientConfig {
            direct_write,
            ..ClientConfig::default()
        };
        Connection::connect("127.0.0.1", port, Version::V1_2, &cfg, None)
            .await
            .unwrap()
    };
    let direct = connect(true).await;
    let via_task = connect(false).await;
    // Interleaved rounds so that machine noise hits both alike.
    let n = 5_000;
    let (mut t_direct, mut t_task) = (0.0, 0.0);
    for _ in 0..4 {
        for (c, total) in [(&direct, &mut t_direct), (&via_task, &mut t_task)] {
            let t = Instant::now();
            for i in 0..n {
                c.request(&key, "echo_long", ResponseMode::Twoway, |w| {
                    w.write_u32(i);
                    Ok(())
                })
                .await
                .unwrap()
                .unwrap();
            }
            *total += t.elapsed().as_secs_f64();
        }
    }
    println!(
        "sequential echo_long, {} calls each: direct write {:.1} us/call, via writer task {:.1} us/call",
        4 * n,
        t_direct * 1e6 / (4 * n) as f64,
        t_task * 1e6 / (4 * n) as f64
    );
    let c = direct;

    let (tasks, per) = (64, 2_000);
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..tasks {
        let (c, key) = (c.clone(), key.clone());
        set.spawn(async move {
            for i in 0..per {
                c.request(&key, "echo_long", ResponseMode::Twoway, |w| {
                    w.write_u32(i);
                    Ok(())
                })
                .await
                .unwrap()
                .unwrap();
            }
        });
    }
    while set.join_next().await.is_some() {}
    let e = t.elapsed();
    println!(
        "{tasks} in flight, one connection: {} calls, {:.0} calls/s",
        tasks * per,
        (tasks * per) as f64 / e.as_secs_f64()
    );

    let payload = vec![7u8; 64 * 1024];
    let m = 5_000;
    let t = Instant::now();
    for _ in 0..m {
        c.request(&key, "send_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(&payload)
        })
        .await
        .unwrap()
        .unwrap();
    }
    let closure = t.elapsed();
    let p = c
        .prepare(&key, "send_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(&payload)
        })
        .unwrap();
    let t = Instant::now();
    for _ in 0..m {
        c.send_prepared(&p).await.unwrap().unwrap();
    }
    let prepared = t.elapsed();
    let mbps = |d: std::time::Duration| (m * payload.len()) as f64 * 8.0 / d.as_secs_f64() / 1e6;
    println!(
        "64 KiB send_octets x{m}: closure {:.0} Mbit/s, prepared {:.0} Mbit/s (order {:?})",
        mbps(closure),
        mbps(prepared),
        ByteOrder::NATIVE
    );
}
