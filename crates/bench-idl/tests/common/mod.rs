//! What the bench-client tests share: a GIOP 1.2 client configuration
//! with a bounded wait, and a one-thread reference server.

use std::time::Duration;

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::Version;
use iiop_transport::client::ClientConfig;

pub fn cfg() -> ClientConfig {
    ClientConfig {
        request_timeout: Some(Duration::from_secs(10)),
        version: Some(Version::V1_2),
        ..Default::default()
    }
}

pub fn server() -> RunningServer {
    RunningServer::start(ServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap()
}
