//! Text normalisation before features: NFKC, lower case, whitespace runs
//! collapsed to one space, trimmed; ASCII a word at a time, other runs
//! through NFKC.

use super::*;

/// NFKC, lower case, whitespace runs collapsed to one space, trimmed.
///
/// Most text on the web is ASCII with a few other characters (curly quotes,
/// `§`, no-break spaces). So the text is cut before every ASCII character
/// into pieces normalised on their own: ASCII byte by byte, and only the runs
/// of other characters through NFKC. That is NFKC of the whole text, because
/// an ASCII character is a stable code point (UAX #15: quick check Yes,
/// combining class 0, never the second of a composition), before which
/// normalisation may always be split. The ASCII character just before a run
/// goes with the run: a combining mark in the run may compose with it.
#[cfg(test)]
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::new();
    normalize_into(text, &mut out);
    out
}

/// [`normalize`]s `text` into `out`, replacing what it held.
pub(super) fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    out.reserve(text.len());
    let mut out = Normalized {
        text: out,
        pending_space: false,
    };
    let bytes = text.as_bytes();
    for (ascii, other) in ascii_then_other_runs(bytes) {
        let with = match other.start > ascii.start {
            true => other.start - 1,
            false => other.start,
        };
        out.push_ascii(&bytes[ascii.start..with]);
        out.push_unicode(&text[with..other.end]);
    }
}

/// The bytes of UTF-8 text as runs in turn: a run of ASCII (maybe empty),
/// then the run of other characters after it (empty at the end of the
/// text), and so on to the end. Each range begins and ends between
/// characters.
pub(super) fn ascii_then_other_runs(
    bytes: &[u8],
) -> impl Iterator<Item = (Range<usize>, Range<usize>)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= bytes.len() {
            return None;
        }
        let other = at + ascii_prefix_len(&bytes[at..]);
        let end = bytes[other..]
            .iter()
            .position(u8::is_ascii)
            .map_or(bytes.len(), |p| other + p);
        let runs = (at..other, other..end);
        at = end;
        Some(runs)
    })
}

/// One ASCII byte of [`Normalized::push_ascii`] written at `end`, with a
/// space before it if one is pending: the new end and pending state.
#[inline(always)]
pub(super) fn push_ascii_byte(
    out: &mut [u8],
    mut end: usize,
    pending: bool,
    b: u8,
) -> (usize, bool) {
    let space = matches!(b, b'\t'..=b'\r' | b' ');
    out[end] = b' ';
    end += usize::from(pending & !space);
    out[end] = b.to_ascii_lowercase();
    end += usize::from(!space);
    (end, space & (end > 0))
}

pub(super) const HIGH_BIT_OF_EACH_BYTE: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` (eight ASCII bytes) that is at
/// least `c` (1 to 128): adding `128 - c` to a byte below 128 carries into
/// its high bit exactly then, and never into the next byte.
#[inline(always)]
pub(super) fn bytes_at_least(word: u64, c: u8) -> u64 {
    word.wrapping_add(LOW_BIT_OF_EACH_BYTE * u64::from(128 - c)) & HIGH_BIT_OF_EACH_BYTE
}

/// The high bit of each white-space byte of eight ASCII bytes: tab to
/// carriage return (9 to 13), and space.
#[inline(always)]
pub(super) fn white_space_bytes(word: u64) -> u64 {
    let controls = bytes_at_least(word, b'\t') & !bytes_at_least(word, b'\r' + 1);
    let space = bytes_at_least(word, b' ') & !bytes_at_least(word, b' ' + 1);
    controls | space
}

/// Eight ASCII bytes with `A` to `Z` lowered and the white-space bytes
/// (`spaces`, as [`white_space_bytes`] gives them) made spaces.
#[inline(always)]
pub(super) fn lowered_with_spaces(word: u64, spaces: u64) -> u64 {
    let upper = bytes_at_least(word, b'A') & !bytes_at_least(word, b'Z' + 1);
    // 128 >> 2 is 32, the bit that lowers a letter and the code of a space.
    let lowered = word | (upper >> 2);
    let space_bytes = (spaces >> 7) * 0xff;
    (lowered & !space_bytes) | (spaces >> 2)
}

/// How many bytes `bytes` begins with that are ASCII, found eight at a time.
pub(super) fn ascii_prefix_len(bytes: &[u8]) -> usize {
    let mut words = bytes.chunks_exact(8);
    let mut len = 0;
    for word in words.by_ref() {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of eight bytes"));
        let high = word & HIGH_BIT_OF_EACH_BYTE;
        if high != 0 {
            return len + high.trailing_zeros() as usize / 8;
        }
        len += 8;
    }
    len + words
        .remainder()
        .iter()
        .position(|b| !b.is_ascii())
        .unwrap_or(words.remainder().len())
}

pub(super) struct Normalized<'a> {
    text: &'a mut String,
    pending_space: bool,
}

impl Normalized<'_> {
    /// ASCII: ASCII is NFKC, and its lower case and white space
    /// (`char::is_whitespace`: tab to carriage return, and space) are
    /// bytes'. Most of it is words between single spaces or line breaks:
    /// eight bytes with no two white-space bytes side by side are lowered
    /// and their white space made spaces all at once, in a word
    /// ([`lowered_with_spaces`]), and written whole. The other bytes go
    /// one at a time, each written without a branch on what it is: a
    /// pending space, then the byte lowered, each kept by advancing past it
    /// or dropped by writing over it. (Branching per byte, or sending each
    /// through [`Self::push`], is slower.)
    fn push_ascii(&mut self, text: &[u8]) {
        // SAFETY: only ASCII bytes are written, and the vector is cut back
        // to the bytes kept, so the string stays UTF-8.
        let out = unsafe { self.text.as_mut_vec() };
        let mut end = out.len();
        // At most one byte more is kept than is read (a pending space), and
        // every step writes at most two slots past what it keeps.
        out.resize(end + text.len() + 2, 0);
        let mut pending = self.pending_space;
        let mut words = text.chunks_exact(8);
        for chunk in words.by_ref() {
            let word = u64::from_le_bytes(chunk.try_into().expect("chunks of eight bytes"));
            let spaces = white_space_bytes(word);
            let first_is_space = spaces & 0x80 != 0;
            // A white-space byte beside another, or first after a pending
            // space (or first of all), would be dropped: byte by byte.
            if spaces & (spaces << 8) != 0 || (first_is_space && (pending || end == 0)) {
                for &b in chunk {
                    (end, pending) = push_ascii_byte(out, end, pending, b);
                }
                continue;
            }
            out[end] = b' ';
            end += usize::from(pending);
            out[end..end + 8].copy_from_slice(&lowered_with_spaces(word, spaces).to_le_bytes());
            // A last white-space byte stays pending: the next may drop it.
            pending = spaces >> 63 != 0;
            end += 8 - usize::from(pending);
        }
        for &b in words.remainder() {
            (end, pending) = push_ascii_byte(out, end, pending, b);
        }
        out.truncate(end);
        self.pending_space = pending;
    }

    /// Text other than ASCII: runs of plain ideographs, kana and Hangul
    /// syllables as they are (see [`cjk`]), the rest through
    /// [`Self::push_other`].
    fn push_unicode(&mut self, text: &str) {
        for (other, copied) in other_then_plain_runs(text) {
            self.push_other(other);
            self.push_copied(copied);
        }
    }

    /// Any text, through NFKC unless it is NFKC already (the quick check
    /// skips the decomposition and recomposition, which would give the same
    /// characters).
    fn push_other(&mut self, text: &str) {
        if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
            text.chars().for_each(|c| self.push_lowercase(c));
        } else {
            text.nfkc().for_each(|c| self.push_lowercase(c));
        }
    }

    /// Characters that are their own NFKC and lower case, and not white
    /// space.
    fn push_copied(&mut self, copied: &str) {
        if copied.is_empty() {
            return;
        }
        if self.pending_space {
            self.text.push(' ');
            self.pending_space = false;
        }
        self.text.push_str(copied);
    }

    #[inline]
    fn push_lowercase(&mut self, c: char) {
        if c.is_ascii() {
            self.push(c.to_ascii_lowercase());
        } else {
            c.to_lowercase().for_each(|l| self.push(l));
        }
    }

    #[inline]
    fn push(&mut self, c: char) {
        if c.is_whitespace() {
            self.pending_space = !self.text.is_empty();
        } else {
            if self.pending_space {
                self.text.push(' ');
                self.pending_space = false;
            }
            self.text.push(c);
        }
    }
}
