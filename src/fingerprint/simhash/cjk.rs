//! Runs of CJK ideographs, kana and Hangul syllables, most of the
//! characters of Chinese, Japanese and Korean text, taken past the Unicode
//! tables every other character goes through.
//!
//! A page of Chinese text is mostly ideographs between a little
//! punctuation, one of Japanese ideographs and kana, and one of Korean
//! Hangul syllables between spaces. Each went through NFKC's quick check,
//! a lower case lookup and a white-space test (and each kana a lookup of
//! whether it is a letter), and UAX #29 made each ideograph a word of its
//! own: with jieba, most of the time of fingerprinting Chinese text.
//! For the characters below, every one of those steps is known to give the
//! character back unchanged or alone, as the tests here check for each of
//! them against the tables themselves, so they are copied as they are.

use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

/// CJK Unified Ideographs and their Extension A (U+4E00 to U+9FFF, U+3400
/// to U+4DBF): letters (`Lo`) with no case, no decomposition, combining
/// class 0, in no composition, and UAX #29's word break property Other, so
/// a word boundary comes before each and after each unless a mark follows.
/// Three bytes each in UTF-8. (The hexagram symbols between the two blocks
/// are not among them, nor the compatibility ideographs, which decompose.)
pub(crate) fn is_plain_ideograph(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF)
}

/// Hiragana and Katakana letters (U+3041 to U+3096, U+309D and U+309E,
/// U+30A1 to U+30FA, U+30FC to U+30FE: the iteration marks and the
/// prolonged sound mark among them): letters with no case, NFKC as they
/// are, class 0, never the second of a composition, three bytes each in
/// UTF-8. Unlike an ideograph, a kana may be the first of one: with a
/// voicing mark after it (か and U+3099 make が). (The digraphs ゟ and ヿ,
/// which NFKC changes, and the spacing voicing marks are not among them.)
pub(crate) fn is_plain_kana(c: char) -> bool {
    matches!(c as u32, 0x3041..=0x3096 | 0x309D..=0x309E | 0x30A1..=0x30FA | 0x30FC..=0x30FE)
}

/// Hangul syllables (U+AC00 to U+D7A3, all 11,172): letters with no case,
/// NFKC as they are (their decomposition into jamo composes back to them),
/// never the second of a composition, three bytes each in UTF-8. Like a
/// kana, a syllable may be the first of one: one without a final consonant
/// and a trailing jamo after it (가 and U+11A8 make 각).
pub(crate) fn is_hangul_syllable(c: char) -> bool {
    matches!(c as u32, 0xAC00..=0xD7A3)
}

/// A plain ideograph, kana or Hangul syllable: a caseless letter that NFKC
/// leaves as it is and that is never the second of a composition, so
/// normalisation may always be split before it.
pub(crate) fn is_stable_letter(c: char) -> bool {
    is_plain_ideograph(c) || is_plain_kana(c) || is_hangul_syllable(c)
}

/// `text` (what ASCII or nothing follows) cut into pieces in turn:
/// characters to normalise (maybe none), then a run of characters that
/// normalise to themselves (maybe none, at the end), and so on to the end.
/// NFKC may be split before a plain ideograph, kana or Hangul syllable:
/// each is stable (quick check Yes, class 0, never the second of a
/// composition). It may be split after an ideograph, never the first of a
/// composition, and after a kana or syllable that ASCII, an ideograph, a
/// kana, a syllable or nothing follows, none of which composes with it; a
/// kana or syllable that anything else follows goes with what follows.
pub(crate) fn other_then_plain_runs(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let plain = first_where(rest, true);
        let other = plain + first_where(&rest[plain..], false);
        let pieces = (&rest[..plain], &rest[plain..other]);
        rest = &rest[other..];
        Some(pieces)
    })
}

/// Where the first character of `text` that is copied as it is (or, with
/// `copied` false, that is not) begins, or the text's length.
fn first_where(text: &str, copied: bool) -> usize {
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, next)| next);
        if copied_as_it_is(c, next) == copied {
            return at;
        }
    }
    text.len()
}

/// Whether `c`, with `next` after it, normalises to itself alone.
fn copied_as_it_is(c: char, next: Option<char>) -> bool {
    let nothing_composes = || next.is_none_or(|next| next.is_ascii() || is_stable_letter(next));
    is_plain_ideograph(c) || (is_stable_letter(c) && nothing_composes())
}

/// Calls `word` with each of `text.unicode_word_indices()` in order, the
/// same words at the same places: a plain ideograph followed by ASCII, by
/// another plain ideograph or by nothing is a word of its own (a boundary
/// comes before it, and after it unless an extending mark, format
/// character or joiner follows, none of which is ASCII or an ideograph),
/// and UAX #29 segments only the stretches between such ideographs. A
/// stretch is bounded by boundaries whose neighbours, an ideograph or the
/// text's ends, no rule looks through, so it is segmented alone as it is
/// within the text.
pub(crate) fn for_each_word<'a>(text: &'a str, mut word: impl FnMut(usize, &'a str)) {
    let mut stretch = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !is_plain_ideograph(c) {
            continue;
        }
        let alone = match chars.peek() {
            None => true,
            Some(&(_, next)) => next.is_ascii() || is_plain_ideograph(next),
        };
        if !alone {
            continue;
        }
        uax29_words(text, stretch..at, &mut word);
        let end = at + c.len_utf8();
        word(at, &text[at..end]);
        stretch = end;
    }
    uax29_words(text, stretch..text.len(), &mut word);
}

/// The UAX #29 words of `text[range]`, placed in `text`.
fn uax29_words<'a>(text: &'a str, range: Range<usize>, word: &mut impl FnMut(usize, &'a str)) {
    if range.is_empty() {
        return;
    }
    for (start, found) in text[range.clone()].unicode_word_indices() {
        word(range.start + start, found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

    fn plain_ideographs() -> impl Iterator<Item = char> {
        (0x3400..=0x9FFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_plain_ideograph(c))
    }

    fn plain_kana() -> impl Iterator<Item = char> {
        (0x3000..=0x30FF)
            .filter_map(char::from_u32)
            .filter(|&c| is_plain_kana(c))
    }

    fn hangul_syllables() -> impl Iterator<Item = char> {
        (0xAC00..=0xD7FF)
            .filter_map(char::from_u32)
            .filter(|&c| is_hangul_syllable(c))
    }

    fn nfkc(text: &str) -> String {
        text.nfkc().collect()
    }

    /// Checks that each of `chars` is three bytes, a letter, not white
    /// space, its own lower case and its own NFKC; returns how many.
    fn count_caseless_stable_letters(chars: impl Iterator<Item = char>) -> usize {
        chars
            .inspect(|&c| {
                let text = c.to_string();
                assert_eq!(text.len(), 3, "{c:?}");
                assert!(c.is_alphanumeric() && !c.is_whitespace(), "{c:?}");
                assert!(c.to_lowercase().eq([c]), "{c:?}");
                assert_eq!(is_nfkc_quick(text.chars()), IsNormalized::Yes, "{c:?}");
                assert_eq!(nfkc(&text), text, "{c:?}");
            })
            .count()
    }

    #[test]
    fn every_plain_ideograph_is_a_caseless_stable_letter_and_three_bytes() {
        assert_eq!(
            count_caseless_stable_letters(plain_ideographs()),
            0x4DBF - 0x3400 + 1 + 0x9FFF - 0x4E00 + 1
        );
        assert!(!is_plain_ideograph('\u{4DC0}') && !is_plain_ideograph('\u{F900}'));
    }

    #[test]
    fn every_plain_kana_is_a_caseless_stable_letter_and_three_bytes() {
        assert_eq!(count_caseless_stable_letters(plain_kana()), 86 + 2 + 90 + 3);
        for c in ['\u{309F}', '\u{30FF}', '\u{309B}', '\u{3099}', '\u{30FB}'] {
            assert!(!is_plain_kana(c), "{c:?}");
        }
        // What the split after a kana guards against.
        assert_eq!(nfkc("\u{304B}\u{3099}"), "\u{304C}");
    }

    #[test]
    fn every_hangul_syllable_is_a_caseless_stable_letter_and_three_bytes() {
        assert_eq!(count_caseless_stable_letters(hangul_syllables()), 11_172);
        for c in ['\u{ABFF}', '\u{D7A4}', '\u{D7B0}', '\u{3131}', '\u{1100}'] {
            assert!(!is_hangul_syllable(c), "{c:?}");
        }
        // What the split after a syllable guards against: a trailing jamo
        // after a syllable without a final consonant.
        assert_eq!(nfkc("\u{AC00}\u{11A8}"), "\u{AC01}");
        assert_eq!(nfkc("\u{AC00}\u{3133}"), "\u{AC03}");
    }

    #[test]
    fn no_plain_ideograph_composes_with_what_follows_it() {
        // Only characters NFKC's quick check calls Maybe can be the second
        // of a composition; characters it calls No decompose first, into
        // anything, so those are tried against a sample of ideographs.
        let not_yes: Vec<char> = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_nfkc_quick(std::iter::once(c)) != IsNormalized::Yes)
            .collect();
        let maybe: Vec<char> = not_yes
            .iter()
            .copied()
            .filter(|&c| is_nfkc_quick(std::iter::once(c)) == IsNormalized::Maybe)
            .collect();
        assert!(maybe.contains(&'\u{0301}') && maybe.contains(&'\u{3099}'));
        let check = |c: char, m: char| {
            let pair: String = [c, m].into_iter().collect();
            assert_eq!(
                nfkc(&pair),
                format!("{c}{}", nfkc(&m.to_string())),
                "{pair:?}"
            );
        };
        for c in plain_ideographs() {
            maybe.iter().for_each(|&m| check(c, m));
        }
        for c in plain_ideographs().step_by(997) {
            not_yes.iter().for_each(|&m| check(c, m));
        }
    }

    #[test]
    fn a_plain_ideograph_is_a_word_of_its_own_beside_ascii_and_ideographs() {
        for c in plain_ideographs() {
            for (text, expected) in [
                (
                    format!("a{c}b"),
                    vec!["a".to_string(), c.to_string(), "b".into()],
                ),
                (
                    format!("1{c}.2"),
                    vec!["1".to_string(), c.to_string(), "2".into()],
                ),
                (format!("{c}{c}"), vec![c.to_string(), c.to_string()]),
                (
                    format!("x_{c}'s"),
                    vec!["x_".to_string(), c.to_string(), "s".into()],
                ),
            ] {
                let words: Vec<&str> = text.unicode_words().collect();
                assert_eq!(words, expected, "{text:?}");
            }
        }
    }

    /// Random text over characters that try UAX #29's rules and NFKC
    /// around ideographs: marks, joiners, format characters, regional
    /// indicators, kana, Hangul syllables and jamo, numbers and their
    /// separators.
    fn random_texts(count: usize) -> impl Iterator<Item = String> {
        let alphabet: Vec<char> = "ab1 .,'_:\n中文字々〇。、《》かカ한가각きゝーヴ"
            .chars()
            .chain([
                '\u{309A}',
                '\u{309B}',
                '\u{309F}',
                '\u{30FF}',
                '\u{FF76}',
                '\u{FF9E}',
                '\u{3400}',
                '\u{9FFF}',
                '\u{4DC0}',
                '\u{F900}',
                '\u{20000}',
                '\u{0301}',
                '\u{3099}',
                '\u{302A}',
                '\u{200D}',
                '\u{200B}',
                '\u{00AD}',
                '\u{FE0F}',
                '\u{1F1E8}',
                '\u{1F1F3}',
                '\u{1F600}',
                '\u{FF0C}',
                '\u{FF11}',
                '\u{3000}',
                '\u{1161}',
                '\u{1100}',
                '\u{11A8}',
                '\u{3131}',
                '\u{3133}',
                '\u{2E80}',
            ])
            .collect();
        let mut next = crate::fingerprint::simhash::tests::random_below(0x9E37_79B9_7F4A_7C15);
        (0..count).map(move |_| {
            let len = next(16);
            (0..len).map(|_| alphabet[next(alphabet.len())]).collect()
        })
    }

    #[test]
    fn the_words_are_uax29_words_on_text_that_tries_the_rules() {
        for text in random_texts(50_000) {
            let mut words = Vec::new();
            for_each_word(&text, |start, word| words.push((start, word)));
            let expected: Vec<(usize, &str)> = text.unicode_word_indices().collect();
            assert_eq!(words, expected, "{text:?}");
        }
    }

    #[test]
    fn the_runs_cut_the_text_into_pieces_that_normalise_alone_as_in_the_whole() {
        for text in random_texts(50_000) {
            let mut joined = String::new();
            let mut normalized = String::new();
            for (other, copied) in other_then_plain_runs(&text) {
                assert!(!other.chars().any(is_plain_ideograph), "{text:?}");
                assert!(copied.chars().all(is_stable_letter), "{text:?}");
                joined.push_str(other);
                joined.push_str(copied);
                normalized.push_str(&nfkc(other));
                normalized.push_str(copied);
            }
            assert_eq!(joined, text);
            assert_eq!(normalized, nfkc(&text), "{text:?}");
        }
    }
}
