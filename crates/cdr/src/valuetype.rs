//! Valuetypes on the wire (CORBA 3.0 §15.3.4, CORBA 3.x Part 2 §9.3.4):
//! the framing around a value's state, which the dynamic codec
//! ([`Value`](crate::Value)) and hand-written value types share.
//!
//! Where a value may stand, the stream holds one of:
//! - `0`: a null value;
//! - `0xffffffff` and a long offset, relative to the offset field and
//!   below -4: the value whose tag lies there, read earlier in the same
//!   stream (a shared reference), or still being read (a cycle);
//! - a value tag `0x7fffff00 | flags`: 0x01 a codebase URL follows; 0x06
//!   the type information (0x00 none: the formal type; 0x02 one
//!   repository id; 0x06 a list of them, the actual type first, then its
//!   truncatable bases); 0x08 the state is chunked. The URL, each
//!   repository id and the whole list may each be an indirection to an
//!   earlier one. Then the state: unchunked, the members one after the
//!   other; chunked, chunks (a size from 1 to below 0x7fffff00, then
//!   that many bytes), nested values between chunks (a value inside a
//!   chunked one is chunked too), and an end tag `-n`, `n` the chunked
//!   nesting level (1 for the outermost), which also closes the values
//!   it is nested in when `n` is theirs.
//!
//! A chunk may end between any two primitives (omniORB ends one where
//! its buffer fills), never inside a primitive, an array of primitives or
//! a string: the [`Reader`] moves from chunk to chunk by itself while a
//! chunked value's state is read, and the state may be truncated (the
//! reader knows only a base of the value's type), which skips what
//! follows, nested values included.
//!
//! [`ValueReader`] and [`ValueWriter`] hold what one stream (a message
//! body) has seen: every value and repository id by offset, so that an
//! indirection may point back to any earlier one, also in an earlier
//! argument. Hostile input: an indirection must point back exactly at a
//! value tag or string read before (so it cannot loop or point forward),
//! chunk sizes are checked against the bytes left, the chunked nesting
//! level against the depth limit, and every count against the bytes
//! left; errors are [`CdrError::BadValue`] with the offset.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{CdrError, Result};
use crate::reader::{describe_tag, is_chunk_size, Reader};
use crate::writer::Writer;

/// The null value tag.
pub const NULL_TAG: u32 = 0;
/// The tag announcing an indirection (a long offset follows).
pub const INDIRECTION_TAG: u32 = 0xffff_ffff;
/// The lowest value tag; the low byte holds the flags below.
pub const VALUE_TAG: u32 = 0x7fff_ff00;
/// Flag: a codebase URL follows the tag.
pub const CODEBASE_URL: u32 = 0x01;
/// Flags: one repository id follows.
pub const SINGLE_ID: u32 = 0x02;
/// Flags: a list of repository ids follows.
pub const ID_LIST: u32 = 0x06;
/// Flag: the state is chunked.
pub const CHUNKED: u32 = 0x08;
/// The highest value tag.
pub const MAX_TAG: u32 = 0x7fff_ffff;
/// The largest chunk a writer makes (one below the value tags).
pub const MAX_CHUNK: usize = 0x7fff_feff;

/// What a value header says about the value's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeInfo {
    /// Nothing: the value is of the formal type (the parameter's or
    /// member's).
    None,
    /// One repository id: the value's type.
    Single(Arc<str>),
    /// The value's type, then the bases it may be truncated to, most
    /// derived first.
    List(Vec<Arc<str>>),
}

impl TypeInfo {
    /// The repository ids, most derived first.
    pub fn ids(&self) -> &[Arc<str>] {
        match self {
            TypeInfo::None => &[],
            TypeInfo::Single(id) => std::slice::from_ref(id),
            TypeInfo::List(ids) => ids,
        }
    }

    /// The flag bits of the value tag.
    fn flags(&self) -> u32 {
        match self {
            TypeInfo::None => 0,
            TypeInfo::Single(_) => SINGLE_ID,
            TypeInfo::List(_) => ID_LIST,
        }
    }
}

/// A value header as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueHead {
    /// The value's number in its stream: values are numbered from 0 in the
    /// order their tags are read, and an indirection names one by it.
    pub number: u32,
    /// Offset of the value tag.
    pub offset: usize,
    /// The codebase URL, if sent.
    pub codebase: Option<Arc<str>>,
    /// The type information.
    pub ids: TypeInfo,
    /// Whether the state is chunked.
    pub chunked: bool,
    /// The chunked nesting level of the state (0 unchunked).
    level: u32,
}

/// What stands where a value may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueStart {
    /// The null value.
    Null,
    /// An indirection to the value numbered `number`, read before (or
    /// still being read: a cycle).
    Shared { number: u32 },
    /// A value: its header; its state follows, between
    /// [`ValueReader::member`] checks, and [`ValueReader::end`] closes it.
    Value(ValueHead),
}

/// Where a string of the header lies: repository ids and codebase URLs
/// are indirected only to their own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    RepoId,
    Url,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::RepoId => "repository id",
            Kind::Url => "codebase URL",
        }
    }
}

fn bad(offset: usize, reason: impl Into<String>) -> CdrError {
    CdrError::BadValue {
        offset,
        reason: reason.into(),
    }
}

/// The values, repository ids and id lists one stream has shown so far,
/// by offset, for the indirections that follow.
#[derive(Debug, Default, Clone)]
pub struct ValueReader {
    /// Offset of a value tag → the value's number.
    values: HashMap<usize, u32>,
    next: u32,
    strings: HashMap<(Kind, usize), Arc<str>>,
    lists: HashMap<usize, Vec<Arc<str>>>,
}

impl ValueReader {
    /// A reader that has seen nothing yet (one per message body).
    pub fn new() -> ValueReader {
        ValueReader::default()
    }

    /// How many values were read (the next value's number).
    pub fn count(&self) -> u32 {
        self.next
    }

    /// Read what stands where a value may be. For a value, its header
    /// has been read and its state comes next.
    pub fn start(&mut self, r: &mut Reader<'_>) -> Result<ValueStart> {
        let (at, tag, between) = tag(r)?;
        match tag {
            NULL_TAG if between => Err(bad(at, "a null value tag between chunks (outside any chunk)")),
            NULL_TAG => Ok(ValueStart::Null),
            INDIRECTION_TAG if between => Err(bad(
                at,
                "the end tag -1 where a value was expected (an indirection must lie inside a chunk)",
            )),
            INDIRECTION_TAG => {
                let (target, field, off) = indirection(r)?;
                match self.values.get(&target) {
                    Some(&number) => Ok(ValueStart::Shared { number }),
                    None => Err(bad(
                        field,
                        format!("indirection offset {off} points at offset {target}, where no value read before starts"),
                    )),
                }
            }
            t @ VALUE_TAG..=MAX_TAG => Ok(ValueStart::Value(self.header(r, at, t, true)?)),
            t if between => Err(bad(
                at,
                format!("{} where a value was expected", describe_tag(t as i32)),
            )),
            t => Err(bad(at, format!("0x{t:08x} is not a value tag"))),
        }
    }

    /// The header after the tag; `register`: give the value a number (a
    /// value skipped while truncating gets none, so an indirection to it
    /// is refused).
    fn header(
        &mut self,
        r: &mut Reader<'_>,
        at: usize,
        tag: u32,
        register: bool,
    ) -> Result<ValueHead> {
        if tag & 0xf0 != 0 {
            return Err(bad(at, format!("value tag 0x{tag:08x} sets reserved bits")));
        }
        let chunked = tag & CHUNKED != 0;
        if r.chunk_level() > 0 && !chunked {
            return Err(bad(
                at,
                format!("value tag 0x{tag:08x}: an unchunked value inside a chunked one"),
            ));
        }
        let codebase = if tag & CODEBASE_URL != 0 {
            Some(self.string(r, Kind::Url)?)
        } else {
            None
        };
        let ids = match tag & ID_LIST {
            0 => TypeInfo::None,
            SINGLE_ID => TypeInfo::Single(self.string(r, Kind::RepoId)?),
            ID_LIST => TypeInfo::List(self.list(r)?),
            _ => {
                return Err(bad(
                    at,
                    format!("value tag 0x{tag:08x}: type information 0x04 is not defined"),
                ))
            }
        };
        let number = self.next;
        if register {
            self.values.insert(at, number);
            self.next += 1;
        }
        let level = if chunked {
            let level = r.chunk_level() + 1;
            if level > r.opts().limits.max_depth {
                return Err(CdrError::DepthExceeded {
                    offset: at,
                    limit: r.opts().limits.max_depth,
                });
            }
            r.set_chunk_level(level);
            level
        } else {
            0
        };
        Ok(ValueHead {
            number,
            offset: at,
            codebase,
            ids,
            chunked,
            level,
        })
    }

    /// A repository id or codebase URL, or an indirection to one read
    /// before.
    fn string(&mut self, r: &mut Reader<'_>, kind: Kind) -> Result<Arc<str>> {
        r.align(4)?;
        let at = r.position();
        let len = r.read_u32()?;
        if len == INDIRECTION_TAG {
            let (target, field, off) = indirection(r)?;
            return self.strings.get(&(kind, target)).cloned().ok_or_else(|| {
                bad(
                    field,
                    format!(
                        "indirection offset {off} points at offset {target}, where no {} read before starts",
                        kind.name()
                    ),
                )
            });
        }
        let n = len as usize;
        r.check_len(n, 1)?;
        if n == 0 {
            return Err(CdrError::EmptyString { offset: at });
        }
        let b = r.take(n)?;
        let Some((0, body)) = b.split_last() else {
            return Err(CdrError::StringNotTerminated { offset: at });
        };
        // Repository ids are ASCII; take anything else as ISO 8859-1.
        let s: Arc<str> = match std::str::from_utf8(body) {
            Ok(s) => s.into(),
            Err(_) => body.iter().map(|&c| c as char).collect::<String>().into(),
        };
        self.strings.insert((kind, at), s.clone());
        Ok(s)
    }

    /// A list of repository ids, or an indirection to one read before.
    fn list(&mut self, r: &mut Reader<'_>) -> Result<Vec<Arc<str>>> {
        r.align(4)?;
        let at = r.position();
        let count = r.read_u32()?;
        if count == INDIRECTION_TAG {
            let (target, field, off) = indirection(r)?;
            return self.lists.get(&target).cloned().ok_or_else(|| {
                bad(
                    field,
                    format!("indirection offset {off} points at offset {target}, where no repository id list read before starts"),
                )
            });
        }
        // Each id: a length and at least one octet, or an indirection.
        let n = count as usize;
        r.check_len(n, 5)?;
        if n == 0 {
            return Err(bad(at, "an empty repository id list"));
        }
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            ids.push(self.string(r, Kind::RepoId)?);
        }
        self.lists.insert(at, ids.clone());
        Ok(ids)
    }

    /// Before each member of `head`'s state (and before its end): refuse
    /// a value that an end tag already closed.
    pub fn member(&self, r: &Reader<'_>, head: &ValueHead) -> Result<()> {
        if head.level > 0 && r.chunk_level() < head.level {
            return Err(bad(
                r.position(),
                format!(
                    "the value at offset {} was closed by an end tag before its state was complete",
                    head.offset
                ),
            ));
        }
        Ok(())
    }

    /// After the last member of `head`'s state. `exact`: the state must
    /// end here; otherwise the value is being truncated to a base and
    /// what follows, nested values included, is skipped (their repository
    /// ids are still recorded for later indirections). An unchunked value
    /// cannot be truncated: the caller refuses that before.
    pub fn end(&mut self, r: &mut Reader<'_>, head: &ValueHead, exact: bool) -> Result<()> {
        if head.level == 0 || r.chunk_level() < head.level {
            return Ok(());
        }
        let left = r.chunk_left();
        if left > r.padding(4) {
            if exact {
                return Err(bad(
                    r.position(),
                    format!(
                        "{left} bytes of the value at offset {} are left in its chunk after its last member",
                        head.offset
                    ),
                ));
            }
            r.skip_in_chunk(left);
        }
        loop {
            let (at, t) = r.boundary_tag()?;
            if is_chunk_size(t) {
                if exact {
                    return Err(bad(
                        at,
                        format!(
                            "a chunk of {t} bytes after the last member of the value at offset {}",
                            head.offset
                        ),
                    ));
                }
                r.skip_in_chunk(t as usize);
                continue;
            }
            if is_value_tag(t) {
                if exact {
                    return Err(bad(
                        at,
                        format!(
                            "a nested value after the last member of the value at offset {}",
                            head.offset
                        ),
                    ));
                }
                r.open_window();
                self.header(r, at, t as u32, false)?;
                continue;
            }
            if t == 0 {
                return Err(bad(at, describe_tag(t)));
            }
            // An end tag: it closes every open chunked value from its
            // level up.
            let closes = t.unsigned_abs();
            let level = r.chunk_level();
            if closes > level {
                return Err(bad(
                    at,
                    format!("the end tag {t} closes level {closes}, but only {level} chunked values are open"),
                ));
            }
            r.set_chunk_level(closes - 1);
            if r.chunk_level() < head.level {
                return Ok(());
            }
        }
    }
}

/// Whether a long read where a value or chunk may start is a value tag.
fn is_value_tag(t: i32) -> bool {
    t >= VALUE_TAG as i32
}

/// The tag where a value may start: its offset, value, and whether it
/// lies between chunks (inside a chunked value's state, where a nested
/// value's header starts; then the header is readable after it).
fn tag(r: &mut Reader<'_>) -> Result<(usize, u32, bool)> {
    if !r.is_chunked() {
        r.align(4)?;
        let at = r.position();
        return Ok((at, r.read_u32()?, false));
    }
    loop {
        let pad = r.padding(4);
        let left = r.chunk_left();
        if pad + 4 <= left {
            r.align(4)?;
            let at = r.position();
            let t = r.read_u32()?;
            if is_value_tag(t as i32) {
                return Err(bad(
                    at,
                    format!(
                        "value tag 0x{t:08x} inside a chunk (a nested value starts between chunks)"
                    ),
                ));
            }
            return Ok((at, t, false));
        }
        if pad < left {
            return Err(bad(
                r.position(),
                "a value tag would run past the end of its chunk",
            ));
        }
        let (at, t) = r.boundary_tag()?;
        if is_chunk_size(t) {
            continue;
        }
        if is_value_tag(t) {
            r.open_window();
        }
        return Ok((at, t as u32, true));
    }
}

/// The offset long after an indirection tag: the target offset, the
/// offset field's offset and the raw offset. The offset must point before
/// the indirection tag (below -4).
fn indirection(r: &mut Reader<'_>) -> Result<(usize, usize, i32)> {
    let field = r.position();
    let off = r.read_i32()?;
    let target = field as i64 + off as i64;
    if off >= -4 || target < 0 {
        return Err(bad(
            field,
            format!("indirection offset {off} does not point back before the indirection"),
        ));
    }
    Ok((target as usize, field, off))
}

/// What a [`ValueWriter::begin`] opened; give it back to
/// [`ValueWriter::end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct ValueToken {
    /// The chunked nesting level of the value's state (0 unchunked).
    level: u32,
}

/// How a [`ValueWriter`] encodes what the spec leaves to the sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValueStyle {
    /// Write a repeated repository id, codebase URL or id list as an
    /// indirection to its first occurrence (JacORB and omniORB do).
    pub share_ids: bool,
    /// Let one end tag close a value and the values it ends with (omniORB
    /// does) instead of one end tag each.
    pub coalesce_end_tags: bool,
    /// End a chunk once it holds at least this many bytes, before the next
    /// piece of state (omniORB ends one where its buffer fills; 1 gives
    /// every primitive, string or sequence a chunk of its own). `None`: a
    /// chunk runs until a nested value or the value's end.
    pub chunk_size: Option<usize>,
}

/// The values and repository ids one stream has written so far, by
/// offset, and the chunk being written.
#[derive(Debug, Default, Clone)]
pub struct ValueWriter {
    pub style: ValueStyle,
    /// A caller's key for each value written → the offset of its tag.
    values: HashMap<u64, usize>,
    strings: HashMap<(Kind, Arc<str>), usize>,
    lists: HashMap<Vec<Arc<str>>, usize>,
    /// The chunked nesting level.
    level: u32,
    /// Offset of the size of the chunk being written.
    chunk: Option<usize>,
    /// The end tag written last, when nothing has followed it: its offset
    /// and the level it closes.
    last_end: Option<(usize, u32)>,
}

impl ValueWriter {
    /// A writer for one stream (message body).
    pub fn new(style: ValueStyle) -> ValueWriter {
        ValueWriter {
            style,
            ..ValueWriter::default()
        }
    }

    /// The chunked nesting level: a value begun now must be chunked when
    /// it is above 0.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// A null value.
    pub fn null(&mut self, w: &mut Writer<'_>) -> Result<()> {
        self.data(w)?;
        w.write_u32(NULL_TAG);
        Ok(())
    }

    /// An indirection to the value written with `key`, if there is one
    /// (then `true`); nothing otherwise.
    pub fn shared(&mut self, w: &mut Writer<'_>, key: u64) -> Result<bool> {
        let Some(&at) = self.values.get(&key) else {
            return Ok(false);
        };
        self.data(w)?;
        write_indirection(w, at)?;
        Ok(true)
    }

    /// Start a value: its tag and header. `key` names it for later
    /// [`shared`](Self::shared) references. A value nested in a chunked
    /// one must be chunked. Its state follows, each piece of it after
    /// [`data`](Self::data); [`end`](Self::end) closes it.
    pub fn begin(
        &mut self,
        w: &mut Writer<'_>,
        key: Option<u64>,
        codebase: Option<&str>,
        ids: &TypeInfo,
        chunked: bool,
    ) -> Result<ValueToken> {
        if self.level > 0 && !chunked {
            return Err(CdrError::Unrepresentable {
                what: "an unchunked value inside a chunked one".into(),
                codeset: "valuetype encoding",
            });
        }
        if let TypeInfo::List(l) = ids {
            if l.is_empty() {
                return Err(CdrError::Unrepresentable {
                    what: "an empty repository id list".into(),
                    codeset: "valuetype encoding",
                });
            }
        }
        self.close_chunk(w)?;
        self.last_end = None;
        w.align(4);
        let at = w.position();
        if let Some(k) = key {
            self.values.insert(k, at);
        }
        let mut tag = VALUE_TAG | ids.flags();
        if codebase.is_some() {
            tag |= CODEBASE_URL;
        }
        if chunked {
            tag |= CHUNKED;
        }
        w.write_u32(tag);
        if let Some(url) = codebase {
            self.string(w, Kind::Url, url)?;
        }
        match ids {
            TypeInfo::None => {}
            TypeInfo::Single(id) => self.string(w, Kind::RepoId, id)?,
            TypeInfo::List(l) => {
                w.align(4);
                let at = w.position();
                match self.lists.get(l) {
                    Some(&target) if self.style.share_ids => write_indirection(w, target)?,
                    _ => {
                        self.lists.entry(l.clone()).or_insert(at);
                        w.write_len(l.len())?;
                        for id in l {
                            self.string(w, Kind::RepoId, id)?;
                        }
                    }
                }
            }
        }
        if chunked {
            self.level += 1;
        }
        Ok(ValueToken {
            level: if chunked { self.level } else { 0 },
        })
    }

    fn string(&mut self, w: &mut Writer<'_>, kind: Kind, s: &str) -> Result<()> {
        w.align(4);
        let key = (kind, Arc::<str>::from(s));
        match self.strings.get(&key) {
            Some(&target) if self.style.share_ids => write_indirection(w, target),
            _ => {
                let at = w.position();
                self.strings.entry(key).or_insert(at);
                w.write_string(s)
            }
        }
    }

    /// Before writing a piece of a value's state (anything but a nested
    /// value's header): inside a chunked value, open a chunk if none is.
    #[inline]
    pub fn data(&mut self, w: &mut Writer<'_>) -> Result<()> {
        if let (Some(at), Some(max)) = (self.chunk, self.style.chunk_size) {
            if w.position() - at - 4 >= max {
                self.close_chunk(w)?;
            }
        }
        if self.level > 0 && self.chunk.is_none() {
            w.align(4);
            self.chunk = Some(w.position());
            w.write_u32(0);
            self.last_end = None;
        }
        Ok(())
    }

    /// Close the chunk being written: patch its size, or take back its
    /// size field if nothing went into it.
    fn close_chunk(&mut self, w: &mut Writer<'_>) -> Result<()> {
        let Some(at) = self.chunk.take() else {
            return Ok(());
        };
        let len = w.position() - at - 4;
        if len == 0 {
            // Nothing was written (or spliced) after the size field.
            let b = w.buffer();
            let n = b.len();
            b.truncate(n - 4);
            return Ok(());
        }
        if len > MAX_CHUNK {
            return Err(CdrError::LimitExceeded {
                offset: at,
                len: len as u64,
                limit: MAX_CHUNK as u64,
            });
        }
        w.patch_u32(at, len as u32);
        Ok(())
    }

    /// Close the value `token` opened: for a chunked one, its last chunk
    /// and its end tag.
    pub fn end(&mut self, w: &mut Writer<'_>, token: ValueToken) -> Result<()> {
        if token.level == 0 {
            return Ok(());
        }
        debug_assert_eq!(token.level, self.level, "values closed out of order");
        self.close_chunk(w)?;
        let closes = token.level;
        match self.last_end {
            Some((at, l)) if self.style.coalesce_end_tags && l == closes + 1 => {
                w.patch_u32(at, (-(closes as i32)) as u32);
                self.last_end = Some((at, closes));
            }
            _ => {
                w.align(4);
                let at = w.position();
                w.write_i32(-(closes as i32));
                self.last_end = Some((at, closes));
            }
        }
        self.level -= 1;
        Ok(())
    }
}

/// `0xffffffff` and the offset of `target` from the offset field.
fn write_indirection(w: &mut Writer<'_>, target: usize) -> Result<()> {
    w.align(4);
    w.write_u32(INDIRECTION_TAG);
    let field = w.position();
    let off = target as i64 - field as i64;
    let off = i32::try_from(off).map_err(|_| CdrError::LimitExceeded {
        offset: field,
        len: off.unsigned_abs(),
        limit: i32::MAX as u64,
    })?;
    w.write_i32(off);
    Ok(())
}
