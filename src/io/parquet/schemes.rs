//! The scheme strings fingerprint shards record (under
//! [`super::METADATA_KEY`]), and whether shards of two schemes may be
//! matched: what `match` checks before it reads a row.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

/// The part of a scheme string that says its shards hold a sketch (the
/// fingerprint's `Scheme` writes it; the sketch does not change the
/// fingerprints, so [`comparable`] looks past it).
pub(crate) const SKETCH_PART: &str = " sketch=simhash192/1";

/// Where a scheme string gives its HTML mode: shards of HTML pages only.
const HTML_PART: &str = " html=";

/// Whether shards of `scheme` were made from HTML pages.
pub(crate) fn records_html(scheme: &str) -> bool {
    scheme.contains(HTML_PART)
}

/// A fingerprint file and the scheme its metadata records (`None`: made by
/// another tool, "unknown", accepted with any).
pub(crate) struct SchemeOf {
    pub(crate) side: &'static str,
    pub(crate) path: String,
    pub(crate) scheme: Option<String>,
}

/// The schemes of `match`'s inputs, and whether any two are not
/// [`comparable`]: an error unless `allow_mixed`, naming a file of each
/// (one of B and one of F when they are where the difference is).
pub(crate) fn check_same(files: &[SchemeOf], allow_mixed: bool) -> Result<(Vec<String>, bool)> {
    let mut first: BTreeMap<&str, &SchemeOf> = BTreeMap::new();
    for file in files {
        if let Some(scheme) = &file.scheme {
            first.entry(scheme.as_str()).or_insert(file);
        }
    }
    let schemes: Vec<&str> = first.keys().copied().collect();
    let mixed = schemes
        .iter()
        .enumerate()
        .any(|(i, a)| schemes[i + 1..].iter().any(|b| !comparable(a, b)));
    if mixed && !allow_mixed {
        let (a, b) = differing_pair(files);
        bail!(
            "fingerprint schemes differ: {} ({}) has `{}`, {} ({}) has `{}`; fingerprints made differently are not comparable (re-fingerprint one side, e.g. with --scheme NAME, or pass --allow-mixed-schemes)",
            a.path,
            a.side,
            a.scheme.as_deref().unwrap_or_default(),
            b.path,
            b.side,
            b.scheme.as_deref().unwrap_or_default(),
        );
    }
    Ok((schemes.into_iter().map(str::to_string).collect(), mixed))
}

/// Whether fingerprints of two scheme strings may be compared: the same
/// but for the HTML mode, which only shards of HTML pages record (it says
/// which text of a page was fingerprinted, and text without HTML has only
/// one). A shard of text (WET, JSONL) meets an HTML shard of the same
/// scheme; two HTML shards must agree on it too.
pub(crate) fn comparable(a: &str, b: &str) -> bool {
    let split = |scheme: &str| {
        let scheme = scheme.replace(SKETCH_PART, "");
        match scheme.rsplit_once(HTML_PART) {
            Some((base, html)) => (base.to_string(), Some(html.to_string())),
            None => (scheme, None),
        }
    };
    let ((base_a, html_a), (base_b, html_b)) = (split(a), split(b));
    base_a == base_b && (html_a.is_none() || html_b.is_none() || html_a == html_b)
}

/// Two files with known schemes that are not comparable, preferring one of
/// each side.
fn differing_pair(files: &[SchemeOf]) -> (&SchemeOf, &SchemeOf) {
    let known: Vec<&SchemeOf> = files.iter().filter(|f| f.scheme.is_some()).collect();
    let differ = |a: &SchemeOf, b: &SchemeOf| {
        !comparable(
            a.scheme.as_deref().unwrap_or_default(),
            b.scheme.as_deref().unwrap_or_default(),
        )
    };
    let across = known.iter().find_map(|a| {
        known
            .iter()
            .find(|b| b.side != a.side && differ(a, b))
            .map(|b| (*a, *b))
    });
    across.unwrap_or_else(|| {
        let a = known[0];
        let b = known.iter().find(|b| differ(a, b)).copied().unwrap_or(a);
        (a, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_schemes_are_refused_naming_a_file_of_each_side() {
        let file = |side, path: &'static str, scheme: Option<&str>| SchemeOf {
            side,
            path: path.to_string(),
            scheme: scheme.map(str::to_string),
        };
        let files = [
            file("B", "b0", Some("s1")),
            file("B", "b1", None),
            file("F", "f0", Some("s1")),
            file("F", "f1", Some("s2")),
        ];
        let error = check_same(&files, false).unwrap_err().to_string();
        assert!(error.contains("b0 (B) has `s1`"), "{error}");
        assert!(error.contains("f1 (F) has `s2`"), "{error}");
        let same = |files| check_same(files, false).unwrap();
        assert_eq!(
            check_same(&files, true).unwrap(),
            (vec!["s1".into(), "s2".into()], true)
        );
        assert_eq!(same(&files[..3]), (vec!["s1".into()], false));
        // A text shard meets an HTML shard of its scheme; two HTML shards
        // must agree on the HTML mode.
        let text_and_html = [
            file("B", "wet", Some("s1")),
            file("B", "warc", Some("s1 html=main")),
            file("F", "old", Some("s1 html=main")),
        ];
        assert_eq!(same(&text_and_html).0.len(), 2);
        assert!(!same(&text_and_html).1);
        let modes = [
            file("B", "warc", Some("s1 html=main")),
            file("F", "wet", Some("s1")),
            file("F", "old", Some("s1 html=all")),
        ];
        let error = check_same(&modes, false).unwrap_err().to_string();
        assert!(error.contains("warc (B) has `s1 html=main`"), "{error}");
        assert!(error.contains("old (F) has `s1 html=all`"), "{error}");
        let unknown = [file("B", "b", None), file("F", "f", None)];
        assert!(same(&unknown).0.is_empty());
    }
}
