//! Simhash throughput per core, per feature option, on English and Chinese
//! text, with no I/O:
//! `cargo bench --bench fingerprint -- [MB per language] [features label]`
//! (default 20 MB, every option; a label such as `script` runs only the
//! options whose label contains it).
//!
//! The text is the real documents of `data-samples/crawl/text.wet.gz`:
//! English from Debian copyright files, Chinese from the seed write-ups,
//! each repeated to the requested size. `WET=file.wet.gz` takes another
//! WET's documents instead, such as the docs crawl of
//! `scripts/make_docs_crawl.py` (`bench-data/docs-crawl/wet/docs.wet.gz`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use neardup::fingerprint::crawl::http::HttpBodies;
use neardup::fingerprint::crawl::{warc, Record};
use neardup::fingerprint::simhash::{fingerprint, Features, ScriptRule, SimhashOptions};
use neardup::io::storage::Location;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let megabytes: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(20);
    let only = args.iter().find(|a| a.parse::<usize>().is_err());
    let sample = match std::env::var_os("WET") {
        Some(wet) => PathBuf::from(wet),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/crawl/text.wet.gz"),
    };
    let mut english = Vec::new();
    let mut chinese = Vec::new();
    warc::read(
        &Location::Local(sample),
        HttpBodies::Decoded,
        &mut |record, _| {
            if let Record::Document(doc) = record {
                let han = doc
                    .text
                    .chars()
                    .filter(|c| ('\u{4e00}'..='\u{9fff}').contains(c))
                    .count();
                if han * 10 > doc.text.chars().count() {
                    chinese.push(doc.text);
                } else {
                    english.push(doc.text);
                }
            }
            Ok(())
        },
    )
    .expect("read the crawl sample");
    let options = [
        (
            "script (default)",
            SimhashOptions {
                features: Features::Script(ScriptRule::LongHanWords),
                ..Default::default()
            },
        ),
        ("words", SimhashOptions::default()),
        (
            "words, keep stop words",
            SimhashOptions {
                stop_words: false,
                ..Default::default()
            },
        ),
        (
            "words, log weights",
            SimhashOptions {
                log_weights: true,
                ..Default::default()
            },
        ),
        (
            "shingles:3",
            SimhashOptions {
                features: Features::Shingles(3),
                ..Default::default()
            },
        ),
        (
            "chars:5",
            SimhashOptions {
                features: Features::Chars(5),
                ..Default::default()
            },
        ),
        (
            "chars:5, log weights",
            SimhashOptions {
                features: Features::Chars(5),
                log_weights: true,
                ..Default::default()
            },
        ),
    ];
    println!(
        "{:<8} {:<24} {:>10} {:>12}",
        "text", "features", "MB/s", "docs/s"
    );
    for (name, docs) in [("english", &english), ("chinese", &chinese)] {
        let bytes_per_round: usize = docs.iter().map(String::len).sum();
        let rounds = (megabytes << 20).div_ceil(bytes_per_round.max(1));
        if docs.is_empty() {
            continue;
        }
        for (label, o) in options
            .iter()
            .filter(|(label, _)| only.is_none_or(|only| label.contains(only.as_str())))
        {
            let mut sink = 0u64;
            let started = Instant::now();
            for _ in 0..rounds {
                for doc in docs {
                    sink = sink.wrapping_add(fingerprint(doc, o).simhash);
                }
            }
            let seconds = started.elapsed().as_secs_f64();
            let mb = (rounds * bytes_per_round) as f64 / 1e6;
            let n = (rounds * docs.len()) as f64;
            println!(
                "{name:<8} {label:<24} {:>10.1} {:>12.0}   ({} docs of {:.1} kB on average, checksum {sink:x})",
                mb / seconds,
                n / seconds,
                docs.len(),
                bytes_per_round as f64 / docs.len() as f64 / 1e3
            );
        }
    }
}
