//! CORBA system exceptions as they travel in a SYSTEM_EXCEPTION reply body
//! (string repository id, u32 minor, u32 completion status), the minor-code
//! vendor ids, and constructors for the exceptions servers raise.

use std::borrow::Cow;
use std::fmt;

use iiop_cdr::{Reader, Writer};

use crate::error::{GiopError, Result};

/// Minor-code vendor id (VMCID) of the OMG's standard minor codes.
pub const VMCID_OMG: u32 = 0x4F4D_0000;
/// omniORB's VMCID ("AT").
pub const VMCID_OMNIORB: u32 = 0x4154_0000;
/// TAO's VMCID ("TA").
pub const VMCID_TAO: u32 = 0x5441_0000;
/// JacORB's VMCID ("JC").
pub const VMCID_JACORB: u32 = 0x4A43_0000;

/// A standard OMG minor code: `VMCID_OMG | n`.
pub const fn omg_minor(n: u16) -> u32 {
    VMCID_OMG | n as u32
}

/// OBJECT_NOT_EXIST: no object with this key (OMG minor 1, as omniORB's
/// `OBJECT_NOT_EXIST_NoMatch`).
pub const MINOR_OBJECT_NOT_EXIST_NO_MATCH: u32 = omg_minor(1);
/// BAD_OPERATION: operation not known to the target (OMG minor 2).
pub const MINOR_BAD_OPERATION_UNKNOWN: u32 = omg_minor(2);
/// BAD_PARAM: wchar without negotiated code sets (OMG minor 23, omniORB).
pub const MINOR_BAD_PARAM_WCHAR_NOT_NEGOTIATED: u32 = omg_minor(23);
/// TRANSIENT: the connection closed before the reply came (retry it).
pub const MINOR_TRANSIENT_CONNECTION_CLOSED: u32 = VMCID_IIOPBENCH | 2;
/// MARSHAL: a request body that does not decode (our own minor code).
pub const MINOR_MARSHAL_BAD_BODY: u32 = VMCID_IIOPBENCH | 1;
/// NO_IMPLEMENT: a client-side servant answering a callback went
/// asynchronous (callbacks are served on the spot).
pub const MINOR_NO_IMPLEMENT_ASYNC_CALLBACK: u32 = VMCID_IIOPBENCH | 6;
/// NO_PERMISSION: a call that must call the client back, on a connection
/// the client did not offer for callbacks (no BI_DIR_IIOP context, or not
/// GIOP 1.2, or the callback's address not among its listen points): our
/// server opens no connection back to a client.
pub const MINOR_NO_PERMISSION_NOT_BIDIR: u32 = VMCID_IIOPBENCH | 7;
/// Our own VMCID ("IB"), for minor codes the OMG does not define.
pub const VMCID_IIOPBENCH: u32 = 0x4942_0000;

/// Who defined a minor code, from its upper 20 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinorVendor {
    Omg,
    OmniOrb,
    Tao,
    JacOrb,
    Iiopbench,
    /// A bare number (JacORB often sends these) or an unknown VMCID.
    Other(u32),
}

impl MinorVendor {
    /// Classify a minor code by its VMCID (upper 20 bits).
    pub fn of(minor: u32) -> MinorVendor {
        match minor & 0xFFFF_F000 {
            VMCID_OMG => MinorVendor::Omg,
            VMCID_OMNIORB => MinorVendor::OmniOrb,
            VMCID_TAO => MinorVendor::Tao,
            VMCID_JACORB => MinorVendor::JacOrb,
            VMCID_IIOPBENCH => MinorVendor::Iiopbench,
            v => MinorVendor::Other(v),
        }
    }
}

/// Completion status of a system exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Completion {
    Yes = 0,
    No = 1,
    Maybe = 2,
}

impl Completion {
    /// From the wire value.
    pub fn from_u32(v: u32, offset: usize) -> Result<Completion> {
        match v {
            0 => Ok(Completion::Yes),
            1 => Ok(Completion::No),
            2 => Ok(Completion::Maybe),
            value => Err(GiopError::BadValue {
                what: "completion status",
                value,
                offset,
            }),
        }
    }
}

impl fmt::Display for Completion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Completion::Yes => "COMPLETED_YES",
            Completion::No => "COMPLETED_NO",
            Completion::Maybe => "COMPLETED_MAYBE",
        })
    }
}

/// A CORBA system exception.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SystemException {
    /// e.g. `IDL:omg.org/CORBA/BAD_OPERATION:1.0`.
    pub repo_id: Cow<'static, str>,
    pub minor: u32,
    pub completed: Completion,
}

impl fmt::Display for SystemException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} minor {:#010x} {}",
            self.repo_id, self.minor, self.completed
        )
    }
}

impl std::error::Error for SystemException {}

macro_rules! standard {
    ($($fn:ident => $name:literal),* $(,)?) => {
        impl SystemException {
            $(
                #[doc = concat!("`IDL:omg.org/CORBA/", $name, ":1.0`")]
                pub fn $fn(minor: u32, completed: Completion) -> SystemException {
                    SystemException {
                        repo_id: Cow::Borrowed(concat!("IDL:omg.org/CORBA/", $name, ":1.0")),
                        minor,
                        completed,
                    }
                }
            )*
        }
    };
}

standard! {
    unknown => "UNKNOWN",
    bad_param => "BAD_PARAM",
    no_memory => "NO_MEMORY",
    imp_limit => "IMP_LIMIT",
    comm_failure => "COMM_FAILURE",
    inv_objref => "INV_OBJREF",
    no_permission => "NO_PERMISSION",
    internal => "INTERNAL",
    marshal => "MARSHAL",
    initialize => "INITIALIZE",
    no_implement => "NO_IMPLEMENT",
    bad_typecode => "BAD_TYPECODE",
    bad_operation => "BAD_OPERATION",
    no_resources => "NO_RESOURCES",
    no_response => "NO_RESPONSE",
    bad_inv_order => "BAD_INV_ORDER",
    transient => "TRANSIENT",
    object_not_exist => "OBJECT_NOT_EXIST",
    data_conversion => "DATA_CONVERSION",
    timeout => "TIMEOUT",
    codeset_incompatible => "CODESET_INCOMPATIBLE",
}

impl SystemException {
    /// Any repository id.
    pub fn new(repo_id: impl Into<Cow<'static, str>>, minor: u32, completed: Completion) -> Self {
        SystemException {
            repo_id: repo_id.into(),
            minor,
            completed,
        }
    }

    /// The server's answer to an unknown object key.
    pub fn unknown_object() -> SystemException {
        Self::object_not_exist(MINOR_OBJECT_NOT_EXIST_NO_MATCH, Completion::No)
    }

    /// The server's answer to an unknown operation.
    pub fn unknown_operation() -> SystemException {
        Self::bad_operation(MINOR_BAD_OPERATION_UNKNOWN, Completion::No)
    }

    /// The short name, e.g. `BAD_OPERATION` for
    /// `IDL:omg.org/CORBA/BAD_OPERATION:1.0`.
    pub fn name(&self) -> &str {
        let s = self.repo_id.strip_prefix("IDL:").unwrap_or(&self.repo_id);
        let s = s.rsplit_once(':').map_or(s, |(a, _)| a);
        s.rsplit('/').next().unwrap_or(s)
    }

    /// Who defined the minor code.
    pub fn vendor(&self) -> MinorVendor {
        MinorVendor::of(self.minor)
    }

    /// Decode from a SYSTEM_EXCEPTION reply body.
    pub fn decode(r: &mut Reader<'_>) -> Result<SystemException> {
        // ISO 8859-1, one char per byte, as encode writes it (repository
        // ids are ASCII in practice; found by fuzzing).
        let repo_id: String = r
            .read_string_bytes()
            .map_err(GiopError::cdr("system exception repository id"))?
            .iter()
            .map(|&b| b as char)
            .collect();
        let minor = r
            .read_u32()
            .map_err(GiopError::cdr("system exception minor"))?;
        let at = r.position();
        let c = r
            .read_u32()
            .map_err(GiopError::cdr("system exception completion"))?;
        Ok(SystemException {
            repo_id: Cow::Owned(repo_id),
            minor,
            completed: Completion::from_u32(c, at)?,
        })
    }

    /// Encode as a SYSTEM_EXCEPTION reply body.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        let id = iiop_cdr::ior::latin1(&self.repo_id)
            .unwrap_or_else(|| self.repo_id.as_bytes().to_vec());
        w.write_string_bytes(&id)
            .map_err(GiopError::cdr("system exception repository id"))?;
        w.write_u32(self.minor);
        w.write_u32(self.completed as u32);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use iiop_cdr::ByteOrder;

    #[test]
    fn display_matches_the_documented_form() {
        let e = SystemException::bad_operation(omg_minor(1), Completion::No);
        assert_eq!(
            e.to_string(),
            "IDL:omg.org/CORBA/BAD_OPERATION:1.0 minor 0x4f4d0001 COMPLETED_NO"
        );
        assert_eq!(e.name(), "BAD_OPERATION");
        assert_eq!(e.vendor(), MinorVendor::Omg);
    }

    #[test]
    fn vendors_recognised() {
        assert_eq!(MinorVendor::of(0x4154_0026), MinorVendor::OmniOrb);
        assert_eq!(MinorVendor::of(0x5441_0001), MinorVendor::Tao);
        assert_eq!(MinorVendor::of(0x4A43_0001), MinorVendor::JacOrb);
        assert_eq!(MinorVendor::of(7), MinorVendor::Other(0));
    }

    #[test]
    fn round_trip_body() {
        let mut buf = BytesMut::new();
        let e = SystemException::transient(MINOR_TRANSIENT_CONNECTION_CLOSED, Completion::Maybe);
        e.encode(&mut Writer::new(&mut buf, ByteOrder::Big))
            .unwrap();
        assert_eq!(buf.len(), 4 + 32 + 4 + 4);
        assert_eq!(&buf[..4], &[0, 0, 0, 32]);
        let mut r = Reader::new(&buf, ByteOrder::Big);
        assert_eq!(SystemException::decode(&mut r).unwrap(), e);
        let mut bad = buf.to_vec();
        bad[43] = 9;
        let mut r = Reader::new(&bad, ByteOrder::Big);
        assert_eq!(
            SystemException::decode(&mut r),
            Err(GiopError::BadValue {
                what: "completion status",
                value: 9,
                offset: 40
            })
        );
    }
}
