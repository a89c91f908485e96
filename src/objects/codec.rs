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
