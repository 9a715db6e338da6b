//! Hostile input over real TCP against our reference server: each case
//! sends bytes a broken or malicious client might send and asserts the
//! server's exact reaction (a MessageError with its 12 header bytes, a
//! system exception reply with repository id and minor code, a specific
//! reply, silence, or the connection closed), then that the server still
//! answers `ping` on a new connection and on a connection that was open
//! all along. The table of expected reactions is docs/robustness.md.
//! Here the whole table also runs over TLS: a TLS server must react to
//! bad GIOP exactly as a plain one does.
//!
//! This file runs the suite on the tokio server (task per connection);
//! tests/malformed_threads.rs runs the same cases on the thread-per-
//! connection server.

const MODEL: ServerModel = ServerModel::Reactor;

include!("malformed/cases.rs");

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

impl Wire for TlsStream {
    fn half_close(&mut self) -> std::io::Result<()> {
        self.conn.send_close_notify();
        self.flush()?;
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.sock)?;
        }
        self.sock.shutdown(Shutdown::Write)
    }
}

#[test]
fn every_malformed_case_gets_the_same_reaction_over_tls() {
    use iiop_giop::transport::tls::test_pki::TestPki;
    let dir = std::env::temp_dir().join(format!("iiopbench-malformed-tls-{}", std::process::id()));
    let pki = TestPki::create(&dir);
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        config: hostile_config(),
        model: MODEL,
        tls: Some(iiop_servers::run::TlsServer {
            config: pki.server(false),
            client_certificates: false,
        }),
        ..Default::default()
    })
    .unwrap();
    let addr = srv.addr();
    let client = pki.client(false);
    run_cases(|| {
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(client.clone(), name).unwrap();
        let mut s = rustls::StreamOwned::new(conn, connect(addr));
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).expect("TLS handshake");
        }
        s
    });
    let _ = std::fs::remove_dir_all(&dir);
}
