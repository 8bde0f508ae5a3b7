//! Charikar's simhash (f = 64) over weighted text features.
//!
//! The algorithm, fixed so that a fingerprint computed today equals one
//! computed next year (the golden tests pin it; `tests/simhash_reference.py`
//! implements it again in Python, and the tests compare the two):
//! 1. normalise: Unicode NFKC; lower case, each character by its full
//!    Unicode lower-case mapping (without the context rule for a final
//!    sigma); every run of whitespace one space; trimmed;
//! 2. features ([`Features`]):
//!    - `words`: Unicode word segmentation (UAX #29) keeps the runs of
//!      letters and digits and drops punctuation; every run of Han
//!      characters is segmented into words by jieba-rs 0.11.0's dictionary,
//!      without its HMM (pinned: another dictionary would move
//!      fingerprints);
//!    - `shingles:N`: every N consecutive words, joined by one space;
//!    - `chars:N`: every N consecutive characters of the normalised text,
//!      spaces included (a text shorter than N is one feature);
//!    - `script`: chosen per document. Text whose Han characters are at
//!      least half of its letters and digits takes `words` with
//!      term-frequency weights; under [`ScriptRule::LongHanWords`] (scheme
//!      v5) only from 200 Han characters on, a shorter one taking `chars:4`
//!      with log weights. Any other text takes `chars:5` with log weights;
//!    - stop words: for `words` and `shingles`, about 60 common English and
//!      Chinese function words (`the`, `of`, `的`, `了`, ...) are dropped
//!      first, unless told otherwise;
//! 3. weight: the feature's count in the document (term frequency), or
//!    `1 + ln(count)` with log scaling, the distinct features' weights then
//!    summed in the order of their hashes (float addition is not
//!    associative: one order gives the same bits on every run);
//! 4. hash each feature's UTF-8 bytes with xxh3-64 (seed 0); n-gram parts are
//!    joined with one space;
//! 5. for each bit `i` (bit 0 the least significant) add the weight when the
//!    hash has bit `i` set and subtract it otherwise; the fingerprint has bit
//!    `i` set when the sum is positive.
//!
//! A document without features gets fingerprint 0 and `n_features = 0`.
//!
//! Headings (HTML pages from the fifth main-content rules, scheme v9)
//! weigh more: see `headings.rs`.
//!
//! Scheme v7 adds a sketch: 192 more bits of the same features and weights
//! ([`sketch`]).

use std::cell::RefCell;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use cjk::{for_each_word, is_stable_letter, other_then_plain_runs};
#[cfg(test)]
use document_sums::simhash_of;
use document_sums::{with_sums, HashChunks};
use feature_hash::{feature_hash, push_window_hashes};
use jieba_rs::Jieba;
use rustc_hash::FxHashSet;
use sums::LOW_BIT_OF_EACH_BYTE;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

mod cjk;
mod document_sums;
mod feature_hash;
mod headings;
mod listing;
mod normalize;
mod sketch;
mod sums;
mod words;

pub(crate) use headings::heading_copies;
pub use headings::HEADING_WEIGHT;
use headings::{Counting, HeadingFeatures};
pub use sketch::{Sketch, SKETCH_BITS, SKETCH_WORDS};

pub(crate) use listing::{feature_list, hash_feature, FeatureList};
use normalize::*;
use words::*;
pub(crate) use words::{prepare_han_segmentation, words};

/// Which features a document is turned into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Features {
    /// Words: Unicode word segmentation (UAX #29); runs of Han characters are
    /// segmented into words by jieba's dictionary.
    Words,
    /// Word n-grams (shingles) of `n` consecutive words.
    Shingles(usize),
    /// Character n-grams of the normalised text, spaces included.
    Chars(usize),
    /// By the text's script, per document, under a [`ScriptRule`]: text
    /// mostly of Han characters is [`Features::Words`] with term-frequency
    /// weights; any other text is character 5-grams with log weights.
    /// Measured on real pages (README, "Figures"), each is the better
    /// scheme on its own script and the worse on the other: 5-grams of
    /// Chinese are nearly all distinct, so each edit moves its share of
    /// bits, while English pages' repeated boilerplate words outweigh what
    /// sets them apart under word counts.
    Script(ScriptRule),
}

/// Which features [`Features::Script`] gives a text mostly of Han
/// characters. A rule, once published in a scheme, keeps its fingerprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptRule {
    /// Schemes v3 and v4: words, however short the text.
    HanWords,
    /// Since scheme v5 (`script`): words from [`SHORT_HAN`] Han characters
    /// on; shorter texts take character 4-grams with log weights. Under
    /// word counts a short text's few stock phrases decide its
    /// fingerprint: on real Chinese reviews, unrelated short ones came
    /// within k.
    LongHanWords,
}

/// Han characters from which [`ScriptRule::LongHanWords`] takes words
/// (the scheme string of v5 says 200 in so many words).
const SHORT_HAN: usize = 200;

/// The character n-grams of short Han text under [`ScriptRule::LongHanWords`].
const SHORT_HAN_CHAR_GRAMS: usize = 4;

impl FromStr for Features {
    type Err = anyhow::Error;

    /// `words`, `shingles:N` or `chars:N`.
    fn from_str(s: &str) -> Result<Features> {
        let (kind, n) = match s.split_once(':') {
            Some((kind, n)) => {
                let n: usize = n
                    .parse()
                    .with_context(|| format!("--features {s}: `{n}` is not a number"))?;
                if n == 0 {
                    bail!("--features {s}: N must be at least 1");
                }
                (kind, Some(n))
            }
            None => (s, None),
        };
        match (kind, n) {
            ("words", None) => Ok(Features::Words),
            ("script", None) => Ok(Features::Script(ScriptRule::LongHanWords)),
            ("shingles", Some(n)) => Ok(Features::Shingles(n)),
            ("chars", Some(n)) => Ok(Features::Chars(n)),
            _ => bail!("--features {s}: expected script, words, shingles:N or chars:N"),
        }
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Features::Words => write!(f, "words"),
            Features::Shingles(n) => write!(f, "shingles:{n}"),
            Features::Chars(n) => write!(f, "chars:{n}"),
            Features::Script(ScriptRule::LongHanWords) => write!(f, "script"),
            Features::Script(ScriptRule::HanWords) => write!(f, "script (v3, v4)"),
        }
    }
}

/// How documents are fingerprinted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimhashOptions {
    pub features: Features,
    /// Weight `1 + ln(count)` instead of `count`.
    pub log_weights: bool,
    /// Drop the built-in English and Chinese stop words before making word
    /// features (the default: without it, the most frequent words dominate
    /// every fingerprint and unrelated pages of one genre come out close).
    pub stop_words: bool,
}

impl Default for SimhashOptions {
    fn default() -> Self {
        SimhashOptions {
            features: Features::Words,
            log_weights: false,
            stop_words: true,
        }
    }
}

/// A document's fingerprint and what it was made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub simhash: u64,
    /// Features counted with repetition (0 for an empty document).
    pub n_features: u32,
    /// Characters of the normalised text.
    pub n_chars: u32,
    /// The document's sketch ([`sketch`]), when asked for.
    pub sketch: Option<Sketch>,
}

/// A document's simhash, its features counted with repetition, and its
/// sketch when asked for.
type Summed = (u64, u32, Option<Sketch>);

impl SimhashOptions {
    /// The options a normalised text is fingerprinted with: these, unless
    /// the features are [`Features::Script`], which choose by the text.
    fn for_text(&self, text: &str) -> SimhashOptions {
        let Features::Script(rule) = self.features else {
            return *self;
        };
        let (features, log_weights) = match (han_majority(text), rule) {
            (Some(han), ScriptRule::LongHanWords) if han < SHORT_HAN => {
                (Features::Chars(SHORT_HAN_CHAR_GRAMS), true)
            }
            (Some(_), _) => (Features::Words, false),
            (None, _) => (Features::Chars(SCRIPT_CHAR_GRAMS), true),
        };
        SimhashOptions {
            features,
            log_weights,
            ..*self
        }
    }
}

/// The character n-grams [`Features::Script`] takes for text not mostly Han.
const SCRIPT_CHAR_GRAMS: usize = 5;

/// How many Han characters `text` holds, if they are at least half of its
/// letters and digits. Asked of every document, so text without a Han character
/// (most pages, ASCII or with a few `’` or `§`) is answered by one pass
/// over its bytes looking for the lead byte of one, and ASCII bytes among
/// other text are counted without decoding: going char by char through
/// `is_alphanumeric` was a visible share of fingerprinting's time.
fn han_majority(text: &str) -> Option<usize> {
    if !may_hold_han(text.as_bytes()) {
        return None;
    }
    let bytes = text.as_bytes();
    let (mut han, mut other) = (0usize, 0usize);
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii() {
            other += usize::from(bytes[at].is_ascii_alphanumeric());
            at += 1;
            continue;
        }
        let Some(c) = text[at..].chars().next() else {
            break;
        };
        if is_han(c) {
            han += 1;
        } else if is_stable_letter(c) || c.is_alphanumeric() {
            // Kana and Hangul syllables, letters all, skip the table lookup.
            other += 1;
        }
        at += c.len_utf8();
    }
    (han > 0 && han >= other).then_some(han)
}

/// Whether `bytes` hold a lead byte of the UTF-8 of a Han character
/// ([`is_han`]: U+3400 to U+9FFF lead with E3 to E9, U+F900 to U+FAFF
/// with EF, U+20000 up with F0). A fold rather than `any`, so that it
/// vectorises, in blocks, so that a Han page stops early.
fn may_hold_han(bytes: &[u8]) -> bool {
    bytes.chunks(256).any(|block| {
        block.iter().fold(false, |seen, &b| {
            seen | matches!(b, 0xE3..=0xE9 | 0xEF | 0xF0)
        })
    })
}

/// Fingerprints `text` under `options`.
pub fn fingerprint(text: &str, options: &SimhashOptions) -> Fingerprint {
    fingerprint_with(text, options, false)
}

/// Fingerprints `text` under `options`, with its sketch if `sketch`.
pub fn fingerprint_with(text: &str, options: &SimhashOptions, sketch: bool) -> Fingerprint {
    fingerprint_page(text, &[], options, sketch)
}

/// Fingerprints `text`, whose `headings` (byte ranges) weigh
/// [`HEADING_WEIGHT`] times (see the `headings` module), under `options`,
/// with its sketch if `sketch`.
pub fn fingerprint_page(
    text: &str,
    headings: &[Range<usize>],
    options: &SimhashOptions,
    sketch: bool,
) -> Fingerprint {
    thread_local! {
        /// The normalised text, one buffer per thread: a fresh one per page
        /// would be, for the pages of megabytes, memory the kernel has to
        /// clear and map anew every time.
        static NORMALIZED: RefCell<String> = const { RefCell::new(String::new()) };
    }
    NORMALIZED.with(|normalized| {
        let mut normalized = normalized.borrow_mut();
        normalize_into(text, &mut normalized);
        let headings = headings.iter().filter_map(|range| text.get(range.clone()));
        fingerprint_normalized(&normalized, headings, options, sketch)
    })
}

fn fingerprint_normalized<'h>(
    text: &str,
    headings: impl Iterator<Item = &'h str>,
    options: &SimhashOptions,
    sketch: bool,
) -> Fingerprint {
    let n_chars = text.chars().count() as u32;
    let options = &options.for_text(text);
    let (simhash, n_features, sketch) = simhash_of_hashes(options, sketch, |hashes| {
        push_page_features(text, headings, options, hashes)
    });
    Fingerprint {
        simhash,
        n_features,
        n_chars,
        sketch,
    }
}

/// Pushes the hashes of a normalised text's features under `options`
/// (whose features are already chosen for the text).
fn push_feature_hashes(text: &str, options: &SimhashOptions, hashes: &mut impl Extend<u64>) {
    match options.features {
        Features::Chars(n) => char_gram_hashes(text, n, hashes),
        Features::Words | Features::Shingles(_) | Features::Script(_) => {
            let mut words = words(text);
            if options.stop_words {
                words.retain(|w| !is_stop_word(w));
            }
            let n = match options.features {
                Features::Shingles(n) => n,
                _ => 1,
            };
            word_gram_hashes(&words, n, hashes)
        }
    }
}

/// Pushes the features of `text` and, when `headings` have features, their
/// further hashes (see [`headings`]); returns how many further ones. Under
/// log weights the sums count the page's features; under term frequency
/// the headings' are counted on their way.
fn push_page_features<'h>(
    text: &str,
    headings: impl Iterator<Item = &'h str>,
    options: &SimhashOptions,
    out: &mut HashChunks,
) -> u32 {
    let (mut normalized, mut hashes) = (String::new(), Vec::new());
    for heading in headings {
        normalize_into(heading, &mut normalized);
        push_feature_hashes(&normalized, options, &mut hashes);
    }
    let Some(mut headings) = HeadingFeatures::of(hashes) else {
        push_feature_hashes(text, options, out);
        return 0;
    };
    if options.log_weights {
        push_feature_hashes(text, options, out);
        headings.count_with(|hash| out.count_of(hash).unwrap_or(0));
    } else {
        let mut counting = Counting {
            inner: out,
            headings: &mut headings,
        };
        push_feature_hashes(text, options, &mut counting);
    }
    headings.push_copies(out)
}

/// Pushes the hash of every n-gram of `words` (joined by one space).
fn word_gram_hashes(words: &[&str], n: usize, hashes: &mut impl Extend<u64>) {
    if n == 1 {
        hashes.extend(words.iter().map(|w| feature_hash(w.as_bytes())));
        return;
    }
    let mut joined = String::new();
    hashes.extend(words.windows(n).map(|gram| {
        joined.clear();
        for (i, w) in gram.iter().enumerate() {
            if i > 0 {
                joined.push(' ');
            }
            joined.push_str(w);
        }
        feature_hash(joined.as_bytes())
    }));
}

/// The simhash of the feature hashes `push` gives, how many there were
/// less the further copies `push` returns, and with `sketch` their sketch:
/// they are added to the sums a chunk at a time, through one buffer per
/// thread (see [`HashChunks`]).
fn simhash_of_hashes(
    options: &SimhashOptions,
    sketch: bool,
    push: impl FnOnce(&mut HashChunks) -> u32,
) -> Summed {
    thread_local! {
        static CHUNK: RefCell<Vec<u64>> = RefCell::new(Vec::with_capacity(HashChunks::LEN));
    }
    CHUNK.with(|chunk| {
        let mut chunk = chunk.borrow_mut();
        with_sums(options.log_weights, sketch, |sums| {
            let mut hashes = HashChunks::new(&mut chunk, sums);
            let copies = push(&mut hashes);
            hashes.flush();
            let (simhash, n_features) = sums.simhash();
            (simhash, n_features - copies, sums.sketch())
        })
    })
}

/// Pushes the hash of every character n-gram of `text`; a text shorter
/// than `n` characters is one feature, an empty one none.
fn char_gram_hashes(text: &str, n: usize, grams: &mut impl Extend<u64>) {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return;
    }
    let ascii = text.is_ascii();
    let shorter_than_n = match ascii {
        true => bytes.len() < n,
        false => text.chars().nth(n - 1).is_none(),
    };
    match (shorter_than_n, ascii) {
        (true, _) => grams.extend([feature_hash(bytes)]),
        (false, true) => push_window_hashes(bytes, n, grams),
        (false, false) => mixed_text_gram_hashes(text, n, grams),
    }
}

/// The hashes of every `n`-character gram of `text` (at least `n`
/// characters, not all ASCII), in no particular order: the sums do not
/// depend on it.
///
/// Most such text is ASCII with a few other characters. So the grams of ASCII
/// alone, `n` bytes each, are hashed by the ASCII loop over each run of ASCII
/// bytes, and only the grams holding another character are found by walking
/// characters: in the zone of each run of other characters and `n - 1`
/// characters either side of it, zones that overlap merged into one. The `n -
/// 1` bytes beside a run are ASCII unless another run is that close, and then
/// the two zones overlap and merge: so zones begin and end between
/// characters, and each gram with another character lies in exactly one zone.
fn mixed_text_gram_hashes(text: &str, n: usize, out: &mut impl Extend<u64>) {
    let bytes = text.as_bytes();
    let mut zone: Option<(usize, usize)> = None;
    for (ascii, other) in ascii_then_other_runs(bytes) {
        if ascii.len() >= n {
            push_window_hashes(&bytes[ascii], n, out);
        }
        if other.is_empty() {
            break;
        }
        let around = (
            other.start.saturating_sub(n - 1),
            (other.end + n - 1).min(bytes.len()),
        );
        zone = match zone {
            Some((start, end)) if around.0 < end => Some((start, around.1)),
            Some((start, end)) => {
                grams_with_other_characters(&text[start..end], n, out);
                Some(around)
            }
            None => Some(around),
        };
    }
    if let Some((start, end)) = zone {
        grams_with_other_characters(&text[start..end], n, out);
    }
}

/// The hashes of the `n`-character grams of `zone` that are longer than
/// `n` bytes: those holding a character other than ASCII.
fn grams_with_other_characters(zone: &str, n: usize, out: &mut impl Extend<u64>) {
    let bytes = zone.as_bytes();
    let starts = zone.char_indices().map(|(i, _)| i);
    let ends = starts.clone().chain(std::iter::once(bytes.len())).skip(n);
    out.extend(
        starts
            .zip(ends)
            .filter(|&(start, end)| end - start > n)
            .map(|(start, end)| feature_hash(&bytes[start..end])),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64;

    #[test]
    fn han_majority_counts_as_the_char_by_char_definition_does() {
        let by_chars = |text: &str| {
            let han = text.chars().filter(|&c| is_han(c)).count();
            let other = text
                .chars()
                .filter(|&c| !is_han(c) && c.is_alphanumeric())
                .count();
            (han > 0 && han >= other).then_some(han)
        };
        for text in [
            "",
            "plain ascii text, 42 words",
            "中文",
            "中文 ab",
            "中文 abc",
            "ab 中 é",
            "日本語のテキスト and English",
            "Ünïcödé café 中",
            "𠀀𠀁 ab",
            "日本語のテキスト",
            "漢字とかなカナ、ー",
            "１２３ 中文",
            "中文中文 a1b2",
        ] {
            assert_eq!(han_majority(text), by_chars(text), "{text:?}");
        }
    }

    #[test]
    fn every_han_character_has_a_lead_byte_the_check_looks_for() {
        let mut buf = [0; 4];
        for c in (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_han(c))
        {
            assert!(may_hold_han(c.encode_utf8(&mut buf).as_bytes()), "{c:?}");
        }
        assert!(!may_hold_han("plain text, § and ’ and é".as_bytes()));
    }

    #[test]
    fn no_stop_word_is_longer_than_the_length_check_lets_through() {
        for word in STOP_WORDS {
            assert!(word.len() <= LONGEST_STOP_WORD, "{word}");
            assert!(is_stop_word(word), "{word}");
        }
        assert!(!is_stop_word("thee"));
    }

    fn distance(a: &str, b: &str, options: &SimhashOptions) -> u32 {
        (fingerprint(a, options).simhash ^ fingerprint(b, options).simhash).count_ones()
    }

    #[test]
    fn ascii_is_normalised_as_any_other_text() {
        let all: String = (0u8..128).map(char::from).collect();
        let mut texts = vec![
            all.clone(),
            format!("  {all}  "),
            String::new(),
            " \x0b\t".into(),
        ];
        texts.extend((0..200).map(|i| {
            (0..40)
                .map(|j| char::from(((i * 7919 + j * 104_729) % 128) as u8))
                .collect::<String>()
        }));
        for text in texts {
            assert_eq!(normalize(&text), normalize_whole(&text), "{text:?}");
        }
    }

    #[test]
    fn the_ascii_prefix_is_found_at_every_length_and_offset() {
        for len in 0..40 {
            for first_other in 0..=len {
                let mut bytes = vec![b'a'; len];
                if first_other < len {
                    bytes[first_other] = 0xc3;
                }
                for start in 0..=len {
                    let expected = bytes[start..]
                        .iter()
                        .position(|b| !b.is_ascii())
                        .unwrap_or(len - start);
                    assert_eq!(ascii_prefix_len(&bytes[start..]), expected);
                }
            }
        }
    }

    /// Text as pages have it, where whole words of eight bytes are lowered
    /// at once: words of letters of both cases, digits and punctuation,
    /// between white space of every kind in runs of one to three, at every
    /// offset from the eight-byte words, with other characters among them
    /// so that a pending space crosses into and out of ASCII runs.
    #[test]
    fn ascii_words_and_white_space_are_normalised_as_defined() {
        let pieces = [
            "Word",
            "a",
            "HTTP/1.1",
            "x-Y_z",
            "0123456789",
            "Ünïcode",
            "§",
            "ＦＵＬＬ",
            "MiXeD",
        ];
        let white = [
            " ", "\n", "\t", "\r\n", "\x0b", "\x0c", "  ", " \n ", "\t\t",
        ];
        let mut next = random_below(0x2545_F491_4F6C_DD1D);
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..next(40) {
                if next(4) == 0 {
                    text.push_str(white[next(white.len())]);
                }
                text.push_str(pieces[next(pieces.len())]);
                text.push_str(white[next(2)]);
            }
            if next(2) == 0 {
                text.push_str(white[next(white.len())]);
            }
            assert_eq!(normalize(&text), normalize_whole(&text), "{text:?}");
        }
    }

    /// Random numbers below the argument (xorshift), for random texts.
    pub(super) fn random_below(mut state: u64) -> impl FnMut(usize) -> usize {
        move |below| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        }
    }

    /// [`normalize`] as defined: NFKC of the whole text, then lower case
    /// and spaces, character by character.
    fn normalize_whole(text: &str) -> String {
        let mut out = String::new();
        let mut pending_space = false;
        for c in text.nfkc() {
            if c.is_whitespace() {
                pending_space = !out.is_empty();
                continue;
            }
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.extend(c.to_lowercase());
        }
        out
    }

    #[test]
    fn text_normalised_piece_by_piece_is_nfkc_of_the_whole() {
        // ASCII and the characters NFKC changes or joins: combining marks
        // (U+0344 decomposes into two that compose with a letter before it,
        // U+0345 has class 240), Hangul jamo that compose into syllables,
        // compatibility forms (ligature, fullwidth, `㎏`, `…`, no-break
        // space), characters NFKC leaves alone, and a four-byte character.
        let alphabet: Vec<char> = "aeuoAEUIkK Z.\t\n9"
            .chars()
            .chain([
                '\u{0300}',
                '\u{0301}',
                '\u{0308}',
                '\u{0323}',
                '\u{0344}',
                '\u{0345}',
                '\u{0327}',
                '\u{1100}',
                '\u{1161}',
                '\u{11A8}',
                '\u{AC00}',
                '\u{FB01}',
                '\u{FF21}',
                '\u{338F}',
                '\u{2026}',
                '\u{00A0}',
                '\u{212B}',
                '\u{00C5}',
                '\u{0391}',
                '\u{03A3}',
                '§',
                '中',
                '文',
                '\u{3400}',
                '\u{4DC0}',
                '\u{F900}',
                '\u{3099}',
                '\u{302A}',
                '\u{3000}',
                '\u{FF0C}',
                'か',
                '。',
                '’',
                '\u{1D400}',
                '\u{093C}',
                '\u{0915}',
            ])
            .collect();
        let mut next = random_below(0x2545_F491_4F6C_DD1D);
        for _ in 0..20_000 {
            let len = next(12);
            let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            assert_eq!(normalize(&text), normalize_whole(&text), "{text:?}");
        }
        let lines = "Ünïcödé e\u{0301}te\u{0344}  ﬁne ㎏… §1 中文\u{00A0}x";
        assert_eq!(normalize(lines), normalize_whole(lines));
    }

    #[test]
    fn char_grams_of_any_text_are_those_of_its_characters() {
        let options = SimhashOptions {
            features: Features::Chars(3),
            ..SimhashOptions::default()
        };
        for text in [
            "",
            "ab",
            "abcdef",
            "§a",
            "a§bc中文d",
            "中文",
            "ab中",
            "𝐀𝐁𝐂𝐃",
        ] {
            let chars: Vec<char> = text.chars().collect();
            let grams: Vec<u64> = match chars.len() {
                0 => vec![],
                n if n < 3 => vec![xxh3_64(text.as_bytes())],
                _ => chars
                    .windows(3)
                    .map(|w| xxh3_64(w.iter().collect::<String>().as_bytes()))
                    .collect(),
            };
            let expected = match grams.is_empty() {
                true => (0, 0),
                false => simhash_of(&grams, options.log_weights),
            };
            let mut hashes = Vec::new();
            char_gram_hashes(text, 3, &mut hashes);
            assert_eq!(hashes, grams, "{text:?}");
            let found = fingerprint_normalized(text, std::iter::empty(), &options, false);
            assert_eq!((found.simhash, found.n_features), expected, "{text:?}");
        }
    }

    /// A page with more features than a chunk holds (see [`HashChunks`])
    /// has the simhash of all its features summed at once: character grams
    /// of ASCII and of other text, words and shingles, both weightings.
    #[test]
    fn a_page_longer_than_a_chunk_has_the_simhash_of_all_its_features() {
        let vocabulary = [
            "near",
            "duplicate",
            "crawl§",
            "中文",
            "page",
            "Ünïcode",
            "x",
            "of",
        ];
        let mut x = 7u64;
        let words: Vec<&str> = (0..40_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                vocabulary[(x >> 61) as usize]
            })
            .collect();
        let mixed = words.join(" ");
        let ascii = mixed.replace(['§', '中', '文', 'Ü', 'ï'], "q");
        let hashes_of = |grams: &[String]| -> Vec<u64> {
            grams.iter().map(|g| xxh3_64(g.as_bytes())).collect()
        };
        for text in [&ascii, &mixed] {
            let normalized = normalize(text);
            let chars: Vec<char> = normalized.chars().collect();
            let char_grams: Vec<String> = chars.windows(5).map(|w| w.iter().collect()).collect();
            let words: Vec<String> = super::words(&normalized)
                .into_iter()
                .map(String::from)
                .collect();
            let shingles: Vec<String> = words.windows(3).map(|w| w.join(" ")).collect();
            for (features, grams) in [
                (Features::Chars(5), &char_grams),
                (Features::Words, &words),
                (Features::Shingles(3), &shingles),
            ] {
                assert!(grams.len() > HashChunks::LEN, "{features}");
                for log_weights in [false, true] {
                    let options = SimhashOptions {
                        features,
                        log_weights,
                        stop_words: false,
                    };
                    let whole = simhash_of(&hashes_of(grams), log_weights);
                    let found = fingerprint(text, &options);
                    assert_eq!(
                        (found.simhash, found.n_features),
                        whole,
                        "{features}, log weights {log_weights}"
                    );
                }
            }
        }
    }

    /// The grams of text with other characters than ASCII, found run by
    /// run and zone by zone, are those of its characters: on random text
    /// of ASCII and other characters sparse and dense, at every `n` from 1
    /// to 9.
    #[test]
    fn grams_of_mixed_text_are_the_windows_of_its_characters() {
        let alphabet = ['a', 'b', ' ', '§', 'é', '中', '𝐀', '\u{301}'];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..4000 {
            let len = (next() % 40) as usize;
            let other_every = 1 + (case % 12) as u64;
            let text: String = (0..len)
                .map(|_| match next() % other_every {
                    0 => alphabet[3 + (next() % 5) as usize],
                    _ => alphabet[(next() % 3) as usize],
                })
                .collect();
            let chars: Vec<char> = text.chars().collect();
            if text.is_ascii() {
                continue;
            }
            for n in 1..=9.min(chars.len()) {
                let mut expected: Vec<u64> = chars
                    .windows(n)
                    .map(|w| xxh3_64(w.iter().collect::<String>().as_bytes()))
                    .collect();
                let mut found = Vec::new();
                mixed_text_gram_hashes(&text, n, &mut found);
                expected.sort_unstable();
                found.sort_unstable();
                assert_eq!(found, expected, "{text:?}, n = {n}");
            }
        }
    }

    #[test]
    fn normalization_folds_width_case_and_spaces() {
        assert_eq!(normalize("  Ｈｅｌｌｏ\t\n WORLD  "), "hello world");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn chinese_runs_are_segmented_into_words() {
        let w = words("我们在北京大学学习 simhash 算法");
        assert!(w.contains(&"北京大学"), "{w:?}");
        assert!(w.contains(&"simhash"), "{w:?}");
        assert!(w.contains(&"算法"), "{w:?}");
        assert_eq!(words("the cat, the mat."), vec!["the", "cat", "the", "mat"]);
    }

    #[test]
    fn features_parse_and_print() {
        for s in ["script", "words", "shingles:3", "chars:4"] {
            assert_eq!(s.parse::<Features>().unwrap().to_string(), s);
        }
        assert!("shingles".parse::<Features>().is_err());
        assert!("chars:0".parse::<Features>().is_err());
        assert!("letters:2".parse::<Features>().is_err());
    }

    #[test]
    fn script_features_are_words_for_han_text_and_char_grams_otherwise() {
        let script = |rule| SimhashOptions {
            features: Features::Script(rule),
            ..Default::default()
        };
        let (han_words, long_han_words) = (
            script(ScriptRule::HanWords),
            script(ScriptRule::LongHanWords),
        );
        let words = SimhashOptions::default();
        let grams = |n| SimhashOptions {
            features: Features::Chars(n),
            log_weights: true,
            ..Default::default()
        };
        let chinese = "你妈妈喊你回家吃饭哦，回家罗回家罗 (2007)";
        let long_chinese = format!("{chinese}，今天的天气非常好，我们一起去公园散步吧。").repeat(8);
        let english = "Near-duplicate detection for web crawling, 你好 WWW 2007.";
        assert_eq!(han_majority(chinese), Some(16));
        assert!(han_majority(&long_chinese).unwrap() >= SHORT_HAN);
        let fp = |text: &str, options: &SimhashOptions| fingerprint(text, options).simhash;
        // v3 and v4: words for any text mostly of Han characters.
        assert_eq!(fp(chinese, &han_words), fp(chinese, &words));
        assert_eq!(fp(&long_chinese, &han_words), fp(&long_chinese, &words));
        // Since v5: 4-grams while it has fewer than SHORT_HAN of them.
        assert_eq!(fp(chinese, &long_han_words), fp(chinese, &grams(4)));
        assert_ne!(fp(chinese, &long_han_words), fp(chinese, &words));
        assert_eq!(
            fp(&long_chinese, &long_han_words),
            fp(&long_chinese, &words)
        );
        for rule in [&han_words, &long_han_words] {
            assert_eq!(fp(english, rule), fp(english, &grams(5)));
            assert_ne!(fp(english, rule), fp(english, &words));
        }
        // Half Han, half other letters: Han decides.
        assert_eq!(han_majority("ab 中文"), Some(2));
        assert_eq!(han_majority("abc 中文"), None);
        assert_eq!(han_majority("2007"), None);
    }

    #[test]
    fn empty_text_has_no_features() {
        let f = fingerprint(" \n ", &SimhashOptions::default());
        assert_eq!((f.simhash, f.n_features, f.n_chars), (0, 0, 0));
    }

    #[test]
    fn seed_examples_are_nearer_their_variants() {
        for features in [Features::Words, Features::Chars(2), Features::Shingles(2)] {
            let o = SimhashOptions {
                features,
                ..Default::default()
            };
            let near = distance("the cat sat on the mat", "the cat sat on a mat", &o);
            let far = distance("the cat sat on the mat", "we all scream for ice cream", &o);
            assert!(near < far, "{features}: {near} vs {far}");
            let a = "你妈妈喊你回家吃饭哦，回家罗回家罗";
            let b = "你妈妈叫你回家吃饭啦，回家罗回家罗";
            let c = "今天的天气非常好，我们一起去公园散步吧";
            let near = distance(a, b, &o);
            assert!(
                near < distance(a, c, &o) && near < distance(b, c, &o),
                "{features}"
            );
        }
    }

    /// Pins the algorithm: these values must never change, or fingerprints
    /// stored in a corpus stop matching new ones.
    #[test]
    fn golden_fingerprints() {
        let texts = GOLDEN_TEXTS;
        let options = [
            SimhashOptions::default(),
            SimhashOptions {
                features: Features::Shingles(2),
                ..Default::default()
            },
            SimhashOptions {
                features: Features::Chars(3),
                ..Default::default()
            },
            SimhashOptions {
                log_weights: true,
                stop_words: false,
                ..Default::default()
            },
            SimhashOptions {
                features: Features::Script(ScriptRule::HanWords),
                ..Default::default()
            },
            SimhashOptions {
                features: Features::Script(ScriptRule::LongHanWords),
                ..Default::default()
            },
        ];
        let got: Vec<String> = options
            .iter()
            .flat_map(|o| {
                texts
                    .iter()
                    .map(move |t| format!("{:016x}", fingerprint(t, o).simhash))
            })
            .collect();
        let expected: Vec<&str> = GOLDEN.split_whitespace().collect();
        assert_eq!(got, expected, "the simhash algorithm changed");
    }

    const GOLDEN_TEXTS: [&str; 4] = [
        "the cat sat on the mat",
        "We all scream for ice cream!",
        "你妈妈喊你回家吃饭哦，回家罗回家罗",
        "Near-duplicate detection for web crawling, WWW 2007.",
    ];

    /// Pins the sketch (scheme v7) under term-frequency words and under
    /// v7's own `script` features (log weights here): these values must
    /// never change, or stored sketches stop verifying new ones.
    #[test]
    fn golden_sketches() {
        let options = [
            SimhashOptions::default(),
            SimhashOptions {
                features: Features::Script(ScriptRule::LongHanWords),
                ..Default::default()
            },
        ];
        let mut got = Vec::new();
        for o in &options {
            for text in GOLDEN_TEXTS {
                let sketched = fingerprint_with(text, o, true);
                assert_eq!(sketched.simhash, fingerprint(text, o).simhash);
                let [a, b, c] = sketched.sketch.unwrap();
                got.push(format!("{a:016x}{b:016x}{c:016x}"));
            }
        }
        let expected: Vec<&str> = GOLDEN_SKETCHES.split_whitespace().collect();
        assert_eq!(got, expected, "the sketch changed");
    }

    /// One sketch per text, the texts in turn under each option set.
    const GOLDEN_SKETCHES: &str = "
        6596fb42acdc66aab40819254057ecae24e22727dc1b08da
        3048007448684d00105bc46a1c04df24a0c8093023672106
        1fb3406b12d13a4a6fb6fb2657e6dc837627dfc8094a281e
        ef502cb43165b2681b481151ed60ab0c7a150e9a40addb42
        6e40ee8a4046d71030403c442c80b03391c60164f75e4504
        4ef718fe156478a6578c8547ec303d239d7a0f88fa29486f
        5a48a2103f39862a804aa5b1156408a9f65c2588ea39ac04
        c49f68013f2d612103d5584d604906a78e79d78b9f8bb2d5";

    /// One line per option set, one value per text (`script` under v5
    /// differs from v3 and v4 only on the short Han text).
    /// Changing these breaks every stored corpus: only with a new algorithm version.
    const GOLDEN: &str = "
        c2d42a80139c062a 0013820ebde42f04 947134dab6f0af7c ea34cd61f7e2b81c
        c00930010a004002 b3d2c67224373366 1044409766fc6364 76c42d152113e020
        e3108b410db12c6d 502b01de9127714c 3b0ee250802455b3 53a3d1769187d81d
        cb542bc311d7346f 40238a86bff63744 9471b4fa97faaf5c ca34c941b7e2b814
        64242490a2340111 c0a2a7454571636e 947134dab6f0af7c 02182a7581455fed
        64242490a2340111 c0a2a7454571636e 30050ce6b24c4aad 02182a7581455fed";
}
