//! TLS under IIOP (SSLIOP, TLS-secured IIOP): rustls settings built from
//! PEM files, and what a failed handshake means, in one line that says
//! which side refused and why. Which connections use TLS is the pure
//! core's decision ([`iiop_giop::conn::endpoint`]); the drivers put a rustls
//! session over the TCP stream when it says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{AlertDescription, CertificateError};

use iiop_giop::conn::client::{ClientError, ClientSetup};

/// A TLS setting that cannot be used; says which file and why (the
/// user's fault).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsSetupError {
    /// A file could not be read or parsed as PEM.
    #[error("TLS {what} {path}: {message}")]
    File {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    /// rustls refused the combination (a key that does not match the
    /// certificate, a CA certificate it cannot use, …).
    #[error("TLS settings refused: {0}")]
    Refused(String),
}

/// The TLS stack itself, for crates that drive a session of their own
/// (the raw TLS-over-TCP baseline) or keep settings: one rustls, with
/// this crate's features, for the whole workspace.
pub use rustls;
/// rustls' client settings, re-exported for callers that keep them.
pub use rustls::ClientConfig as RustlsClientConfig;
/// rustls' server settings.
pub use rustls::ServerConfig as RustlsServerConfig;

fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn file_err(what: &'static str, path: &Path, message: impl ToString) -> TlsSetupError {
    TlsSetupError::File {
        what,
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// Every certificate in a PEM file (at least one).
pub fn load_certificates(
    what: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(what, path, pem_message(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(what, path, pem_message(e)))?;
    if certs.is_empty() {
        return Err(file_err(what, path, "no CERTIFICATE in the file"));
    }
    Ok(certs)
}

/// The first private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsSetupError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_err("key", path, pem_message(e)))
}

fn pem_message(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error as E;
    match e {
        E::Io(e) => e.to_string(),
        E::NoItemsFound => "no PRIVATE KEY in the file".into(),
        other => format!("not PEM: {other:?}"),
    }
}

fn roots(path: &Path) -> Result<rustls::RootCertStore, TlsSetupError> {
    let mut roots = rustls::RootCertStore::empty();
    for c in load_certificates("CA", path)? {
        roots
            .add(c)
            .map_err(|e| file_err("CA", path, format!("unusable CA certificate: {e}")))?;
    }
    Ok(roots)
}

/// Client settings: `ca` verifies servers; `identity` (certificate chain
/// and key files) is presented when a server asks for a client
/// certificate.
///
/// Session resumption is off: every connection does a full handshake, as
/// a fresh client process does. (rustls resumes by default, from a
/// session cache shared by every connection made with these settings: a
/// benchmark's connections would then mostly time resumed handshakes.)
pub fn client_config(
    ca: &Path,
    identity: Option<(&Path, &Path)>,
) -> Result<Arc<rustls::ClientConfig>, TlsSetupError> {
    let identity = match identity {
        Some((cert, key)) => Some((
            cert,
            load_certificates("certificate", cert)?,
            load_private_key(key)?,
        )),
        None => None,
    };
    client_config_with(roots(ca)?, identity)
}

/// [`client_config`] from certificates already in memory: the one place
/// the client's TLS settings are made, so a baseline client
/// ([`EphemeralPki`]) has exactly the settings of the benchmark's.
fn client_config_with(
    roots: rustls::RootCertStore,
    identity: Option<(&Path, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<Arc<rustls::ClientConfig>, TlsSetupError> {
    let b = rustls::ClientConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Refused(e.to_string()))?
        .with_root_certificates(roots);
    let mut cfg = match identity {
        Some((path, chain, key)) => b
            .with_client_auth_cert(chain, key)
            .map_err(|e| TlsSetupError::Refused(format!("certificate {}: {e}", path.display())))?,
        None => b.with_no_client_auth(),
    };
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(cfg))
}

/// A certificate authority and a server certificate made in memory for
/// one run, never written anywhere: what lets a server this process
/// starts (the embedded benchmark server, the raw TLS-over-TCP baseline)
/// serve TLS without files, and a client verify it with the settings
/// [`client_config`] makes for a CA file.
#[derive(Debug, Clone)]
pub struct EphemeralPki {
    /// Server settings: the certificate names `localhost`, 127.0.0.1 and
    /// ::1; no client certificates asked for.
    pub server: Arc<rustls::ServerConfig>,
    /// Client settings trusting only this CA, no client certificate,
    /// no session resumption (as [`client_config`]).
    pub client: Arc<rustls::ClientConfig>,
}

impl EphemeralPki {
    /// A fresh CA (ECDSA P-256) and a server certificate it signed.
    pub fn new() -> Result<EphemeralPki, TlsSetupError> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let refused = |e: rcgen::Error| TlsSetupError::Refused(format!("in-memory CA: {e}"));
        let ca_key = KeyPair::generate().map_err(refused)?;
        let mut p = CertificateParams::new(Vec::<String>::new()).map_err(refused)?;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // A name of its own: a verifier looks issuers up by name, and
        // another run's CA must be a stranger, not a bad signature.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        p.distinguished_name.push(
            DnType::CommonName,
            format!("iiopbench run CA {}-{nanos}", std::process::id()),
        );
        let ca = p.self_signed(&ca_key).map_err(refused)?;
        let key = KeyPair::generate().map_err(refused)?;
        let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let mut p = CertificateParams::new(names).map_err(refused)?;
        p.distinguished_name
            .push(DnType::CommonName, "iiopbench run server");
        let cert = p.signed_by(&key, &ca, &ca_key).map_err(refused)?;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.der().clone())
            .map_err(|e| TlsSetupError::Refused(format!("in-memory CA: {e}")))?;
        let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
        Ok(EphemeralPki {
            server: server_config_with(
                vec![cert.der().clone()],
                key,
                Path::new("(in memory)"),
                None,
            )?,
            client: client_config_with(roots, None)?,
        })
    }
}

/// Server settings: our certificate chain and key; with `client_ca`,
/// every client must present a certificate that CA signed.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<rustls::ServerConfig>, TlsSetupError> {
    let client_ca = match client_ca {
        Some(ca) => Some((ca, roots(ca)?)),
        None => None,
    };
    server_config_with(
        load_certificates("certificate", cert)?,
        load_private_key(key)?,
        cert,
        client_ca,
    )
}

/// [`server_config`] from certificates in memory (`origin` names them
/// in errors).
fn server_config_with(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    origin: &Path,
    client_ca: Option<(&Path, rustls::RootCertStore)>,
) -> Result<Arc<rustls::ServerConfig>, TlsSetupError> {
    let b = rustls::ServerConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Refused(e.to_string()))?;
    let b = match client_ca {
        Some((path, roots)) => {
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                ring(),
            )
            .build()
            .map_err(|e| TlsSetupError::Refused(format!("client CA {}: {e}", path.display())))?;
            b.with_client_cert_verifier(v)
        }
        None => b.with_no_client_auth(),
    };
    let cfg = b
        .with_single_cert(chain, key)
        .map_err(|e| TlsSetupError::Refused(format!("certificate {}: {e}", origin.display())))?;
    Ok(Arc::new(cfg))
}

/// The name a server's certificate must carry: the host of the
/// reference (an IP address or a DNS name).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(h.to_string())
        .map_err(|_| format!("{host:?} is neither an IP address nor a DNS name to verify"))
}

/// Which end of the handshake we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    fn peer(self) -> &'static str {
        match self {
            Side::Client => "the server",
            Side::Server => "the client",
        }
    }
}

/// What a failed handshake means, in one line: which side refused and
/// why (for [`ClientError::Tls`](crate::transport::ClientError::Tls)).
/// `e` is what the handshake returned: an I/O error, possibly wrapping
/// the rustls error.
pub fn handshake_failure(e: &std::io::Error, we: Side) -> String {
    if let Some(t) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return tls_failure(t, we);
    }
    let peer = we.peer();
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            format!("{peer} closed the connection mid-handshake (does it speak TLS on this port?)")
        }
        std::io::ErrorKind::ConnectionReset => format!("{peer} reset the connection mid-handshake"),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!("{peer} did not finish the handshake in time")
        }
        _ => format!("I/O error: {e}"),
    }
}

/// A read or write error on a client connection: a TLS failure reported
/// after the handshake (in TLS 1.3 a server judges the client's
/// certificate after the client finished, so its refusal arrives with the
/// first read) is a [`ClientError::Tls`]; anything else an I/O error.
pub(crate) fn client_io_error(setup: &ClientSetup, e: &std::io::Error) -> ClientError {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(t) => ClientError::Tls {
            addr: setup.addr.clone(),
            reason: tls_failure(t, Side::Client),
        },
        None => setup.io(e),
    }
}

/// [`handshake_failure`] of a rustls error.
pub fn tls_failure(e: &rustls::Error, we: Side) -> String {
    use rustls::Error as E;
    let peer = we.peer();
    let theirs = match we {
        Side::Client => "the server's",
        Side::Server => "the client's",
    };
    match e {
        E::AlertReceived(a) => {
            let why = match a {
                AlertDescription::CertificateRequired => ": it requires a client certificate",
                AlertDescription::UnknownCA | AlertDescription::BadCertificate
                    if we == Side::Client =>
                {
                    ": it does not trust our certificate"
                }
                AlertDescription::UnknownCA | AlertDescription::BadCertificate => {
                    ": it does not trust our certificate (is its CA ours?)"
                }
                AlertDescription::ProtocolVersion | AlertDescription::HandshakeFailure => {
                    ": no TLS version or cipher suite in common"
                }
                _ => "",
            };
            format!("{peer} refused it{why} (TLS alert {a:?})")
        }
        E::InvalidCertificate(c) => {
            let why = match c {
                CertificateError::UnknownIssuer => "not signed by a CA we trust".to_string(),
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    "not issued for the host name or address we connected to".to_string()
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "expired".to_string()
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "not valid yet".to_string()
                }
                other => format!("{other:?}"),
            };
            format!("we refused {theirs} certificate: {why}")
        }
        E::NoCertificatesPresented => match we {
            Side::Client => "the server presented no certificate".into(),
            Side::Server => "we require a client certificate and the client sent none".into(),
        },
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            format!("{peer} does not speak TLS on this port ({e})")
        }
        E::PeerIncompatible(x) => format!("{peer} has nothing in common with us: {x:?}"),
        E::PeerMisbehaved(x) => format!("{peer} broke the TLS protocol: {x:?}"),
        other => format!("{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_say_who_refused() {
        let alert = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        assert_eq!(
            tls_failure(&alert, Side::Client),
            "the server refused it: it requires a client certificate (TLS alert CertificateRequired)"
        );
        let cert = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert_eq!(
            tls_failure(&cert, Side::Client),
            "we refused the server's certificate: not signed by a CA we trust"
        );
        assert_eq!(
            tls_failure(&cert, Side::Server),
            "we refused the client's certificate: not signed by a CA we trust"
        );
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, cert);
        assert_eq!(
            handshake_failure(&wrapped, Side::Client),
            "we refused the server's certificate: not signed by a CA we trust"
        );
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(
            handshake_failure(&eof, Side::Client),
            "the server closed the connection mid-handshake (does it speak TLS on this port?)"
        );
    }

    #[test]
    fn setup_errors_name_the_file() {
        let e = client_config(Path::new("/nonexistent/ca.pem"), None).unwrap_err();
        assert!(
            e.to_string().starts_with("TLS CA /nonexistent/ca.pem: "),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("iiop-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not pem at all\n").unwrap();
        assert_eq!(
            client_config(&empty, None).unwrap_err(),
            TlsSetupError::File {
                what: "CA",
                path: empty.clone(),
                message: "no CERTIFICATE in the file".into()
            }
        );
        assert_eq!(
            load_private_key(&empty).unwrap_err().to_string(),
            format!("TLS key {}: no PRIVATE KEY in the file", empty.display())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn server_names_accept_addresses_and_dns_names() {
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("[::1]").is_ok());
        assert!(server_name("localhost").is_ok());
        assert!(server_name("bad host").is_err());
    }
}

/// A throw-away PKI for tests: a CA, a server certificate for
/// `localhost` and 127.0.0.1, a client certificate, and a second CA that
/// signed neither, written as PEM files into a temporary directory that
/// is removed when the last clone of the [`TestPki`] is dropped. Made
/// fresh by each test: nothing secret is committed or left behind.
#[cfg(feature = "test-pki")]
pub mod test_pki {
    use std::path::{Path, PathBuf};

    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };

    /// The files of a test PKI.
    #[derive(Debug, Clone)]
    pub struct TestPki {
        /// Where the files are (other files a test writes may go there
        /// too: all are removed with it).
        pub dir: PathBuf,
        /// Removes `dir` when the last clone goes.
        _cleanup: std::sync::Arc<tempfile::TempDir>,
        /// The CA that signed both certificates.
        pub ca: PathBuf,
        pub server_cert: PathBuf,
        pub server_key: PathBuf,
        pub client_cert: PathBuf,
        pub client_key: PathBuf,
        /// A CA that signed nothing here (verification must fail with it).
        pub other_ca: PathBuf,
        /// A certificate and key signed by `other_ca`.
        pub stranger_cert: PathBuf,
        pub stranger_key: PathBuf,
    }

    fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().expect("CA key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        (p.self_signed(&key).expect("CA certificate"), key)
    }

    fn leaf(
        name: &str,
        issuer: &(rcgen::Certificate, KeyPair),
        dir: &Path,
        file: &str,
    ) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("params");
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = p
            .signed_by(&key, &issuer.0, &issuer.1)
            .expect("certificate");
        let (c, k) = (
            dir.join(format!("{file}.pem")),
            dir.join(format!("{file}.key")),
        );
        std::fs::write(&c, cert.pem()).expect("write certificate");
        std::fs::write(&k, key.serialize_pem()).expect("write key");
        (c, k)
    }

    impl TestPki {
        /// Make a PKI in a fresh temporary directory whose name has
        /// `label` in it.
        pub fn new(label: &str) -> TestPki {
            let tmp = tempfile::Builder::new()
                .prefix(&format!("iiopbench-pki-{label}-"))
                .tempdir()
                .expect("PKI directory");
            let dir = tmp.path();
            let root = ca("iiopbench test CA");
            let other = ca("iiopbench other CA");
            let (ca_path, other_path) = (dir.join("ca.pem"), dir.join("other-ca.pem"));
            std::fs::write(&ca_path, root.0.pem()).expect("write CA");
            std::fs::write(&other_path, other.0.pem()).expect("write CA");
            let (server_cert, server_key) = leaf("iiopbench test server", &root, dir, "server");
            let (client_cert, client_key) = leaf("iiopbench test client", &root, dir, "client");
            let (stranger_cert, stranger_key) = leaf("stranger", &other, dir, "stranger");
            TestPki {
                dir: dir.to_path_buf(),
                _cleanup: std::sync::Arc::new(tmp),
                ca: ca_path,
                server_cert,
                server_key,
                client_cert,
                client_key,
                other_ca: other_path,
                stranger_cert,
                stranger_key,
            }
        }

        /// Client settings trusting this PKI's CA, with the client
        /// certificate when `with_cert`.
        pub fn client(&self, with_cert: bool) -> std::sync::Arc<rustls::ClientConfig> {
            let id = with_cert.then_some((self.client_cert.as_path(), self.client_key.as_path()));
            super::client_config(&self.ca, id).expect("client TLS settings")
        }

        /// Server settings; with `require_client`, clients need a
        /// certificate signed by this PKI's CA.
        pub fn server(&self, require_client: bool) -> std::sync::Arc<rustls::ServerConfig> {
            let ca = require_client.then_some(self.ca.as_path());
            super::server_config(&self.server_cert, &self.server_key, ca)
                .expect("server TLS settings")
        }
    }
}
