//! The byte layout of the derived index's cache files: a few length-prefixed primitives, and
//! strings that stay inside the buffer they were read from.
//!
//! Why not a serde format: a serde decode gives every string of every extract its own
//! allocation, and at ten thousand tasks those fresh heap pages (faulted and zeroed by the
//! kernel) were most of a read's cost. Extracts decoded here are views into one shared buffer:
//! a read of the index costs one buffer and a walk over it.
//!
//! Invariants: decoding never panics and never reads out of bounds; a buffer that does not
//! hold what the layout says decodes to `None`; a string whose bytes are not UTF-8 reads as
//! empty (never as anything else). Whole cache files carry a checksum
//! ([`crate::objects::index`]), so torn or foreign bytes are refused before they are decoded.

use std::fmt;
use std::sync::Arc;

/// A buffer read from a cache file, shared by everything decoded from it.
pub type Buf = Arc<Vec<u8>>;

/// A string inside a shared buffer: cloning it copies no bytes.
#[derive(Clone)]
pub struct SharedStr {
    buf: Buf,
    start: u32,
    len: u32,
}

impl SharedStr {
    /// A string owning a buffer of its own (for values made in memory, not read from a cache).
    pub fn new(s: &str) -> SharedStr {
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        SharedStr {
            buf: Arc::new(s.as_bytes()[..len as usize].to_vec()),
            start: 0,
            len,
        }
    }

    /// The string. The bytes were checked to be UTF-8 when decoded (or came from a `&str`), so
    /// the fallback is never taken.
    pub fn as_str(&self) -> &str {
        let bytes = &self.buf[self.start as usize..(self.start + self.len) as usize];
        std::str::from_utf8(bytes).unwrap_or_default()
    }
}

impl std::ops::Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for SharedStr {
    fn eq(&self, other: &SharedStr) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Appends primitives in the layout [`Input`] reads.
#[derive(Default)]
pub struct Output(pub Vec<u8>);

impl Output {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    /// An unsigned integer in LEB128: one byte for the small counts and lengths that dominate.
    pub fn var(&mut self, v: u64) {
        self.leb(u128::from(v));
    }

    fn leb(&mut self, mut v: u128) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn i128(&mut self, v: i128) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    /// A signed integer, zigzag then LEB128: nanosecond timestamps take 9 bytes, not 16.
    pub fn ivar(&mut self, v: i128) {
        self.leb(((v << 1) ^ (v >> 127)) as u128);
    }

    pub fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}

/// Reads primitives from a buffer; every read is bounds-checked and `None` past the end.
pub struct Input<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(buf: &'a [u8]) -> Input<'a> {
        Input { buf, pos: 0 }
    }

    /// The offset of the next byte to read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    pub fn var(&mut self) -> Option<u64> {
        u64::try_from(self.leb()?).ok()
    }

    fn leb(&mut self) -> Option<u128> {
        let mut v: u128 = 0;
        for shift in (0..128).step_by(7) {
            let byte = self.u8()?;
            v |= u128::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// A count or length, which must fit the buffer's address space.
    pub fn count(&mut self) -> Option<usize> {
        usize::try_from(self.var()?).ok()
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn ivar(&mut self) -> Option<i128> {
        let z = self.leb()?;
        Some(((z >> 1) as i128) ^ -((z & 1) as i128))
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    pub fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }

    pub fn f64(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A length-prefixed byte string, as its range in the buffer.
    pub fn span(&mut self) -> Option<std::ops::Range<usize>> {
        let n = self.count()?;
        let start = self.pos;
        self.take(n)?;
        Some(start..start + n)
    }

    /// A length-prefixed UTF-8 string.
    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.count()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// A length-prefixed string, as a view into `buf` (which this input reads). Its bytes are
    /// checked when the string is read, not here: a cache file passed its checksum, so it holds
    /// what dacli wrote, and a read of ten thousand names would otherwise check each twice.
    pub fn shared(&mut self, buf: &Buf) -> Option<SharedStr> {
        let range = self.span()?;
        Some(SharedStr {
            buf: Arc::clone(buf),
            start: u32::try_from(range.start).ok()?,
            len: u32::try_from(range.len()).ok()?,
        })
    }
}

/// Fields read in place: an extract stored as slots of bytes, each found through a table of
/// end offsets, so reading one field costs two table reads whatever its position.
///
/// Layout: a width byte (2 or 4: the size of each end offset), the slot count, the ends,
/// then the slots' bytes. A slot holds a string, an optional string (empty for none, else
/// a 1 byte and the string), a list of length-prefixed strings, or a zigzag integer.
#[derive(Clone)]
pub struct Record {
    buf: Buf,
    at: u32,
    len: u32,
}

/// Builds a [`Record`] slot after slot.
#[derive(Default)]
pub struct RecordBuilder {
    slots: Vec<Vec<u8>>,
}

impl RecordBuilder {
    pub fn str(mut self, s: &str) -> Self {
        self.slots.push(s.as_bytes().to_vec());
        self
    }

    pub fn opt(mut self, s: Option<&str>) -> Self {
        self.slots.push(match s {
            None => Vec::new(),
            Some(s) => {
                let mut v = vec![1];
                v.extend_from_slice(s.as_bytes());
                v
            }
        });
        self
    }

    pub fn strs<'a>(mut self, items: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = Output::default();
        for s in items {
            out.str(s);
        }
        self.slots.push(out.0);
        self
    }

    pub fn int(mut self, v: Option<i64>) -> Self {
        let mut out = Output::default();
        if let Some(v) = v {
            out.ivar(i128::from(v));
        }
        self.slots.push(out.0);
        self
    }

    pub fn build(self) -> Record {
        let total: usize = self.slots.iter().map(Vec::len).sum();
        let wide = total > usize::from(u16::MAX);
        let mut out = Output::default();
        out.u8(if wide { 4 } else { 2 });
        out.var(self.slots.len() as u64);
        let mut end = 0usize;
        for slot in &self.slots {
            end += slot.len();
            if wide {
                out.u32(u32::try_from(end).unwrap_or(u32::MAX));
            } else {
                out.0.extend_from_slice(&(end as u16).to_le_bytes());
            }
        }
        for slot in &self.slots {
            out.0.extend_from_slice(slot);
        }
        let len = u32::try_from(out.0.len()).unwrap_or(u32::MAX);
        Record {
            buf: Arc::new(out.0),
            at: 0,
            len,
        }
    }
}

impl Record {
    fn bytes(&self) -> &[u8] {
        self.buf
            .get(self.at as usize..(self.at as usize).saturating_add(self.len as usize))
            .unwrap_or_default()
    }

    /// Slot `i`; empty when the record has no such slot.
    pub fn slot(&self, i: usize) -> &[u8] {
        let b = self.bytes();
        let mut input = Input::new(b);
        let (Some(width), Some(count)) = (input.u8(), input.count()) else {
            return &[];
        };
        if i >= count || !(width == 2 || width == 4) {
            return &[];
        }
        let width = usize::from(width);
        let table = input.pos();
        let end = |k: usize| -> usize {
            let at = table + k * width;
            match b.get(at..at + width) {
                Some(&[x, y]) => usize::from(u16::from_le_bytes([x, y])),
                Some(&[x, y, z, w]) => u32::from_le_bytes([x, y, z, w]) as usize,
                _ => 0,
            }
        };
        let data = table + count * width;
        let start = if i == 0 { 0 } else { end(i - 1) };
        b.get(data + start..data + end(i)).unwrap_or_default()
    }

    pub fn str(&self, i: usize) -> &str {
        std::str::from_utf8(self.slot(i)).unwrap_or_default()
    }

    pub fn opt(&self, i: usize) -> Option<&str> {
        match self.slot(i) {
            [] => None,
            [_, rest @ ..] => Some(std::str::from_utf8(rest).unwrap_or_default()),
        }
    }

    pub fn strs(&self, i: usize) -> Vec<&str> {
        let mut input = Input::new(self.slot(i));
        let mut out = Vec::new();
        while !input.at_end() {
            match input.str() {
                Some(s) => out.push(s),
                None => break,
            }
        }
        out
    }

    pub fn int(&self, i: usize) -> Option<i64> {
        let slot = self.slot(i);
        if slot.is_empty() {
            return None;
        }
        i64::try_from(Input::new(slot).ivar()?).ok()
    }

    /// Appends this record, length-prefixed.
    pub fn encode(&self, out: &mut Output) {
        out.bytes(self.bytes());
    }

    /// The record at the input's position in `buf`, which the input reads; only its extent is
    /// read here (cache files are checksummed whole, and every slot read is bounds-checked).
    pub fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<Record> {
        let span = input.span()?;
        Some(Record {
            buf: Arc::clone(buf),
            at: u32::try_from(span.start).ok()?,
            len: u32::try_from(span.len()).ok()?,
        })
    }
}

impl PartialEq for Record {
    fn eq(&self, other: &Record) -> bool {
        self.bytes() == other.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_round_trip_and_truncation_is_none() {
        let mut out = Output::default();
        out.var(0);
        out.var(300);
        out.var(u64::MAX);
        out.i128(-5);
        out.ivar(-1_700_000_000_123_456_789);
        out.ivar(i128::MAX);
        out.f64(2.5);
        out.str("héllo");
        let bytes = out.0;
        let mut input = Input::new(&bytes);
        assert_eq!(input.var(), Some(0));
        assert_eq!(input.var(), Some(300));
        assert_eq!(input.var(), Some(u64::MAX));
        assert_eq!(input.i128(), Some(-5));
        assert_eq!(input.ivar(), Some(-1_700_000_000_123_456_789));
        assert_eq!(input.ivar(), Some(i128::MAX));
        assert_eq!(input.f64(), Some(2.5));
        assert_eq!(input.str(), Some("héllo"));
        assert!(input.at_end());
        for cut in 0..bytes.len() {
            let mut input = Input::new(&bytes[..cut]);
            let all = (|| {
                input.var()?;
                input.var()?;
                input.var()?;
                input.i128()?;
                input.ivar()?;
                input.ivar()?;
                input.f64()?;
                input.str()
            })();
            assert_eq!(all, None, "a buffer cut at {cut} must not decode");
        }
    }

    #[test]
    fn records_read_back_their_slots_narrow_and_wide() {
        for long in [3usize, 70_000] {
            let title = "é".repeat(long);
            let r = RecordBuilder::default()
                .str("id-1")
                .opt(None)
                .opt(Some(""))
                .opt(Some("about"))
                .strs(["a", "", "b"])
                .int(Some(-3))
                .int(None)
                .str(&title)
                .build();
            assert_eq!(r.str(0), "id-1");
            assert_eq!(
                (r.opt(1), r.opt(2), r.opt(3)),
                (None, Some(""), Some("about"))
            );
            assert_eq!(r.strs(4), ["a", "", "b"]);
            assert_eq!((r.int(5), r.int(6)), (Some(-3), None));
            assert_eq!(r.str(7), title);
            assert_eq!(r.str(8), "", "a slot past the end is empty");
            let mut out = Output::default();
            r.encode(&mut out);
            let buf: Buf = Arc::new(out.0);
            let back = Record::decode(&buf, &mut Input::new(&buf)).unwrap();
            assert!(back == r);
        }
    }

    #[test]
    fn shared_strings_are_checked_utf8_views() {
        let mut out = Output::default();
        out.bytes(&[0xff, 0xfe]);
        out.str("ok");
        let buf: Buf = Arc::new(out.0);
        let mut input = Input::new(&buf);
        assert_eq!(&*input.shared(&buf).unwrap(), "");
        let s = input.shared(&buf).unwrap();
        assert_eq!(&*s, "ok");
        assert_eq!(s, SharedStr::new("ok"));
    }
}
