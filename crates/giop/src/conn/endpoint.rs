//! Which transport reaches an IIOP profile: plain TCP on the profile's
//! port, or TLS on the port a security component offers (TAG_SSL_SEC_TRANS,
//! or a CSIv2 mechanism with TAG_TLS_SEC_TRANS). One decision for every
//! driver and every client path; the drivers only carry it out.
//!
//! The rules, in order:
//! 1. TLS always ([`TLS always: the user said `--tls`, e.g. for a `corbaloc:iiop:`
//!    reference, which cannot say so): TLS, on the offered port if the
//!    profile offers one, else on the profile's own port.
//! 2. The profile offers TLS and the client has TLS settings: TLS on the
//!    offered endpoint (omniORB's and JacORB's clients prefer it too).
//! 3. The profile offers TLS, the client has no TLS settings: plain TCP
//!    when the target accepts it (a non-zero profile port and no
//!    protection required), else [`ClientError::TlsNotConfigured`].
//! 4. No offer: plain TCP on the profile's port.

use crate::ior::{tls_offer, IiopProfile};

use super::error::ClientError;

/// Where and how to connect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// TLS over the TCP connection.
    pub tls: bool,
}

impl Endpoint {
    /// Plain TCP to `host:port`.
    pub fn tcp(host: impl Into<String>, port: u16) -> Endpoint {
        Endpoint {
            host: host.into(),
            port,
            tls: false,
        }
    }

    /// `host:port`, as errors name the peer.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// What the client's TLS settings allow, as the decision needs it
/// (the drivers' TLS mode says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsWanted {
    /// No TLS settings.
    Off,
    /// TLS where a profile offers it.
    Offered,
    /// TLS on every connection.
    Always,
}

/// The endpoint for `p` given the client's TLS settings (the module's
/// rules).
pub fn endpoint_for(p: &IiopProfile, tls: TlsWanted) -> Result<Endpoint, ClientError> {
    let offer = tls_offer(p);
    match offer {
        Some(o) if tls != TlsWanted::Off => Ok(Endpoint {
            host: o.host,
            port: o.port,
            tls: true,
        }),
        None if tls == TlsWanted::Always => Ok(Endpoint {
            host: p.host.clone(),
            port: p.port,
            tls: true,
        }),
        Some(o) if o.required() || p.port == 0 => Err(ClientError::TlsNotConfigured {
            addr: format!("{}:{}", o.host, o.port),
            via: o.via,
        }),
        _ => Ok(Endpoint::tcp(p.host.clone(), p.port)),
    }
}

#[cfg(test)]
mod tests {
    use super::TlsWanted::{Always, Off, Offered};
    use super::*;
    use crate::ior::{ssl_component, SslSecTrans};
    use iiop_cdr::ByteOrder;

    fn profile(port: u16, ssl: Option<SslSecTrans>) -> IiopProfile {
        let mut p = IiopProfile::new("h", port, &b"K"[..]);
        p.components
            .extend(ssl.map(|s| s.to_component(ByteOrder::Big)));
        p
    }

    #[test]
    fn plain_profiles_stay_plain_unless_told() {
        let p = profile(2809, None);
        assert_eq!(endpoint_for(&p, Off), Ok(Endpoint::tcp("h", 2809)));
        assert_eq!(endpoint_for(&p, Offered), Ok(Endpoint::tcp("h", 2809)));
        let forced = endpoint_for(&p, Always).unwrap();
        assert_eq!((forced.port, forced.tls), (2809, true));
    }

    #[test]
    fn an_offer_is_taken_when_the_client_can() {
        let mut p = profile(0, None);
        p.components.push(ssl_component(2810, false));
        let e = endpoint_for(&p, Offered).unwrap();
        assert_eq!((e.host.as_str(), e.port, e.tls), ("h", 2810, true));
        assert_eq!(endpoint_for(&p, Always).unwrap(), e);
    }

    #[test]
    fn a_required_offer_without_settings_is_an_error_that_says_so() {
        let mut p = profile(2809, None);
        p.components.push(ssl_component(2810, false));
        let e = endpoint_for(&p, Off).unwrap_err();
        assert_eq!(
            e,
            ClientError::TlsNotConfigured {
                addr: "h:2810".into(),
                via: "TAG_SSL_SEC_TRANS"
            }
        );
        assert_eq!(
            e.to_string(),
            "h:2810 accepts only TLS (TAG_SSL_SEC_TRANS in its IOR) and this client has no \
             TLS settings (a CA to verify it: --tls-ca)"
        );
    }

    #[test]
    fn an_optional_offer_without_settings_goes_plain() {
        let lax = SslSecTrans {
            target_supports: 0x67,
            target_requires: 0,
            port: 2810,
        };
        let p = profile(2809, Some(lax));
        assert_eq!(endpoint_for(&p, Off), Ok(Endpoint::tcp("h", 2809)));
        // … unless there is no plain port to go to.
        let p = profile(0, Some(lax));
        assert!(matches!(
            endpoint_for(&p, Off),
            Err(ClientError::TlsNotConfigured { .. })
        ));
    }
}
