//! The features of one text, as strings with their counts: what
//! `neardup explain` shows. [`super::fingerprint`] computes the same
//! fingerprint from hashes alone, without a map or a string per feature;
//! the tests check that the two agree.

use std::collections::HashMap;

use super::*;

/// The features a text is fingerprinted with, each with its count.
pub(crate) struct FeatureList {
    /// Distinct features and how often each occurs, most frequent first.
    pub(crate) counts: Vec<(String, u32)>,
    /// The distinct features of the text's headings, each with its count
    /// in the text: each adds further features of its own, as often
    /// ([`super::heading_copies`]).
    pub(crate) heading_counts: Vec<(String, u32)>,
    /// Whether weights are `1 + ln(count)` rather than the count.
    pub(crate) log_weights: bool,
    /// The features as chosen for this text (a script rule resolved).
    pub(crate) features: Features,
}

impl FeatureList {
    /// The weight a feature of `count` occurrences adds to its bits.
    pub(crate) fn weight(&self, count: u32) -> f64 {
        match (count, self.log_weights) {
            (0, _) => 0.0,
            (count, true) => 1.0 + f64::from(count).ln(),
            (count, false) => f64::from(count),
        }
    }
}

/// The features of `text` and of its `headings` (byte ranges) under
/// `options`, from the same normalisation and segmentation as
/// [`super::fingerprint_page`].
pub(crate) fn feature_list(
    text: &str,
    headings: &[Range<usize>],
    options: &SimhashOptions,
) -> FeatureList {
    let mut normalized = String::new();
    normalize_into(text, &mut normalized);
    let options = options.for_text(&normalized);
    let mut counts: HashMap<String, u32> = HashMap::new();
    count_features(&normalized, &options, &mut counts);
    let mut heading_features: HashMap<String, u32> = HashMap::new();
    for heading in headings.iter().filter_map(|range| text.get(range.clone())) {
        normalize_into(heading, &mut normalized);
        count_features(&normalized, &options, &mut heading_features);
    }
    let heading_counts: HashMap<String, u32> = heading_features
        .into_keys()
        .filter_map(|feature| {
            let count = *counts.get(&feature)?;
            Some((feature, count))
        })
        .collect();
    FeatureList {
        counts: most_frequent_first(counts),
        heading_counts: most_frequent_first(heading_counts),
        log_weights: options.log_weights,
        features: options.features,
    }
}

fn most_frequent_first(counts: HashMap<String, u32>) -> Vec<(String, u32)> {
    let mut counts: Vec<(String, u32)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

/// Counts the features of a normalised `text` under `options` (whose
/// features are chosen for the page) into `counts`.
fn count_features(text: &str, options: &SimhashOptions, counts: &mut HashMap<String, u32>) {
    let mut add = |feature: &str| *counts.entry(feature.to_string()).or_default() += 1;
    match options.features {
        Features::Chars(n) => {
            let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
            match starts.len() {
                0 => {}
                len if len < n => add(text),
                len => (0..=len - n).for_each(|i| {
                    let end = starts.get(i + n).copied().unwrap_or(text.len());
                    add(&text[starts[i]..end]);
                }),
            }
        }
        Features::Words | Features::Shingles(_) | Features::Script(_) => {
            let mut words = words(text);
            if options.stop_words {
                words.retain(|w| !is_stop_word(w));
            }
            match options.features {
                Features::Shingles(n) => words.windows(n).for_each(|gram| add(&gram.join(" "))),
                _ => words.iter().for_each(|word| add(word)),
            }
        }
    }
}

/// The 64-bit hash of a feature, as the fingerprint takes it.
pub(crate) fn hash_feature(feature: &str) -> u64 {
    feature_hash(feature.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::scheme::Scheme;

    /// The fingerprint of a listing: every feature's hash, as often as it
    /// occurs, and every heading feature's further hashes as often,
    /// through the same sums as the fingerprint's.
    fn simhash_of_list(list: &FeatureList) -> u64 {
        let copies = list.heading_counts.iter().flat_map(|(feature, count)| {
            heading_copies(hash_feature(feature))
                .flat_map(move |copy| std::iter::repeat_n(copy, *count as usize))
        });
        let hashes: Vec<u64> = list
            .counts
            .iter()
            .flat_map(|(feature, count)| {
                std::iter::repeat_n(hash_feature(feature), *count as usize)
            })
            .chain(copies)
            .collect();
        match hashes.len() {
            0 => 0,
            _ => simhash_of(&hashes, list.log_weights).0,
        }
    }

    #[test]
    fn the_listed_features_make_the_fingerprint() {
        let texts = [
            "",
            "abc",
            "The quick brown fox jumps over the lazy dog, and the dog sleeps.",
            "Ünïcödé  text with\tspaces and ’curly’ quotes § 42",
            "我们今天去公园散步，天气很好，我们很开心。",
            "中文 mixed with English words and 中文 again",
        ];
        let options = [
            Scheme::named("v1").unwrap().simhash,
            Scheme::named("v4").unwrap().simhash,
            Scheme::named("v5").unwrap().simhash,
            SimhashOptions {
                features: Features::Shingles(2),
                log_weights: true,
                stop_words: false,
            },
            SimhashOptions {
                features: Features::Chars(3),
                log_weights: false,
                stop_words: true,
            },
        ];
        for text in texts {
            // The whole text and its first word as headings, and none.
            let first_word = 0..text.find(' ').unwrap_or(text.len());
            for headings in [vec![], vec![0..text.len(), first_word]] {
                for options in &options {
                    check_listing(text, &headings, options);
                }
            }
        }
    }

    fn check_listing(text: &str, headings: &[Range<usize>], options: &SimhashOptions) {
        let list = feature_list(text, headings, options);
        let expected = fingerprint_page(text, headings, options, false);
        let n: u32 = list.counts.iter().map(|(_, count)| count).sum();
        let context = format!("{text:?} {headings:?} {options:?}");
        assert_eq!(simhash_of_list(&list), expected.simhash, "{context}");
        assert_eq!(n, expected.n_features, "{context}");
    }
}
