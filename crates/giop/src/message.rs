//! The GIOP message bodies of 1.0, 1.1 and 1.2: Request, Reply,
//! CancelRequest, LocateRequest, LocateReply, CloseConnection and
//! MessageError, with their exact per-version header layouts.
//!
//! Encoding appends to a `BytesMut` the caller owns. A message is begun
//! ([`begin_request`], [`begin_reply`]), the caller writes the body through
//! a [`Writer`] whose alignment origin is the first byte of the GIOP header
//! ([`Pending::writer`]), and [`Pending::finish`] patches the size. GIOP 1.2
//! Request/Reply bodies start 8-aligned, but only a non-empty body is
//! padded (what every ORB does); decoding accepts both.
//!
//! Decoding takes a complete (reassembled) [`Frame`](crate::codec::Frame)
//! and gives a typed header plus the body as `Bytes` and its offset in the
//! message, so the caller's [`Reader`] aligns exactly as the sender did.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CdrError, Options, Reader, Splices, Writer};

use crate::codec::Frame;
use crate::context::{ServiceContext, ServiceContextList};
use crate::error::{GiopError, Result};
use crate::exception::SystemException;
use crate::header::{patch_size, Header, MsgType, Version, HEADER_LEN};
use crate::ior::{Ior, TaggedProfile};

/// 1.2 response_flags / 1.0–1.1 response_expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseMode {
    /// No reply (oneway): flags 0x00, response_expected false.
    Oneway = 0x00,
    /// SYNC_WITH_SERVER (1.2 only on the wire; 1.0/1.1 send "expected").
    SyncWithServer = 0x01,
    /// A normal twoway call: flags 0x03, response_expected true.
    Twoway = 0x03,
}

impl ResponseMode {
    /// Whether the peer sends a Reply.
    pub fn expects_reply(self) -> bool {
        self != ResponseMode::Oneway
    }

    fn from_flags(v: u8, offset: usize) -> Result<Self> {
        match v {
            0x00 => Ok(ResponseMode::Oneway),
            0x01 => Ok(ResponseMode::SyncWithServer),
            0x03 => Ok(ResponseMode::Twoway),
            value => Err(GiopError::BadValue {
                what: "response flags",
                value: value as u32,
                offset,
            }),
        }
    }
}

/// GIOP 1.2 TargetAddress (1.0/1.1 carry only an object key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetAddress {
    /// 0 KeyAddr: the object key (what every ORB sends).
    Key(Bytes),
    /// 1 ProfileAddr: a whole tagged profile.
    Profile(TaggedProfile),
    /// 2 ReferenceAddr: the index of the profile and the whole IOR.
    Reference { index: u32, ior: Ior },
}

impl TargetAddress {
    /// The object key this address names, if it can be found (an IIOP
    /// profile, or the selected profile of a reference).
    pub fn object_key(&self) -> Option<Bytes> {
        match self {
            TargetAddress::Key(k) => Some(k.clone()),
            TargetAddress::Profile(p) => p.object_key(),
            TargetAddress::Reference { index, ior } => ior
                .profiles
                .get(*index as usize)
                .and_then(|p| p.object_key()),
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let at = r.position();
        let disc = r
            .read_i16()
            .map_err(GiopError::cdr("target address discriminant"))?;
        match disc {
            0 => Ok(TargetAddress::Key(
                r.read_octet_bytes().map_err(GiopError::cdr("object key"))?,
            )),
            1 => Ok(TargetAddress::Profile(TaggedProfile::decode(r)?)),
            2 => {
                let index = r
                    .read_u32()
                    .map_err(GiopError::cdr("ReferenceAddr index"))?;
                let ior = Ior::decode(r)?;
                Ok(TargetAddress::Reference { index, ior })
            }
            d => Err(GiopError::BadValue {
                what: "addressing disposition",
                value: d as u16 as u32,
                offset: at,
            }),
        }
    }

    fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        match self {
            TargetAddress::Key(k) => {
                w.write_i16(0);
                w.write_octet_seq(k).map_err(GiopError::cdr("object key"))?;
            }
            TargetAddress::Profile(p) => {
                w.write_i16(1);
                p.encode(w)?;
            }
            TargetAddress::Reference { index, ior } => {
                w.write_i16(2);
                w.write_u32(*index);
                ior.encode(w)?;
            }
        }
        Ok(())
    }

    /// For 1.0/1.1, which carry a bare key.
    fn key_for_old_versions(&self) -> Result<Bytes> {
        self.object_key().ok_or(GiopError::NotInVersion {
            what: "a non-IIOP target address",
            minor: 1,
        })
    }
}

/// A Request header to encode (borrowed: nothing is copied but the bytes).
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub request_id: u32,
    pub response: ResponseMode,
    pub target: &'a TargetAddress,
    pub operation: &'a str,
    pub contexts: &'a [ServiceContext],
}

/// A decoded Request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    pub request_id: u32,
    pub response: ResponseMode,
    pub target: TargetAddress,
    /// Operation name bytes without the NUL (checked to be UTF-8).
    pub operation: Bytes,
    pub contexts: ServiceContextList,
    /// 1.0/1.1 requesting_principal (always empty in practice).
    pub principal: Bytes,
}

impl RequestHeader {
    /// The operation name.
    pub fn operation(&self) -> &str {
        std::str::from_utf8(&self.operation).unwrap_or("")
    }
}

/// Reply status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyStatus {
    NoException = 0,
    UserException = 1,
    SystemException = 2,
    LocationForward = 3,
    /// GIOP 1.2 only.
    LocationForwardPerm = 4,
    /// GIOP 1.2 only; body: short addressing disposition.
    NeedsAddressingMode = 5,
}

impl ReplyStatus {
    /// The status as GIOP names it.
    pub fn name(self) -> &'static str {
        match self {
            ReplyStatus::NoException => "NO_EXCEPTION",
            ReplyStatus::UserException => "USER_EXCEPTION",
            ReplyStatus::SystemException => "SYSTEM_EXCEPTION",
            ReplyStatus::LocationForward => "LOCATION_FORWARD",
            ReplyStatus::LocationForwardPerm => "LOCATION_FORWARD_PERM",
            ReplyStatus::NeedsAddressingMode => "NEEDS_ADDRESSING_MODE",
        }
    }

    /// LOCATION_FORWARD or LOCATION_FORWARD_PERM: the reply names another
    /// reference.
    pub fn is_forward(self) -> bool {
        matches!(
            self,
            ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm
        )
    }

    fn from_u32(v: u32, version: Version, offset: usize) -> Result<Self> {
        let s = match v {
            0 => ReplyStatus::NoException,
            1 => ReplyStatus::UserException,
            2 => ReplyStatus::SystemException,
            3 => ReplyStatus::LocationForward,
            4 if version.is_12() => ReplyStatus::LocationForwardPerm,
            5 if version.is_12() => ReplyStatus::NeedsAddressingMode,
            value => {
                return Err(GiopError::BadValue {
                    what: "reply status",
                    value,
                    offset,
                })
            }
        };
        Ok(s)
    }

    fn check_version(self, version: Version) -> Result<()> {
        if (self as u32) > 3 && !version.is_12() {
            return Err(GiopError::NotInVersion {
                what: match self {
                    ReplyStatus::LocationForwardPerm => "LOCATION_FORWARD_PERM",
                    _ => "NEEDS_ADDRESSING_MODE",
                },
                minor: version.minor,
            });
        }
        Ok(())
    }
}

/// A decoded Reply header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHeader {
    pub request_id: u32,
    pub status: ReplyStatus,
    pub contexts: ServiceContextList,
}

/// A message body: the bytes after the header fields, their stream offset
/// from the start of the GIOP header, and the byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub bytes: Bytes,
    /// Alignment offset of `bytes[0]`: its stream offset from the GIOP
    /// header (from its 1.1 Fragment's header when it lies in one).
    pub offset: usize,
    pub order: ByteOrder,
    /// Indices in `bytes` where the data of a later GIOP 1.1 Fragment
    /// begins (aligned from that Fragment's header, 12 bytes before it);
    /// `None` when the body is one stream. See [`Frame::segments`].
    pub segments: Option<Arc<[usize]>>,
}

impl Body {
    /// A reader over the body that aligns as the sender did.
    pub fn reader(&self, opts: Options) -> Reader<'_> {
        let r = Reader::from_bytes(&self.bytes, self.order)
            .with_base(self.offset)
            .options(opts);
        match &self.segments {
            None => r,
            Some(s) => r.with_segments(s, HEADER_LEN),
        }
    }

    /// Whether the body has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A decoded Request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub version: Version,
    pub header: RequestHeader,
    pub body: Body,
}

/// A decoded Reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub version: Version,
    pub header: ReplyHeader,
    pub body: Body,
}

impl Reply {
    /// The system exception of a SYSTEM_EXCEPTION reply.
    pub fn system_exception(&self) -> Result<SystemException> {
        SystemException::decode(&mut self.body.reader(Options::default()))
    }

    /// The forwarded IOR of a LOCATION_FORWARD(_PERM) reply.
    pub fn forward_ior(&self) -> Result<Ior> {
        Ok(Ior::decode(&mut self.body.reader(Options::default()))?)
    }

    /// The repository id that starts a USER_EXCEPTION body.
    pub fn user_exception_id(&self) -> Result<String> {
        self.body
            .reader(Options::default())
            .read_string()
            .map_err(GiopError::cdr("user exception repository id"))
    }
}

/// A decoded LocateRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocateRequest {
    pub request_id: u32,
    pub target: TargetAddress,
}

/// LocateReply status with its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocateStatus {
    UnknownObject,
    ObjectHere,
    ObjectForward(Ior),
    /// GIOP 1.2 only.
    ObjectForwardPerm(Ior),
    /// GIOP 1.2 only.
    SystemException(SystemException),
    /// GIOP 1.2 only.
    NeedsAddressingMode(i16),
}

impl LocateStatus {
    /// OBJECT_FORWARD or OBJECT_FORWARD_PERM: the reply names another
    /// reference (as [`ReplyStatus::is_forward`] for Replies).
    pub fn is_forward(&self) -> bool {
        self.forward().is_some()
    }

    /// The reference an OBJECT_FORWARD or OBJECT_FORWARD_PERM names.
    pub fn forward(&self) -> Option<&Ior> {
        match self {
            LocateStatus::ObjectForward(ior) | LocateStatus::ObjectForwardPerm(ior) => Some(ior),
            _ => None,
        }
    }

    /// The same status with the reference of a forward replaced by what
    /// `f` makes of it (`None` from `f`, or a status that forwards
    /// nowhere, gives `None`); permanence is kept. How a proxy rewrites
    /// the references that lead past it.
    pub fn map_forward(&self, f: impl FnOnce(&Ior) -> Option<Ior>) -> Option<LocateStatus> {
        match self {
            LocateStatus::ObjectForward(i) => f(i).map(LocateStatus::ObjectForward),
            LocateStatus::ObjectForwardPerm(i) => f(i).map(LocateStatus::ObjectForwardPerm),
            _ => None,
        }
    }

    /// The status as GIOP names it (`OBJECT_HERE`, `OBJECT_FORWARD` …).
    pub fn name(&self) -> &'static str {
        match self {
            LocateStatus::UnknownObject => "UNKNOWN_OBJECT",
            LocateStatus::ObjectHere => "OBJECT_HERE",
            LocateStatus::ObjectForward(_) => "OBJECT_FORWARD",
            LocateStatus::ObjectForwardPerm(_) => "OBJECT_FORWARD_PERM",
            LocateStatus::SystemException(_) => "LOC_SYSTEM_EXCEPTION",
            LocateStatus::NeedsAddressingMode(_) => "LOC_NEEDS_ADDRESSING_MODE",
        }
    }

    fn code(&self) -> u32 {
        match self {
            LocateStatus::UnknownObject => 0,
            LocateStatus::ObjectHere => 1,
            LocateStatus::ObjectForward(_) => 2,
            LocateStatus::ObjectForwardPerm(_) => 3,
            LocateStatus::SystemException(_) => 4,
            LocateStatus::NeedsAddressingMode(_) => 5,
        }
    }
}

/// A decoded LocateReply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocateReply {
    pub request_id: u32,
    pub status: LocateStatus,
}

/// Any complete GIOP message (fragments are reassembled by the codec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Request(Request),
    Reply(Reply),
    CancelRequest { request_id: u32 },
    LocateRequest(LocateRequest),
    LocateReply(LocateReply),
    CloseConnection,
    MessageError,
}

impl Message {
    /// The header's message type for this message.
    pub fn msg_type(&self) -> MsgType {
        match self {
            Message::Request(_) => MsgType::Request,
            Message::Reply(_) => MsgType::Reply,
            Message::CancelRequest { .. } => MsgType::CancelRequest,
            Message::LocateRequest(_) => MsgType::LocateRequest,
            Message::LocateReply(_) => MsgType::LocateReply,
            Message::CloseConnection => MsgType::CloseConnection,
            Message::MessageError => MsgType::MessageError,
        }
    }

    /// Decode the message whose header is `header` and whose bytes after the
    /// header are `payload` (already reassembled, one stream). `opts`
    /// supplies limits and the code sets for strings in headers.
    pub fn decode(header: &Header, payload: Bytes, opts: Options) -> Result<Message> {
        Self::decode_segmented(header, payload, None, opts)
    }

    /// Decode a frame from [`Decoder`](crate::codec::Decoder), honouring
    /// the alignment of reassembled GIOP 1.1 Fragments.
    pub fn decode_frame(frame: Frame, opts: Options) -> Result<Message> {
        Self::decode_segmented(&frame.header, frame.payload, frame.segments, opts)
    }

    /// [`decode`](Self::decode) of a payload whose data from each index in
    /// `segments` on is aligned from offset 12 ([`Frame::segments`]).
    pub fn decode_segmented(
        header: &Header,
        payload: Bytes,
        segments: Option<Arc<[usize]>>,
        opts: Options,
    ) -> Result<Message> {
        let version = header.version;
        let order = header.order;
        let segs: &[usize] = segments.as_deref().unwrap_or(&[]);
        let mut r = Reader::from_bytes(&payload, order)
            .with_base(HEADER_LEN)
            .with_segments(segs, HEADER_LEN)
            .options(opts);
        let msg = match header.msg_type {
            MsgType::Request => {
                let (header, _) = decode_request_header(&mut r, version, &payload)?;
                Message::Request(request_after_header(
                    &mut r, version, header, &payload, segs,
                ))
            }
            MsgType::Reply
                if version.is_12() && segs.is_empty() && quiet_reply(&payload, order) =>
            {
                // No service contexts, one stream: the three ulongs read
                // where they lie (what the loop below reads, without it).
                let (request_id, status) = quiet_reply_head(&payload, version, order)?;
                Message::Reply(quiet_reply_of(
                    version,
                    order,
                    request_id,
                    status,
                    payload.slice(12..),
                ))
            }
            MsgType::Reply => {
                let (request_id, status, contexts);
                if version.is_12() {
                    request_id = r.read_u32().map_err(GiopError::cdr("reply request id"))?;
                    let at = r.position();
                    let s = r.read_u32().map_err(GiopError::cdr("reply status"))?;
                    status = ReplyStatus::from_u32(s, version, at)?;
                    contexts = ServiceContextList::decode(&mut r)?;
                    if r.remaining() > 0 {
                        skip_body_pad(&mut r);
                    }
                } else {
                    contexts = ServiceContextList::decode(&mut r)?;
                    request_id = r.read_u32().map_err(GiopError::cdr("reply request id"))?;
                    let at = r.position();
                    let s = r.read_u32().map_err(GiopError::cdr("reply status"))?;
                    status = ReplyStatus::from_u32(s, version, at)?;
                }
                let body = body_at(&r, &payload, segs);
                Message::Reply(Reply {
                    version,
                    header: ReplyHeader {
                        request_id,
                        status,
                        contexts,
                    },
                    body,
                })
            }
            MsgType::CancelRequest => {
                let request_id = r.read_u32().map_err(GiopError::cdr("cancel request id"))?;
                expect_end(&r, "CancelRequest")?;
                Message::CancelRequest { request_id }
            }
            MsgType::LocateRequest => {
                let request_id = r.read_u32().map_err(GiopError::cdr("locate request id"))?;
                let target = if version.is_12() {
                    TargetAddress::decode(&mut r)?
                } else {
                    TargetAddress::Key(r.read_octet_bytes().map_err(GiopError::cdr("object key"))?)
                };
                expect_end(&r, "LocateRequest")?;
                Message::LocateRequest(LocateRequest { request_id, target })
            }
            MsgType::LocateReply => {
                let request_id = r.read_u32().map_err(GiopError::cdr("locate reply id"))?;
                let at = r.position();
                let s = r
                    .read_u32()
                    .map_err(GiopError::cdr("locate reply status"))?;
                let status = match (s, version.is_12()) {
                    (0, _) => LocateStatus::UnknownObject,
                    (1, _) => LocateStatus::ObjectHere,
                    (2, _) => LocateStatus::ObjectForward(Ior::decode(&mut r)?),
                    (3, true) => LocateStatus::ObjectForwardPerm(Ior::decode(&mut r)?),
                    (4, true) => LocateStatus::SystemException(SystemException::decode(&mut r)?),
                    (5, true) => LocateStatus::NeedsAddressingMode(
                        r.read_i16()
                            .map_err(GiopError::cdr("addressing disposition"))?,
                    ),
                    (value, _) => {
                        return Err(GiopError::BadValue {
                            what: "locate status",
                            value,
                            offset: at,
                        })
                    }
                };
                expect_end(&r, "LocateReply")?;
                Message::LocateReply(LocateReply { request_id, status })
            }
            MsgType::CloseConnection => {
                expect_end(&r, "CloseConnection")?;
                Message::CloseConnection
            }
            MsgType::MessageError => {
                expect_end(&r, "MessageError")?;
                Message::MessageError
            }
            MsgType::Fragment => {
                return Err(GiopError::FragmentWithoutStart { request_id: None });
            }
        };
        Ok(msg)
    }
}

/// The body of a message read by `r` over `payload` (with the reassembled
/// fragments' `segs`), from the reader's position on. Inlined, with
/// [`request_after_header`]: on a remembered request header they are
/// most of the server's decoding (callgrind: ~70 instructions a call
/// out of line).
#[inline(always)]
fn body_at(r: &Reader<'_>, payload: &Bytes, segs: &[usize]) -> Body {
    let at = r.index();
    let later = &segs[segs.partition_point(|&s| s <= at)..];
    Body {
        bytes: payload.slice(at..),
        offset: r.align_offset(),
        order: r.order(),
        segments: (!later.is_empty()).then(|| later.iter().map(|s| s - at).collect()),
    }
}

/// The Request whose header `r` has just read (or skipped: the header's
/// memo, [`crate::memo`]): the 1.2 pad before a body skipped, the body
/// from there.
#[inline(always)]
pub(crate) fn request_after_header(
    r: &mut Reader<'_>,
    version: Version,
    header: RequestHeader,
    payload: &Bytes,
    segs: &[usize],
) -> Request {
    if version.is_12() && r.remaining() > 0 {
        skip_body_pad(r);
    }
    Request {
        version,
        header,
        body: body_at(r, payload, segs),
    }
}

/// A GIOP 1.2 Reply payload whose header is whole and carries no service
/// contexts.
fn quiet_reply(payload: &[u8], order: ByteOrder) -> bool {
    payload.len() >= 12 && read_u32_at(payload, 8, order) == 0
}

/// The request id and status of a [`quiet_reply`] payload of `version`.
fn quiet_reply_head(
    payload: &[u8],
    version: Version,
    order: ByteOrder,
) -> Result<(u32, ReplyStatus)> {
    let word = |at: usize| read_u32_at(payload, at, order);
    let status = ReplyStatus::from_u32(word(4), version, HEADER_LEN + 4)?;
    Ok((word(0), status))
}

/// The Reply of a [`quiet_reply`] payload: its body is what follows the
/// three ulongs, which end 8-aligned (at stream offset 24), so no pad.
fn quiet_reply_of(
    version: Version,
    order: ByteOrder,
    request_id: u32,
    status: ReplyStatus,
    body: Bytes,
) -> Reply {
    Reply {
        version,
        header: ReplyHeader {
            request_id,
            status,
            contexts: ServiceContextList::default(),
        },
        body: Body {
            bytes: body,
            offset: HEADER_LEN + 12,
            order,
            segments: None,
        },
    }
}

impl Reply {
    /// The GIOP 1.2 Reply at the start of `buf`, taken off it and read
    /// where it lies, when it is one a client gets for almost every call:
    /// whole, of one piece, within `decoder`'s size limit, without service
    /// contexts and with a known status. That is what
    /// [`Decoder::decode`](crate::codec::Decoder::decode) and then
    /// [`Message::decode_frame`] make of it, without building a frame or
    /// a message around it (for a one-call-at-a-time client, most of what
    /// reading a reply cost). `None`, with `buf` untouched, for anything
    /// else: those two then read it as usual and report what is wrong.
    pub fn take_quiet(decoder: &mut crate::codec::Decoder, buf: &mut BytesMut) -> Option<Reply> {
        let (h, (request_id, status), mut message) =
            decoder.take_whole_12(buf, MsgType::Reply, |order, payload| {
                quiet_reply(payload, order)
                    .then(|| quiet_reply_head(payload, Version::V1_2, order).ok())
                    .flatten()
            })?;
        bytes::Buf::advance(&mut message, HEADER_LEN + 12);
        Some(quiet_reply_of(
            h.version,
            h.order,
            request_id,
            status,
            message.freeze(),
        ))
    }
}

/// The ulong at `at` in `payload` (which holds it).
pub(crate) fn read_u32_at(payload: &[u8], at: usize, order: ByteOrder) -> u32 {
    let b: [u8; 4] = payload[at..at + 4].try_into().unwrap_or_default();
    match order {
        ByteOrder::Big => u32::from_be_bytes(b),
        ByteOrder::Little => u32::from_le_bytes(b),
    }
}

/// `v` as a ulong's bytes in `order`.
pub(crate) fn u32_bytes(v: u32, order: ByteOrder) -> [u8; 4] {
    match order {
        ByteOrder::Big => v.to_be_bytes(),
        ByteOrder::Little => v.to_le_bytes(),
    }
}

/// Skip the 1.2 pad before a non-empty body; an unpadded empty body (or a
/// pad without a body) is accepted too.
fn skip_body_pad(r: &mut Reader<'_>) {
    let pad = r.position().wrapping_neg() & 7;
    if pad <= r.remaining() {
        // Cannot fail: checked against the bytes left.
        let _ = r.take(pad);
    }
}

fn expect_end(r: &Reader<'_>, what: &'static str) -> Result<()> {
    if r.remaining() == 0 {
        Ok(())
    } else {
        Err(GiopError::Trailing {
            what,
            offset: r.position(),
            remaining: r.remaining(),
        })
    }
}

/// A Request header, and the payload index of its request id.
pub(crate) fn decode_request_header(
    r: &mut Reader<'_>,
    version: Version,
    payload: &Bytes,
) -> Result<(RequestHeader, usize)> {
    if version.is_12() {
        let request_id = r.read_u32().map_err(GiopError::cdr("request id"))?;
        // After the read: it aligned first.
        let id_at = r.index() - 4;
        let at = r.position();
        let flags = r.read_u8().map_err(GiopError::cdr("response flags"))?;
        let response = ResponseMode::from_flags(flags, at)?;
        r.take(3).map_err(GiopError::cdr("request reserved"))?;
        let target = TargetAddress::decode(r)?;
        let operation = read_operation(r, payload)?;
        let contexts = ServiceContextList::decode(r)?;
        let header = RequestHeader {
            request_id,
            response,
            target,
            operation,
            contexts,
            principal: Bytes::new(),
        };
        Ok((header, id_at))
    } else {
        let contexts = ServiceContextList::decode(r)?;
        let request_id = r.read_u32().map_err(GiopError::cdr("request id"))?;
        let id_at = r.index() - 4;
        let expected = r.read_bool().map_err(GiopError::cdr("response expected"))?;
        if version.minor == 1 {
            r.take(3).map_err(GiopError::cdr("request reserved"))?;
        }
        let key = r.read_octet_bytes().map_err(GiopError::cdr("object key"))?;
        let operation = read_operation(r, payload)?;
        let principal = r
            .read_octet_bytes()
            .map_err(GiopError::cdr("requesting principal"))?;
        let header = RequestHeader {
            request_id,
            response: if expected {
                ResponseMode::Twoway
            } else {
                ResponseMode::Oneway
            },
            target: TargetAddress::Key(key),
            operation,
            contexts,
            principal,
        };
        Ok((header, id_at))
    }
}

fn read_operation(r: &mut Reader<'_>, payload: &Bytes) -> Result<Bytes> {
    let at = r.position();
    let s = r.read_string_bytes().map_err(GiopError::cdr("operation"))?;
    if std::str::from_utf8(s).is_err() {
        return Err(GiopError::Cdr {
            what: "operation",
            source: CdrError::InvalidCodeSet {
                offset: at,
                codeset: "UTF-8",
            },
        });
    }
    // The reader runs over `payload`: share its memory.
    Ok(payload.slice_ref(s))
}

/// A message being encoded: where it starts in the buffer, where its body
/// starts, and (for replies) where the status lies, so that it can be
/// finished, or its body replaced, after the caller wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    start: usize,
    order: ByteOrder,
    opts: Options,
    /// Buffer index where the 1.2 body pad starts (== body_start if none).
    pad_at: usize,
    body_start: usize,
    status_at: Option<usize>,
}

impl Pending {
    /// A writer for the body, aligned relative to the message start.
    pub fn writer<'a>(&self, buf: &'a mut BytesMut) -> Writer<'a> {
        Writer::with_origin(buf, self.order, self.start).options(self.opts)
    }

    /// A body writer that splices long shared runs
    /// ([`Writer::write_shared`]) into `splices` instead of copying them.
    /// Finish the message with [`finish_spliced`](Self::finish_spliced)
    /// and the same list.
    pub fn writer_spliced<'a>(
        &self,
        buf: &'a mut BytesMut,
        splices: &'a mut Splices,
    ) -> Writer<'a> {
        self.writer(buf).splicing(splices)
    }

    /// Buffer index of the first byte of the message.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Buffer index where the header ends (the 1.2 pad, if any, follows).
    pub(crate) fn head_end(&self) -> usize {
        self.pad_at
    }

    /// Buffer index where the body starts.
    pub fn body_start(&self) -> usize {
        self.body_start
    }

    /// Drop whatever body was written so far.
    pub fn clear_body(&self, buf: &mut BytesMut) {
        buf.truncate(self.body_start);
    }

    /// Change the status of a reply begun with [`begin_reply`].
    pub fn set_reply_status(&self, buf: &mut BytesMut, status: ReplyStatus) {
        if let Some(at) = self.status_at {
            let b = match self.order {
                ByteOrder::Big => (status as u32).to_be_bytes(),
                ByteOrder::Little => (status as u32).to_le_bytes(),
            };
            buf[at..at + 4].copy_from_slice(&b);
        }
    }

    /// Finish the message: drop the 1.2 pad if the body is empty, patch
    /// the size. Returns the total message length.
    pub fn finish(self, buf: &mut BytesMut) -> Result<usize> {
        self.finish_inner(buf, 0)
    }

    /// [`finish`](Self::finish) for a message whose body was written with
    /// [`writer_spliced`](Self::writer_spliced): the size counts the runs
    /// in `splices` recorded after the message start.
    pub fn finish_spliced(self, buf: &mut BytesMut, splices: &Splices) -> Result<usize> {
        self.finish_inner(buf, splices.bytes_after(self.start))
    }

    fn finish_inner(self, buf: &mut BytesMut, spliced: usize) -> Result<usize> {
        if buf.len() == self.body_start && spliced == 0 {
            buf.truncate(self.pad_at);
        }
        let total = buf.len() - self.start + spliced;
        let size = u32::try_from(total - HEADER_LEN).map_err(|_| GiopError::TooLarge {
            size: total as u64,
            limit: u32::MAX as u64,
        })?;
        patch_size(buf, self.start, self.order, size);
        Ok(total)
    }
}

pub(crate) fn begin(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    msg_type: MsgType,
) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&Header::new(version, order, msg_type, 0).to_bytes());
    start
}

/// Begin a Request: header and request header are written; the caller then
/// writes the body with [`Pending::writer`] and calls [`Pending::finish`].
pub fn begin_request(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    opts: Options,
    head: &RequestHead<'_>,
) -> Result<Pending> {
    let start = begin(buf, version, order, MsgType::Request);
    let res = (|| {
        let mut w = Writer::with_origin(buf, order, start).options(opts);
        if version.is_12() {
            w.write_u32(head.request_id);
            w.write_u8(head.response as u8);
            w.write_bytes(&[0, 0, 0]);
            head.target.encode(&mut w)?;
            w.write_string(head.operation)
                .map_err(GiopError::cdr("operation"))?;
            encode_contexts(&mut w, head.contexts)?;
        } else {
            encode_contexts(&mut w, head.contexts)?;
            w.write_u32(head.request_id);
            w.write_bool(head.response.expects_reply());
            if version.minor == 1 {
                w.write_bytes(&[0, 0, 0]);
            }
            let key = head.target.key_for_old_versions()?;
            w.write_octet_seq(&key)
                .map_err(GiopError::cdr("object key"))?;
            w.write_string(head.operation)
                .map_err(GiopError::cdr("operation"))?;
            w.write_u32(0); // empty principal
        }
        Ok(())
    })();
    if let Err(e) = res {
        buf.truncate(start);
        return Err(e);
    }
    Ok(body_pending(buf, version, order, opts, start, None))
}

pub(crate) fn body_pending(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    opts: Options,
    start: usize,
    status_at: Option<usize>,
) -> Pending {
    let pad_at = buf.len();
    if version.is_12() {
        let pad = (pad_at - start).wrapping_neg() & 7;
        buf.extend_from_slice(&[0u8; 8][..pad]);
    }
    Pending {
        start,
        order,
        opts,
        pad_at,
        body_start: buf.len(),
        status_at,
    }
}

fn encode_contexts(w: &mut Writer<'_>, contexts: &[ServiceContext]) -> Result<()> {
    w.write_len(contexts.len())
        .map_err(GiopError::cdr("service context count"))?;
    for c in contexts {
        w.write_u32(c.id);
        w.write_octet_seq(&c.data)
            .map_err(GiopError::cdr("service context data"))?;
    }
    Ok(())
}

/// Encode a whole Request whose body `body` writes.
pub fn encode_request(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    opts: Options,
    head: &RequestHead<'_>,
    body: impl FnOnce(&mut Writer<'_>) -> std::result::Result<(), CdrError>,
) -> Result<usize> {
    let p = begin_request(buf, version, order, opts, head)?;
    if let Err(e) = body(&mut p.writer(buf)) {
        buf.truncate(p.start);
        return Err(GiopError::Cdr {
            what: "request body",
            source: e,
        });
    }
    p.finish(buf)
}

/// Begin a Reply (see [`begin_request`]). The status may be changed later
/// with [`Pending::set_reply_status`].
pub fn begin_reply(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    opts: Options,
    request_id: u32,
    status: ReplyStatus,
    contexts: &[ServiceContext],
) -> Result<Pending> {
    status.check_version(version)?;
    let start = begin(buf, version, order, MsgType::Reply);
    let status_at = if contexts.is_empty() {
        // What every reply of ours but the first carries: three ulongs,
        // aligned where they fall, written at once.
        let (words, status_at) = match version.is_12() {
            true => ([request_id, status as u32, 0], start + 16),
            false => ([0, request_id, status as u32], start + 20),
        };
        let mut head = [0u8; 12];
        for (to, v) in head.chunks_exact_mut(4).zip(words) {
            to.copy_from_slice(&u32_bytes(v, order));
        }
        buf.extend_from_slice(&head);
        status_at
    } else {
        let mut w = Writer::with_origin(buf, order, start).options(opts);
        let status_at;
        let res = if version.is_12() {
            w.write_u32(request_id);
            status_at = w.buf_len();
            w.write_u32(status as u32);
            encode_contexts(&mut w, contexts)
        } else {
            let r = encode_contexts(&mut w, contexts);
            w.write_u32(request_id);
            status_at = w.buf_len();
            w.write_u32(status as u32);
            r
        };
        if let Err(e) = res {
            buf.truncate(start);
            return Err(e);
        }
        status_at
    };
    Ok(body_pending(
        buf,
        version,
        order,
        opts,
        start,
        Some(status_at),
    ))
}

/// Encode a whole Reply whose body `body` writes.
#[allow(clippy::too_many_arguments)]
pub fn encode_reply(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    opts: Options,
    request_id: u32,
    status: ReplyStatus,
    contexts: &[ServiceContext],
    body: impl FnOnce(&mut Writer<'_>) -> std::result::Result<(), CdrError>,
) -> Result<usize> {
    let p = begin_reply(buf, version, order, opts, request_id, status, contexts)?;
    if let Err(e) = body(&mut p.writer(buf)) {
        buf.truncate(p.start);
        return Err(GiopError::Cdr {
            what: "reply body",
            source: e,
        });
    }
    p.finish(buf)
}

/// Encode a SYSTEM_EXCEPTION reply.
pub fn encode_system_exception(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    request_id: u32,
    ex: &SystemException,
) -> Result<usize> {
    let opts = Options::default();
    let p = begin_reply(
        buf,
        version,
        order,
        opts,
        request_id,
        ReplyStatus::SystemException,
        &[],
    )?;
    ex.encode(&mut p.writer(buf))?;
    p.finish(buf)
}

/// Encode a LOCATION_FORWARD (or, 1.2 only, LOCATION_FORWARD_PERM) reply.
pub fn encode_location_forward(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    request_id: u32,
    ior: &Ior,
    permanent: bool,
) -> Result<usize> {
    let status = if permanent {
        ReplyStatus::LocationForwardPerm
    } else {
        ReplyStatus::LocationForward
    };
    let p = begin_reply(
        buf,
        version,
        order,
        Options::default(),
        request_id,
        status,
        &[],
    )?;
    ior.encode(&mut p.writer(buf))?;
    p.finish(buf)
}

/// Encode a CancelRequest.
pub fn encode_cancel_request(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    request_id: u32,
) -> Result<usize> {
    let start = begin(buf, version, order, MsgType::CancelRequest);
    Writer::with_origin(buf, order, start).write_u32(request_id);
    finish_plain(buf, start, order)
}

fn finish_plain(buf: &mut BytesMut, start: usize, order: ByteOrder) -> Result<usize> {
    let total = buf.len() - start;
    let size = u32::try_from(total - HEADER_LEN).map_err(|_| GiopError::TooLarge {
        size: total as u64,
        limit: u32::MAX as u64,
    })?;
    patch_size(buf, start, order, size);
    Ok(total)
}

/// Encode a LocateRequest. 1.0/1.1 carry only the object key.
pub fn encode_locate_request(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    request_id: u32,
    target: &TargetAddress,
) -> Result<usize> {
    let start = begin(buf, version, order, MsgType::LocateRequest);
    let mut w = Writer::with_origin(buf, order, start);
    w.write_u32(request_id);
    let r = if version.is_12() {
        target.encode(&mut w)
    } else {
        target
            .key_for_old_versions()
            .and_then(|k| w.write_octet_seq(&k).map_err(GiopError::cdr("object key")))
    };
    if let Err(e) = r {
        buf.truncate(start);
        return Err(e);
    }
    finish_plain(buf, start, order)
}

/// Encode a LocateReply (body not 8-aligned, as every ORB does). The
/// 1.2-only statuses are refused for 1.0/1.1.
pub fn encode_locate_reply(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    reply: &LocateReply,
) -> Result<usize> {
    let code = reply.status.code();
    if code > 2 && !version.is_12() {
        return Err(GiopError::NotInVersion {
            what: "this locate status",
            minor: version.minor,
        });
    }
    let start = begin(buf, version, order, MsgType::LocateReply);
    let mut w = Writer::with_origin(buf, order, start);
    w.write_u32(reply.request_id);
    w.write_u32(code);
    let r = match &reply.status {
        LocateStatus::ObjectForward(ior) | LocateStatus::ObjectForwardPerm(ior) => {
            ior.encode(&mut w).map_err(GiopError::from)
        }
        LocateStatus::SystemException(e) => e.encode(&mut w),
        LocateStatus::NeedsAddressingMode(d) => {
            w.write_i16(*d);
            Ok(())
        }
        LocateStatus::UnknownObject | LocateStatus::ObjectHere => Ok(()),
    };
    if let Err(e) = r {
        buf.truncate(start);
        return Err(e);
    }
    finish_plain(buf, start, order)
}

/// Encode a header-only message: CloseConnection or MessageError.
pub fn encode_empty(
    buf: &mut BytesMut,
    version: Version,
    order: ByteOrder,
    msg_type: MsgType,
) -> usize {
    buf.extend_from_slice(&Header::new(version, order, msg_type, 0).to_bytes());
    HEADER_LEN
}

#[cfg(test)]
mod quiet_reply_tests {
    use super::*;
    use crate::codec::{CodecConfig, Decoder};
    use proptest::prelude::*;

    /// A message: a GIOP header as given (its size `size_delta` off the
    /// true one) and a payload laid out as a 1.2 Reply's, with `contexts`
    /// empty service contexts.
    #[allow(clippy::too_many_arguments)]
    fn message(
        minor: u8,
        little: bool,
        more: bool,
        ty: u8,
        id: u32,
        status: u32,
        contexts: u32,
        body: &[u8],
        size_delta: i64,
    ) -> Vec<u8> {
        let order = ByteOrder::from_flag(little);
        let word = |v: u32| u32_bytes(v, order);
        let mut payload = Vec::new();
        payload.extend_from_slice(&word(id));
        payload.extend_from_slice(&word(status));
        payload.extend_from_slice(&word(contexts));
        for c in 0..contexts {
            payload.extend_from_slice(&word(c + 1));
            payload.extend_from_slice(&word(0));
        }
        if !body.is_empty() && contexts > 0 {
            // The 1.2 body starts 8-aligned.
            while !(HEADER_LEN + payload.len()).is_multiple_of(8) {
                payload.push(0);
            }
        }
        payload.extend_from_slice(body);
        let size = (payload.len() as i64 + size_delta).max(0) as u32;
        let mut m = vec![b'G', b'I', b'O', b'P', 1, minor];
        m.push(u8::from(little) | if more { 2 } else { 0 });
        m.push(ty);
        m.extend_from_slice(&word(size));
        m.extend_from_slice(&payload);
        m
    }

    /// A whole GIOP 1.2 Fragment of request `id`.
    fn fragment(little: bool, id: u32) -> Vec<u8> {
        message(2, little, false, 7, id, 0, 0, &[], -8)
    }

    fn quiet(little: bool, id: u32, body: &[u8]) -> Vec<u8> {
        message(2, little, false, 1, id, 0, 0, body, 0)
    }

    #[test]
    fn takes_a_quiet_reply_as_the_full_decode_reads_it() {
        for little in [false, true] {
            let mut bytes = quiet(little, 42, &[1, 2, 3, 4, 5]);
            bytes.extend_from_slice(&fragment(little, 42));
            let (mut a, mut b) = (Decoder::default(), Decoder::default());
            let (mut ba, mut bb) = (BytesMut::from(&bytes[..]), BytesMut::from(&bytes[..]));
            let r = Reply::take_quiet(&mut a, &mut ba).expect("a quiet reply");
            assert_eq!(r.header.request_id, 42);
            assert_eq!(&r.body.bytes[..], &[1, 2, 3, 4, 5]);
            assert_eq!(r.body.offset, 24);
            let full =
                Message::decode_frame(b.decode(&mut bb).unwrap().unwrap(), Options::default());
            assert_eq!(full.unwrap(), Message::Reply(r));
            assert_eq!(ba, bb);
            // The decoder knows the reply was whole: a fragment for it after
            // it is named as such, as after the full decode.
            let after = a.decode(&mut ba);
            assert_eq!(after, b.decode(&mut bb));
            assert_eq!(
                after,
                Err(GiopError::FragmentAfterComplete {
                    request_id: Some(42)
                })
            );
        }
    }

    #[test]
    fn leaves_every_other_message_to_the_full_decode() {
        let cases: [(&str, Vec<u8>); 9] = [
            (
                "a service context",
                message(2, true, false, 1, 1, 0, 1, &[9], 0),
            ),
            ("GIOP 1.1", message(1, true, false, 1, 1, 0, 0, &[], 0)),
            (
                "a first piece",
                message(2, true, true, 1, 1, 0, 0, &[9; 8], 0),
            ),
            ("a Request", message(2, true, false, 0, 1, 0, 0, &[], 0)),
            (
                "an unknown status",
                message(2, true, false, 1, 1, 6, 0, &[], 0),
            ),
            (
                "a size short of the reply header",
                message(2, true, false, 1, 1, 0, 0, &[], -4),
            ),
            (
                "a size past the bytes here",
                message(2, true, false, 1, 1, 0, 0, &[], 1),
            ),
            ("a bad magic", {
                let mut m = quiet(true, 1, &[]);
                m[0] = b'X';
                m
            }),
            (
                "only part of the header",
                quiet(true, 1, &[])[..20].to_vec(),
            ),
        ];
        for (what, bytes) in cases {
            let mut buf = BytesMut::from(&bytes[..]);
            assert!(
                Reply::take_quiet(&mut Decoder::default(), &mut buf).is_none(),
                "{what}"
            );
            assert_eq!(&buf[..], &bytes[..], "{what}: untouched");
        }
        // Over the size limit.
        let bytes = quiet(true, 1, &[0; 64]);
        let mut small = Decoder::new(CodecConfig {
            max_message_size: 64,
            max_reassembled_size: 64,
        });
        let mut buf = BytesMut::from(&bytes[..]);
        assert!(Reply::take_quiet(&mut small, &mut buf).is_none());
        assert!(matches!(
            small.decode(&mut buf),
            Err(GiopError::TooLarge { .. })
        ));
    }

    proptest! {
        /// Whatever the bytes, the quick path either leaves them untouched
        /// or takes exactly the message the full decode takes, reads it
        /// alike, and leaves the decoder as the full decode does.
        #[test]
        fn agrees_with_the_full_decode(
            minor in prop::sample::select(vec![0u8, 1, 2, 2, 2]),
            little: bool,
            more in prop::bool::weighted(0.2),
            ty in prop::sample::select(vec![1u8, 1, 1, 0, 4, 7]),
            id: u32,
            status in 0u32..8,
            contexts in prop::sample::select(vec![0u32, 0, 0, 1, 2]),
            body in prop::collection::vec(any::<u8>(), 0..40),
            size_delta in prop::sample::select(vec![0i64, 0, 0, -13, -4, -1, 1, 5]),
            then in 0..3u8,
            limit in prop::sample::select(vec![512usize << 20, 24, 40]),
        ) {
            let mut bytes = message(minor, little, more, ty, id, status, contexts, &body, size_delta);
            match then {
                0 => {}
                1 => bytes.extend_from_slice(&fragment(little, id)),
                _ => bytes.extend_from_slice(&quiet(little, id.wrapping_add(1), &body)),
            }
            let cfg = CodecConfig { max_message_size: limit, max_reassembled_size: 512 << 20 };
            let (mut a, mut b) = (Decoder::new(cfg), Decoder::new(cfg));
            let (mut ba, mut bb) = (BytesMut::from(&bytes[..]), BytesMut::from(&bytes[..]));
            match Reply::take_quiet(&mut a, &mut ba) {
                None => prop_assert_eq!(&ba[..], &bytes[..]),
                Some(r) => {
                    let frame = b.decode(&mut bb);
                    prop_assert!(matches!(frame, Ok(Some(_))), "{:?}", frame);
                    let full = Message::decode_frame(frame.unwrap().unwrap(), Options::default());
                    prop_assert_eq!(full, Ok(Message::Reply(r)));
                    prop_assert_eq!(&ba, &bb);
                    prop_assert_eq!(a.decode(&mut ba), b.decode(&mut bb));
                    prop_assert_eq!(&ba, &bb);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_forward_rewrites_only_forwards_and_keeps_permanence() {
        let a = Ior::new("IDL:A:1.0", Vec::new());
        let b = Ior::new("IDL:B:1.0", Vec::new());
        let to_b = |_: &Ior| Some(b.clone());
        assert_eq!(
            LocateStatus::ObjectForward(a.clone()).map_forward(to_b),
            Some(LocateStatus::ObjectForward(b.clone()))
        );
        assert_eq!(
            LocateStatus::ObjectForwardPerm(a.clone()).map_forward(to_b),
            Some(LocateStatus::ObjectForwardPerm(b.clone()))
        );
        assert_eq!(LocateStatus::ObjectHere.map_forward(to_b), None);
        assert_eq!(LocateStatus::ObjectForward(a).map_forward(|_| None), None);
    }
}
