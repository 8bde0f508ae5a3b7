//! Segmentation: UAX #29 words, Han runs by jieba's dictionary, and the
//! stop words left out of word features.

use super::*;

/// The words of normalised text: UAX #29 words (runs of letters, digits and
/// joiners; punctuation and spaces dropped), with each run of Han characters
/// replaced by jieba's segmentation of it (UAX #29 would make every Han
/// character a word of its own).
pub(crate) fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut han_run: Option<(usize, usize)> = None;
    for_each_word(text, |start, word| {
        if word.chars().all(is_han) {
            han_run = match han_run {
                Some((s, e)) if e == start => Some((s, start + word.len())),
                Some((s, e)) => {
                    push_han(&text[s..e], &mut out);
                    Some((start, start + word.len()))
                }
                None => Some((start, start + word.len())),
            };
            return;
        }
        if let Some((s, e)) = han_run.take() {
            push_han(&text[s..e], &mut out);
        }
        out.push(word);
    });
    if let Some((s, e)) = han_run {
        push_han(&text[s..e], &mut out);
    }
    out
}

pub(super) fn push_han<'a>(run: &'a str, out: &mut Vec<&'a str>) {
    // No HMM: only dictionary words, so the segmentation of a text never
    // depends on a statistical model's guesses for unknown words.
    out.extend(han_dictionary().cut(run, false).into_iter().map(|t| t.word));
}

/// jieba's dictionary, built once per process.
pub(super) fn han_dictionary() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Builds jieba's dictionary on a thread of its own if `options` may
/// segment Han text, so that the first Han page does not stall the worker
/// it falls to: a build on first use leaves the other workers without work,
/// or the shard waiting for the batches the building worker holds.
pub(crate) fn prepare_han_segmentation(options: &SimhashOptions) {
    if matches!(options.features, Features::Chars(_)) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("neardup:jieba".into())
        .spawn(|| {
            han_dictionary();
        });
    if let Err(error) = spawned {
        tracing::debug!("jieba's dictionary will be built when first needed: {error}");
    }
}

pub(super) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F | 0x30000..=0x3134F)
}

/// Common English and Chinese function words.
pub(super) const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "he",
    "her", "his", "i", "in", "is", "it", "its", "of", "on", "or", "our", "she", "that", "the",
    "their", "them", "they", "this", "to", "was", "we", "were", "which", "will", "with", "you",
    "your", "的", "了", "是", "在", "和", "也", "有", "就", "都", "而", "及", "与", "着", "或",
    "一个", "我们", "你", "我", "他", "她", "它", "这", "那", "之",
];

/// Bytes in the longest stop word: a longer word (most of a page's words)
/// is told apart by its length alone, without hashing it.
pub(super) const LONGEST_STOP_WORD: usize = 6;

pub(super) fn is_stop_word(word: &str) -> bool {
    static SET: OnceLock<FxHashSet<&'static str>> = OnceLock::new();
    word.len() <= LONGEST_STOP_WORD
        && SET
            .get_or_init(|| STOP_WORDS.iter().copied().collect())
            .contains(word)
}
