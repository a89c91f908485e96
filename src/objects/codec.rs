//! The byte layout of the derived index's cache files: a few length-prefixed primitives, and
//! strings that stay inside the buffer they were read from.
//!
//! Why not a serde format: a serde decode gives every string of every extract its own
//! allocation, and at ten thousand tasks those fresh heap pages (faulted and zeroed by the
//! kernel) were most of a read's cost. Extracts decoded here are views into one shared buffer.
//!
//! Why every byte is below 0x80 except those of strings: a whole cache file is then valid
//! UTF-8, checked once when it is read, and every field after that is a `&str` slice of it
//! (a bounds and boundary check, no UTF-8 check per read; the code has no `unsafe`). Numbers
//! are written seven or six bits to a byte: fixed-width ones (offsets, the checksum, floats)
//! seven bits a byte, variable ones six bits a byte with 0x40 marking "more follows".
//!
//! Invariants: decoding never panics and never reads out of bounds; a buffer that does not
//! hold what the layout says decodes to `None`, and a field out of place reads as empty.
//! Whole cache files carry a checksum ([`crate::objects::index`]), so torn or foreign bytes
//! are refused before they are decoded.

use std::fmt;
use std::sync::Arc;

/// A buffer read from a cache file, shared by everything decoded from it; UTF-8 throughout.
pub type Buf = Arc<String>;

/// The buffer of a cache file's bytes; `None` when they are not UTF-8 (not a cache file).
pub fn buf_of(bytes: Vec<u8>) -> Option<Buf> {
    String::from_utf8(bytes).ok().map(Arc::new)
}

/// The bytes of one value inside a shared buffer (a string, a record): cloning it copies no
/// bytes, and its text is a slice of the buffer, which is UTF-8 throughout.
#[derive(Clone)]
pub struct Extent {
    buf: Buf,
    at: u32,
    len: u32,
}

impl Extent {
    /// An extent owning a buffer of its own, made in memory from bytes this module wrote
    /// (UTF-8 by construction); empty if they were not, which would make every field read
    /// empty rather than wrong.
    pub fn own(bytes: Vec<u8>) -> Extent {
        let buf = Arc::new(String::from_utf8(bytes).unwrap_or_default());
        Extent {
            len: u32::try_from(buf.len()).unwrap_or(0),
            buf,
            at: 0,
        }
    }

    /// An extent spanning all of `buf`.
    pub fn whole(buf: Buf) -> Extent {
        Extent {
            len: u32::try_from(buf.len()).unwrap_or(0),
            buf,
            at: 0,
        }
    }

    /// Where the extent lies in its buffer.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.at as usize..self.at as usize + self.len as usize
    }

    pub fn bytes(&self) -> &[u8] {
        self.buf.as_bytes().get(self.range()).unwrap_or_default()
    }

    /// The text at `range` of the buffer (offsets into the buffer, not into the extent);
    /// empty when that is not a whole string (only a foreign buffer could hold such).
    pub fn text(&self, range: std::ops::Range<usize>) -> &str {
        self.buf.get(range).unwrap_or_default()
    }

    /// Appends the extent's bytes, length-prefixed.
    pub fn encode(&self, out: &mut Output) {
        out.bytes(self.bytes());
    }

    /// The length-prefixed extent at the input's position in `buf`, which the input reads;
    /// only its extent is read here (cache files are checksummed whole, and every read of a
    /// field is bounds-checked).
    pub fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<Extent> {
        let span = input.span()?;
        Some(Extent {
            buf: Arc::clone(buf),
            at: u32::try_from(span.start).ok()?,
            len: u32::try_from(span.len()).ok()?,
        })
    }
}

impl PartialEq for Extent {
    fn eq(&self, other: &Extent) -> bool {
        self.bytes() == other.bytes()
    }
}

/// A string inside a shared buffer: cloning it copies no bytes.
#[derive(Clone)]
pub struct SharedStr(Extent);

impl SharedStr {
    /// A string owning a buffer of its own (for values made in memory, not read from a cache).
    pub fn new(s: &str) -> SharedStr {
        SharedStr(Extent::own(s.as_bytes().to_vec()))
    }

    pub fn as_str(&self) -> &str {
        self.0.text(self.0.range())
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
        self.0 == other.0
    }
}

/// Appends primitives in the layout [`Input`] reads.
#[derive(Default)]
pub struct Output(pub Vec<u8>);

impl Output {
    /// A small value (flags, markers): below 0x80.
    pub fn u8(&mut self, v: u8) {
        self.0.push(v & 0x7f);
    }

    /// An unsigned integer, six bits a byte, 0x40 set on every byte but the last: one byte
    /// for the small counts and lengths that dominate.
    pub fn var(&mut self, v: u64) {
        self.leb(u128::from(v));
    }

    fn leb(&mut self, mut v: u128) {
        while v >= 0x40 {
            self.0.push(0x40 | (v & 0x3f) as u8);
            v >>= 6;
        }
        self.0.push(v as u8);
    }

    /// A signed integer, zigzag then as [`Output::var`].
    pub fn ivar(&mut self, v: i128) {
        self.leb(((v << 1) ^ (v >> 127)) as u128);
    }

    /// An unsigned integer in exactly `width` bytes of seven bits (`width` * 7 must cover it).
    pub fn fixed(&mut self, mut v: u64, width: usize) {
        for _ in 0..width {
            self.0.push((v & 0x7f) as u8);
            v >>= 7;
        }
    }

    pub fn f64(&mut self, v: f64) {
        self.fixed(v.to_bits(), 10);
    }

    /// A length-prefixed byte string; the bytes must be UTF-8 or this module's own layout.
    pub fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}

/// Ends a cache file: a CRC-32 of everything before it, in five bytes of seven bits.
pub fn seal(mut out: Output) -> Vec<u8> {
    let sum = crc32fast::hash(&out.0);
    out.fixed(u64::from(sum), 5);
    out.0
}

/// The bytes [`seal`] sealed, when the checksum holds: a file torn by a crash (caches are
/// written without fsync) or changed by hand is refused whole.
pub fn unseal(bytes: &[u8]) -> Option<&[u8]> {
    let body = bytes.len().checked_sub(5)?;
    let sum = Input::new(bytes.get(body..)?).fixed(5)?;
    let body = bytes.get(..body)?;
    (u64::from(crc32fast::hash(body)) == sum).then_some(body)
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

    /// The bytes `range` of `buf`, read at their offsets in `buf` (so extents decoded from
    /// them point into `buf`); `None` when `range` is not inside it.
    pub fn within(buf: &'a [u8], range: std::ops::Range<usize>) -> Option<Input<'a>> {
        let buf = buf.get(..range.end)?;
        (range.start <= range.end).then_some(Input {
            buf,
            pos: range.start,
        })
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
        self.take(1).map(|b| b[0]).filter(|b| *b < 0x80)
    }

    pub fn var(&mut self) -> Option<u64> {
        u64::try_from(self.leb()?).ok()
    }

    fn leb(&mut self) -> Option<u128> {
        let mut v: u128 = 0;
        for shift in (0..128).step_by(6) {
            let byte = self.u8()?;
            v |= u128::from(byte & 0x3f) << shift;
            if byte < 0x40 {
                return Some(v);
            }
        }
        None
    }

    /// A count or length, which must fit the buffer's address space.
    pub fn count(&mut self) -> Option<usize> {
        usize::try_from(self.var()?).ok()
    }

    pub fn ivar(&mut self) -> Option<i128> {
        let z = self.leb()?;
        Some(((z >> 1) as i128) ^ -((z & 1) as i128))
    }

    pub fn fixed(&mut self, width: usize) -> Option<u64> {
        let mut v: u64 = 0;
        for (i, &b) in self.take(width)?.iter().enumerate() {
            if b >= 0x80 {
                return None;
            }
            v |= u64::from(b).checked_shl(7 * i as u32).unwrap_or(0);
        }
        Some(v)
    }

    pub fn f64(&mut self) -> Option<f64> {
        self.fixed(10).map(f64::from_bits)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
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

    /// A length-prefixed string, as a view into `buf` (whose bytes this input reads).
    pub fn shared(&mut self, buf: &Buf) -> Option<SharedStr> {
        Extent::decode(buf, self).map(SharedStr)
    }
}

/// Fields read in place: an extract stored as slots of bytes, each found through a table of
/// end offsets, so reading one field costs two table reads whatever its position.
///
/// Layout: a width byte (2, 3 or 5: the bytes of each end offset), the slot count, the ends,
/// then the slots' bytes. A slot holds a string, an optional string (empty for none, else
/// a 1 byte and the string), a list of length-prefixed strings, or a zigzag integer.
#[derive(Clone, PartialEq)]
pub struct Record(Extent);

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
        // Two bytes (14 bits) cover the slots of nearly every record: its offset table, a
        // fifth of an event's extract at three bytes, is a third smaller.
        let width = if total < 1 << 14 {
            2
        } else {
            offset_width(total)
        };
        let mut out = Output::default();
        out.u8(width as u8);
        out.var(self.slots.len() as u64);
        let mut end = 0usize;
        for slot in &self.slots {
            end += slot.len();
            out.fixed(end as u64, width);
        }
        for slot in &self.slots {
            out.0.extend_from_slice(slot);
        }
        Record(Extent::own(out.0))
    }
}

/// The bytes of an end offset into `total` bytes: three (21 bits) unless more are needed.
pub fn offset_width(total: usize) -> usize {
    if total < 1 << 21 { 3 } else { 5 }
}

/// End offset `k` of a table of `width`-byte offsets starting at `table` in `b`.
pub fn offset_at(b: &[u8], table: usize, width: usize, k: usize) -> usize {
    let at = table + k * width;
    b.get(at..at + width)
        .and_then(|bytes| Input::new(bytes).fixed(width))
        .map_or(0, |v| v as usize)
}

impl Record {
    /// The range of slot `i` in the buffer; empty when the record has no such slot.
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let b = self.0.bytes();
        let mut input = Input::new(b);
        let (Some(width), Some(count)) = (input.u8(), input.count()) else {
            return 0..0;
        };
        let width = usize::from(width);
        if i >= count || !matches!(width, 2 | 3 | 5) {
            return 0..0;
        }
        let table = input.pos();
        let data = self.0.range().start + table + count * width;
        let start = if i == 0 {
            0
        } else {
            offset_at(b, table, width, i - 1)
        };
        data + start..data + offset_at(b, table, width, i)
    }

    /// Slot `i`'s bytes.
    pub fn slot(&self, i: usize) -> &[u8] {
        self.0.text(self.range(i)).as_bytes()
    }

    pub fn str(&self, i: usize) -> &str {
        self.0.text(self.range(i))
    }

    pub fn opt(&self, i: usize) -> Option<&str> {
        let r = self.range(i);
        (!r.is_empty()).then(|| self.0.text(r.start + 1..r.end))
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
        self.0.encode(out);
    }

    /// The record's own bytes, as [`Record::from_bytes`] takes them back.
    pub fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }

    /// The record whose bytes [`Record::bytes`] gave; `None` when they are not UTF-8, which
    /// no record this module wrote can be.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Record> {
        buf_of(bytes).map(|buf| Record(Extent::whole(buf)))
    }

    /// The record at the input's position in `buf` ([`Extent::decode`]).
    pub fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<Record> {
        Extent::decode(buf, input).map(Record)
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
        out.fixed(u64::from(u32::MAX), 5);
        out.ivar(-1_700_000_000_123_456_789);
        out.ivar(i128::MAX);
        out.f64(2.5);
        out.str("héllo");
        let bytes = out.0;
        assert!(
            std::str::from_utf8(&bytes).is_ok(),
            "a cache's bytes are UTF-8"
        );
        let mut input = Input::new(&bytes);
        assert_eq!(input.var(), Some(0));
        assert_eq!(input.var(), Some(300));
        assert_eq!(input.var(), Some(u64::MAX));
        assert_eq!(input.fixed(5), Some(u64::from(u32::MAX)));
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
                input.fixed(5)?;
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
        for long in [3usize, 1_100_000] {
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
            let buf = buf_of(out.0).expect("UTF-8");
            let back = Record::decode(&buf, &mut Input::new(buf.as_bytes())).unwrap();
            assert!(back == r);
        }
    }

    #[test]
    fn shared_strings_are_views_and_foreign_bytes_are_refused() {
        let mut out = Output::default();
        out.str("héllo");
        out.str("ok");
        let buf = buf_of(out.0).expect("UTF-8");
        let mut input = Input::new(buf.as_bytes());
        let (a, b) = (input.shared(&buf).unwrap(), input.shared(&buf).unwrap());
        assert_eq!((&*a, &*b), ("héllo", "ok"));
        assert_eq!(b, SharedStr::new("ok"));
        assert!(
            buf_of(vec![b'a', 0xff]).is_none(),
            "not UTF-8: not a cache file"
        );
    }
}
