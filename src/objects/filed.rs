//! Derived files of entries filed by subject (docs/PERFORMANCE.md, "Digests"): what a
//! command about one task needs of a set of thousands of entries, read by lookup.
//!
//! A filed file holds, for a set of entries some read produced, one row per (entry, subject):
//! the hash of the subject, where the entry's bytes lie, their checksum and a code byte of
//! the caller's. Rows are grouped in buckets by hash, so a lookup reads the small header, one
//! bucket per subject and the entries it names, each by offset. The header also carries
//! bytes of the caller's own (counts, small tables).
//!
//! Invariants:
//! - it records the stamps of every directory the read it was made from depends on, taken
//!   before that read, and is served only while each is unchanged and settled by the index's
//!   rule ([`Stamp::settled`]) against this file's own write time;
//! - rows hold hashes, never answers: callers check every entry a lookup gives against
//!   their own rule, so a collision costs a read, never a wrong result;
//! - header and bucket table carry one checksum, each bucket and each entry its own;
//!   anything that fails a check is a miss, and the caller reads the whole set instead.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::workspace::Workspace;

use super::codec::{Input, Output};
use super::index::{DirStamp, Stamp};

/// Buckets of rows, by subject hash: a lookup reads one of them.
const BUCKETS: usize = 1024;
/// Bytes of one row: subject hash, entry offset, entry length, entry checksum (`u32` each)
/// and the caller's code (`u8`).
const ROW: usize = 17;
/// Bytes before the header: header length, table length, checksum of both (`u32` each).
const PREFIX: usize = 12;

/// One entry to file: its bytes, the subjects it is filed under and the caller's code.
pub struct Filing<'a> {
    pub bytes: &'a [u8],
    pub subjects: Vec<&'a str>,
    pub code: u8,
}

fn hash(s: &str) -> u32 {
    crc32fast::hash(s.as_bytes())
}

fn bucket_of(h: u32) -> usize {
    h as usize % BUCKETS
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The start of a span bounding a racy window (the read a filed file is made from).
pub fn started() -> Instant {
    #[allow(
        clippy::disallowed_methods,
        reason = "a monotonic span bounding the index's racy window; never shown or stored as a time"
    )]
    let now = Instant::now();
    now
}

/// The stamp of directory `path`, keyed by its path in the workspace.
pub fn dir_stamp(ws: &Workspace, path: &Path) -> DirStamp {
    let key = path
        .strip_prefix(ws.dir())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    (key, Stamp::of_dir(path))
}

/// The subdirectories of `path`, sorted; empty when it is no directory, `None` when it
/// cannot be listed.
pub fn subdirs(ws: &Workspace, path: &Path) -> Option<Vec<PathBuf>> {
    if Stamp::of_dir(path).is_none() {
        return Some(Vec::new());
    }
    let mut found: Vec<PathBuf> = ws
        .fs
        .list_dir(path)
        .ok()?
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    Some(found)
}

/// Writes the filed file `path` of `items`, made by a read that depended on `dirs` and
/// started at `started`. Derived and deletable: a failed write costs the next reader a full
/// read, no more.
pub fn write(
    ws: &Workspace,
    path: &Path,
    format: &str,
    dirs: &[DirStamp],
    started: Instant,
    extra: &[u8],
    items: &[Filing<'_>],
) {
    let mut entries: Vec<u8> = Vec::new();
    let mut rows: Vec<(u32, [u8; ROW])> = Vec::new();
    for item in items {
        let at = u32::try_from(entries.len()).unwrap_or(u32::MAX);
        entries.extend_from_slice(item.bytes);
        let len = u32::try_from(item.bytes.len()).unwrap_or(0);
        let sum = crc32fast::hash(item.bytes);
        let mut subjects = item.subjects.clone();
        subjects.sort_unstable();
        subjects.dedup();
        for s in subjects {
            let h = hash(s);
            let mut row = [0u8; ROW];
            row[0..4].copy_from_slice(&h.to_le_bytes());
            row[4..8].copy_from_slice(&at.to_le_bytes());
            row[8..12].copy_from_slice(&len.to_le_bytes());
            row[12..16].copy_from_slice(&sum.to_le_bytes());
            row[16] = item.code;
            rows.push((h, row));
        }
    }
    rows.sort_by_key(|(h, _)| bucket_of(*h));
    let mut table = Vec::with_capacity((2 * BUCKETS + 1) * 4);
    let mut body = Vec::with_capacity(rows.len() * ROW);
    let mut sums = Vec::with_capacity(BUCKETS);
    let mut next = 0;
    for b in 0..BUCKETS {
        let start = body.len();
        while next < rows.len() && bucket_of(rows[next].0) == b {
            body.extend_from_slice(&rows[next].1);
            next += 1;
        }
        table.extend_from_slice(&u32::try_from(start).unwrap_or(0).to_le_bytes());
        sums.push(crc32fast::hash(&body[start..]));
    }
    table.extend_from_slice(&u32::try_from(body.len()).unwrap_or(0).to_le_bytes());
    for s in sums {
        table.extend_from_slice(&s.to_le_bytes());
    }
    let listing_ns = i128::try_from(started.elapsed().as_nanos()).unwrap_or(i128::MAX);
    let mut head = Output::default();
    head.str(format);
    head.ivar(listing_ns);
    head.var(dirs.len() as u64);
    for (key, stamp) in dirs {
        head.str(key);
        match stamp {
            None => head.u8(0),
            Some(s) => {
                head.u8(1);
                s.encode(&mut head);
            }
        }
    }
    head.bytes(extra);
    let mut sum = crc32fast::Hasher::new();
    sum.update(&head.0);
    sum.update(&table);
    let mut out = Vec::with_capacity(PREFIX + head.0.len() + table.len() + body.len());
    out.extend_from_slice(&u32::try_from(head.0.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&u32::try_from(table.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&sum.finalize().to_le_bytes());
    out.extend_from_slice(&head.0);
    out.extend_from_slice(&table);
    out.extend_from_slice(&body);
    out.extend_from_slice(&entries);
    let _ = ws.fs.replace_derived(path, &out);
}

/// A filed file, its header read and its directories checked.
pub struct Filed {
    head: Arc<Head>,
}

/// What a filed file's header holds, kept per process by the file's stamp (a server opens
/// it on every call).
struct Head {
    path: PathBuf,
    file: File,
    stamp: Stamp,
    listing_ns: i128,
    dirs: Vec<DirStamp>,
    extra: Vec<u8>,
    /// Row offsets of each bucket (and the end), and each bucket's checksum.
    starts: Vec<u32>,
    sums: Vec<u32>,
    rows_at: u64,
    entries_at: u64,
}

impl Head {
    fn read(path: &Path, format: &str) -> Option<Head> {
        let file = File::open(path).ok()?;
        let stamp = Stamp::from_meta(&file.metadata().ok()?);
        let mut prefix = [0u8; PREFIX];
        read_at(&file, &mut prefix, 0)?;
        let head_len = u32_at(&prefix, 0) as usize;
        let table_len = u32_at(&prefix, 4) as usize;
        if table_len != (2 * BUCKETS + 1) * 4 {
            return None;
        }
        let mut bytes = vec![0u8; head_len.checked_add(table_len)?];
        read_at(&file, &mut bytes, PREFIX as u64)?;
        if crc32fast::hash(&bytes) != u32_at(&prefix, 8) {
            return None;
        }
        let table = bytes.split_off(head_len);
        let mut input = Input::new(&bytes);
        if input.str()? != format {
            return None;
        }
        let listing_ns = input.ivar()?;
        let mut dirs = Vec::new();
        for _ in 0..input.count()? {
            let key = input.str()?.to_string();
            let recorded = match input.u8()? {
                0 => None,
                1 => Some(Stamp::decode(&mut input)?),
                _ => return None,
            };
            dirs.push((key, recorded));
        }
        let span = input.span()?;
        let extra = bytes.get(span)?.to_vec();
        if !input.at_end() {
            return None;
        }
        let starts: Vec<u32> = (0..=BUCKETS).map(|b| u32_at(&table, b * 4)).collect();
        let sums: Vec<u32> = (0..BUCKETS)
            .map(|b| u32_at(&table, (BUCKETS + 1 + b) * 4))
            .collect();
        if starts.windows(2).any(|w| w[0] > w[1]) {
            return None;
        }
        let rows_at = (PREFIX + head_len + table_len) as u64;
        Some(Head {
            path: path.to_path_buf(),
            entries_at: rows_at + u64::from(*starts.last()?),
            rows_at,
            file,
            stamp,
            listing_ns,
            dirs,
            extra,
            starts,
            sums,
        })
    }

    fn read_shared(path: &Path, format: &str) -> Option<Arc<Head>> {
        static HEADS: std::sync::Mutex<Vec<Arc<Head>>> = std::sync::Mutex::new(Vec::new());
        let stamp = Stamp::of(path)?;
        if let Ok(heads) = HEADS.lock()
            && let Some(h) = heads.iter().find(|h| h.stamp == stamp && h.path == path)
        {
            return Some(Arc::clone(h));
        }
        let head = Arc::new(Head::read(path, format)?);
        if let Ok(mut heads) = HEADS.lock() {
            heads.retain(|h| h.path != path);
            heads.push(Arc::clone(&head));
        }
        Some(head)
    }
}

impl Filed {
    /// The filed file at `path` in layout `format`, when it passes its checks and every
    /// directory it records is unchanged and settled.
    pub fn open(ws: &Workspace, path: &Path, format: &str) -> Option<Filed> {
        let head = Head::read_shared(path, format)?;
        let written = head.stamp.mtime_ns();
        let current = head.dirs.iter().all(|(key, recorded)| {
            Stamp::of_dir(&ws.dir().join(key)) == *recorded
                && recorded.is_none_or(|s| s.settled(written, head.listing_ns))
        });
        current.then_some(Filed { head })
    }

    /// The caller's bytes of the header.
    pub fn extra(&self) -> &[u8] {
        &self.head.extra
    }

    /// The rows filed under subject `s`: (entry offset, length, checksum, code).
    fn rows(&self, s: &str) -> Option<Vec<(u32, u32, u32, u8)>> {
        let h = hash(s);
        let b = bucket_of(h);
        let (start, end) = (self.head.starts[b], self.head.starts[b + 1]);
        let mut bytes = vec![0u8; (end - start) as usize];
        read_at(
            &self.head.file,
            &mut bytes,
            self.head.rows_at + u64::from(start),
        )?;
        if crc32fast::hash(&bytes) != self.head.sums[b] {
            return None;
        }
        Some(
            bytes
                .chunks_exact(ROW)
                .filter(|r| u32_at(r, 0) == h)
                .map(|r| (u32_at(r, 4), u32_at(r, 8), u32_at(r, 12), r[16]))
                .collect(),
        )
    }

    /// The bytes and codes of the entries filed under any of `subjects` (or colliding with
    /// one), once each, by their place in the file; `None` when a part fails its check.
    pub fn lookup<'s>(
        &self,
        subjects: impl IntoIterator<Item = &'s str>,
    ) -> Option<BTreeMap<u32, (Vec<u8>, u8)>> {
        /// Bytes between two entries read in one go rather than two.
        const GAP: u32 = 4096;
        let mut wanted: BTreeMap<u32, (u32, u32, u8)> = BTreeMap::new();
        for s in subjects {
            for (at, len, sum, code) in self.rows(s)? {
                wanted.insert(at, (len, sum, code));
            }
        }
        let wanted: Vec<(u32, (u32, u32, u8))> = wanted.into_iter().collect();
        let mut out = BTreeMap::new();
        let mut next = 0;
        while next < wanted.len() {
            let first = wanted[next].0;
            let mut end = next;
            let mut stop = first.checked_add(wanted[next].1.0)?;
            while end + 1 < wanted.len() && wanted[end + 1].0 <= stop.saturating_add(GAP) {
                end += 1;
                stop = stop.max(wanted[end].0.checked_add(wanted[end].1.0)?);
            }
            let mut buf = vec![0u8; (stop - first) as usize];
            read_at(
                &self.head.file,
                &mut buf,
                self.head.entries_at + u64::from(first),
            )?;
            for &(at, (len, sum, code)) in &wanted[next..=end] {
                let local = (at - first) as usize;
                let bytes = buf.get(local..local + len as usize)?;
                if crc32fast::hash(bytes) != sum {
                    return None;
                }
                out.insert(at, (bytes.to_vec(), code));
            }
            next = end + 1;
        }
        Some(out)
    }
}

/// Reads exactly `buf.len()` bytes of `file` at offset `at`; `None` on any failure.
#[cfg(unix)]
pub fn read_at(file: &File, buf: &mut [u8], at: u64) -> Option<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, at).ok()
}

#[cfg(not(unix))]
pub fn read_at(mut file: &File, buf: &mut [u8], at: u64) -> Option<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(at)).ok()?;
    file.read_exact(buf).ok()
}
