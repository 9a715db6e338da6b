//! CORBA Common Data Representation (CDR), CORBA 3.x Part 2 "CDR Transfer
//! Syntax": the encoding every GIOP message body uses.
//!
//! Layers, bottom up (no I/O anywhere in this crate):
//! - [`options`]: byte order, char/wchar code sets, GIOP-version wchar rules
//!   and the limits that protect a decoder from hostile lengths.
//! - [`prim`]: fixed-size primitives and their bulk (memcpy) paths.
//! - [`Writer`] / [`Reader`]: aligned encode/decode relative to an origin
//!   the caller sets (GIOP message start, body start, encapsulation start).
//! - [`typecode`]: CORBA TypeCodes and their CDR encoding.
//! - [`value`]: dynamic values of any IDL type, driven by a TypeCode.
//! - [`valuetype`]: valuetypes' framing (null, indirection, repository
//!   ids, chunks and end tags) for the dynamic values and hand-written
//!   value types alike.
//! - [`ior`]: the one IOR type of the workspace (a dynamic object
//!   reference is one): CDR and `IOR:` text forms, IIOP profiles, tagged
//!   components.
//! - [`ser`] / [`de`]: serde on top of `Writer` / `Reader` ([`to_bytes`],
//!   [`to_writer`], [`from_bytes`], [`from_reader`]); [`wrap`]: wrappers for
//!   the IDL types Rust lacks and one-copy primitive sequences ([`Seq`]);
//!   [`layout`]: sequences of structs of primitives at offsets computed
//!   from their TypeCode, checked as serde checks them.
//!
//! Everything above the core (serde, TypeCodes, dynamic values) is built only on
//! `Reader` and `Writer`.

pub mod de;
pub mod error;
pub mod fixed;
pub mod ior;
pub mod layout;
pub mod options;
pub mod prim;
pub mod reader;
pub mod ser;
pub mod typecode;
pub mod value;
pub mod valuetype;
pub mod wrap;
pub mod writer;

pub use de::{from_bytes, from_reader};
pub use error::{CdrError, Result};
pub use fixed::{read_fixed_seq, write_fixed_seq, FixedLayout};
pub use ior::{Ior, IorError, TaggedProfile};
pub use layout::{read_struct_seq, write_struct_seq, StructLayout, TcStruct};
pub use options::{
    ByteOrder, CharCodeSet, Limits, Options, UnsupportedVersion, Version, WCharCodeSet, WcharRules,
};
pub use prim::{Primitive, SharedSeq};
pub use reader::Reader;
pub use ser::{to_bytes, to_writer};
pub use typecode::{TCKind, TcDef, TypeCode};
pub use value::{Any, Value};
pub use valuetype::{
    TypeInfo, ValueHead, ValueReader, ValueStart, ValueStyle, ValueToken, ValueWriter,
};
pub use wrap::{CharSeq, LongDouble, Octets, Seq, SeqElem, WChar, WString};
pub use writer::{Segments, Splices, Writer};
