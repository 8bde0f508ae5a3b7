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

/// The features of `text` under `options`, from the same normalisation
/// and segmentation as [`super::fingerprint`].
pub(crate) fn feature_list(text: &str, options: &SimhashOptions) -> FeatureList {
    let mut normalized = String::new();
    normalize_into(text, &mut normalized);
    let text = normalized.as_str();
    let options = options.for_text(text);
    let mut counts: HashMap<String, u32> = HashMap::new();
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
    let mut counts: Vec<(String, u32)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    FeatureList {
        counts,
        log_weights: options.log_weights,
        features: options.features,
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
    /// occurs, through the same sums as the fingerprint's.
    fn simhash_of_list(list: &FeatureList) -> u64 {
        let hashes: Vec<u64> = list
            .counts
            .iter()
            .flat_map(|(feature, count)| {
                std::iter::repeat_n(hash_feature(feature), *count as usize)
            })
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
            for options in &options {
                let list = feature_list(text, options);
                let expected = fingerprint(text, options);
                let n: u32 = list.counts.iter().map(|(_, count)| count).sum();
                assert_eq!(
                    simhash_of_list(&list),
                    expected.simhash,
                    "{text:?} {options:?}"
                );
                assert_eq!(n, expected.n_features, "{text:?} {options:?}");
            }
        }
    }
}
