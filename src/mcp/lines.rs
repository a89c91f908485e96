//! A bounded line reader: one JSON-RPC message per line, never more than the cap in memory.
//! The official SDK transports read lines without a limit; the cap has to be dacli's own.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The largest message accepted, newline excluded (spec MCP.md §1).
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// How much of an oversized line is kept to find its `id` in: a request names its id near
/// its start, before the parameters that made it too long.
pub const KEPT_PREFIX: usize = 64 * 1024;

/// What the next read produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its `\n` (and without a `\r` before it).
    Text(Vec<u8>),
    /// A line longer than the cap; its bytes were discarded up to and including its `\n`,
    /// except its first [`KEPT_PREFIX`] bytes (or fewer, with a cap below that), given here.
    TooLong(Vec<u8>),
    /// End of input. A partial last line is dropped, never executed.
    Eof,
}

/// Reads lines of at most `cap` bytes from `inner`.
pub struct Lines<R> {
    inner: R,
    cap: usize,
    buf: Vec<u8>,
    discarding: bool,
    /// The start of the oversized line being discarded.
    prefix: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    pub fn new(inner: R, cap: usize) -> Lines<R> {
        Lines {
            inner,
            cap,
            buf: Vec::new(),
            discarding: false,
            prefix: Vec::new(),
        }
    }

    /// The next line. Memory stays within `cap` plus one read buffer whatever the input.
    pub async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                self.buf.clear();
                return Ok(Line::Eof);
            }
            let newline = chunk.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(chunk.len());
            let over = self.discarding || self.buf.len() + take > self.cap;
            if !over {
                self.buf.extend_from_slice(&chunk[..take]);
            }
            let consumed = newline.map_or(take, |i| i + 1);
            if over {
                if !self.discarding {
                    self.prefix = std::mem::take(&mut self.buf);
                    self.prefix.truncate(KEPT_PREFIX);
                }
                let room = KEPT_PREFIX.saturating_sub(self.prefix.len()).min(take);
                self.prefix.extend_from_slice(&chunk[..room]);
                self.inner.consume(consumed);
                self.buf = Vec::new();
                self.discarding = newline.is_none();
                if newline.is_some() {
                    return Ok(Line::TooLong(std::mem::take(&mut self.prefix)));
                }
                continue;
            }
            self.inner.consume(consumed);
            if newline.is_some() {
                let mut line = std::mem::take(&mut self.buf);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Line::Text(line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &[u8], cap: usize) -> Vec<Line> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            // A tiny buffer makes lines span many reads.
            let reader = tokio::io::BufReader::with_capacity(3, input);
            let mut lines = Lines::new(reader, cap);
            let mut out = Vec::new();
            loop {
                let l = lines.next().await.expect("read");
                let end = l == Line::Eof;
                out.push(l);
                if end {
                    return out;
                }
            }
        })
    }

    #[test]
    fn splits_lines_and_strips_carriage_returns() {
        assert_eq!(
            read_all(b"ab\r\ncd\n\nefg", 8),
            vec![
                Line::Text(b"ab".to_vec()),
                Line::Text(b"cd".to_vec()),
                Line::Text(Vec::new()),
                Line::Eof
            ]
        );
    }

    #[test]
    fn an_oversized_line_is_dropped_and_the_next_one_is_read() {
        assert_eq!(
            read_all(b"12345678\n123456789\nok\n", 8),
            vec![
                Line::Text(b"12345678".to_vec()),
                Line::TooLong(b"123456789".to_vec()),
                Line::Text(b"ok".to_vec()),
                Line::Eof
            ]
        );
    }
}
