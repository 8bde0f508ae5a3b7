//! Fingerprint schemes: one string naming everything that decides a page's
//! fingerprint (the algorithm's version, normalisation, features, weights,
//! stop words, which text of an HTML page). A corpus holds years of shards;
//! recording the scheme in every shard lets `match` refuse to compare
//! fingerprints made under different defaults, which would silently miss
//! near-duplicates.
//!
//! A scheme string reads `simhash64/1 norm=nfkc-lower-ws features=F
//! weights=W stopwords=S html=H`: the algorithm's version, the
//! normalisation, the features and weights (a published `script` rule is
//! written out whole, as v5's
//! `features=script(han>=200:words,han<200:chars:4,other:chars:5)`), the
//! stop words (`en+zh` or `none`) and, for shards of WARC files only, the
//! text of an HTML page: `all`, `main` (the first main-content rules),
//! `main/2` to `main/6` (the later revisions), followed by `http=decoded`
//! when HTTP response bodies were decoded (see
//! [`crate::fingerprint::crawl::http`]). Shards of text (WET, JSONL,
//! Parquet) leave both out, so text shards of two schemes that differ
//! only in them stay comparable.
//!
//! Every shard records its scheme in its Parquet key-value metadata under
//! `neardup.scheme`. Two schemes are comparable when they are the same but
//! for an `html=` that only one of them records; two HTML shards must agree
//! on it too. `match` refuses inputs whose schemes are not comparable unless
//! told to allow them. A shard without the key (another tool's, or
//! `neardup gen`'s) is "unknown" and meets any.
//!
//! The named schemes, oldest first (the last is the default). A name, once
//! published, always means the same fingerprints:
//! - `v1`: `words`, term frequency, stop words dropped, all the text of an
//!   HTML page;
//! - `v2`: `v1` with the main content of HTML pages (first rules);
//! - `v3`: `script` features (mostly-Han text `words` with term frequency,
//!   other text `chars:5` with log weights), main content by the first
//!   rules;
//! - `v4`: `v3` with the second main-content rules (`html=main/2`); its
//!   text shards are `v3`'s and meet them;
//! - `v5`: `v4` with mostly-Han texts of fewer than 200 Han characters as
//!   `chars:4` with log weights. On text without such a page its
//!   fingerprints are `v4`'s, but its scheme string differs, so its shards
//!   meet `v4`'s only when mixing is allowed;
//! - `v6`: `v5` with the third main-content rules (`html=main/3`: inside
//!   marked main content, link-dense blocks are kept); its text shards are
//!   `v5`'s and meet them;
//! - `v7`: `v6` with a sketch (`sketch=simhash192/1`, see
//!   [`crate::fingerprint::simhash::Sketch`]): 192 more bits of the same
//!   features in a `sketch` column, for `match --verify`. Its fingerprints
//!   are `v6`'s and meet them; `--no-sketch` makes `v6`;
//! - `v8`: `v7` with the fourth main-content rules (`html=main/4`: a code
//!   listing's line-number gutter is not text); its text shards are `v7`'s
//!   and meet them;
//! - `v9`: `v8` with the fifth (`html=main/5`: the features of the main
//!   content's headings weigh four times); its text shards are `v8`'s and
//!   meet them;
//! - `v10`: `v9` with HTTP bodies decoded (`html=main/5 http=decoded`): a
//!   response sent in chunks or compressed is fingerprinted on the page it
//!   carries. On every record without such codings its fingerprints are
//!   `v9`'s; its text shards are `v9`'s and meet them, its HTML shards do
//!   not meet `v9`'s.
//! - `v11`: `v10` with a WARC response's `WARC-Target-URI` written in angle
//!   brackets (`<http://…>`, as wget 1.21 writes it) taken without them for
//!   `url` and the id made of it (`uri=unbracketed`). Its fingerprints are
//!   `v10`'s; its text shards are `v10`'s and meet them, its HTML shards do
//!   not meet `v10`'s, whose ids of such pages differ.
//! - `v12`: `v11` with the sixth main-content rules (`html=main/6`: a
//!   `main` or `role="main"` element is content inside an element that
//!   only its class or id words mark as boilerplate, as Read the Docs'
//!   theme wraps its content). Its fingerprints are `v11`'s on every page
//!   without such a wrapper; its text shards are `v11`'s and meet them, its
//!   HTML shards do not meet `v11`'s.
//!
//! A named scheme (`--scheme NAME`) fixes the features, weights, HTML
//! text and HTTP decoding, so it is never combined with `--features`,
//! `--log-weights`, `--keep-stop-words` or `--html-text`; those flags keep
//! the default's HTTP decoding. The `script` features choose their own
//! weights: `--log-weights` needs other `--features`.

use anyhow::{bail, Result};

use crate::fingerprint::crawl::html::{HtmlText, MainRules, PageText};
use crate::fingerprint::crawl::http::HttpBodies;
use crate::fingerprint::crawl::TargetUri;
use crate::fingerprint::simhash::{Features, ScriptRule, SimhashOptions};
use crate::io::parquet::schemes::SKETCH_PART;

/// The version of the fingerprint algorithm itself (hash, bit rule): bumped
/// whenever a change would move a fingerprint computed with the same options.
const ALGORITHM: &str = "simhash64/1";

/// What the scheme string of an HTML shard says after its HTML mode when
/// HTTP bodies were decoded; nothing when they were not, as schemes before
/// v10 wrote none.
const HTTP_DECODED_PART: &str = " http=decoded";

/// What the scheme string of an HTML shard says last when a WARC response's
/// `WARC-Target-URI` lost wget's angle brackets (v11 on); nothing before.
const UNBRACKETED_PART: &str = " uri=unbracketed";

/// Everything that decides a page's fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheme {
    pub simhash: SimhashOptions,
    /// Which text of an HTML page (WARC responses) is fingerprinted.
    pub html: PageText,
    /// Whether each page also gets a sketch.
    pub sketch: bool,
    /// Whether HTTP response bodies (WARC responses) are decoded first.
    pub http: HttpBodies,
    /// How a WARC response's `WARC-Target-URI` becomes its `url` and id.
    pub target_uri: TargetUri,
}

const WORDS_TF_STOP_WORDS: SimhashOptions = SimhashOptions {
    features: Features::Words,
    log_weights: false,
    stop_words: true,
};

const SCRIPT_HAN_WORDS: SimhashOptions = SimhashOptions {
    features: Features::Script(ScriptRule::HanWords),
    log_weights: false,
    stop_words: true,
};

const SCRIPT_LONG_HAN_WORDS: SimhashOptions = SimhashOptions {
    features: Features::Script(ScriptRule::LongHanWords),
    ..SCRIPT_HAN_WORDS
};

/// Schemes computable by name, oldest first; the last one is the default.
/// A name, once published, always means the same fingerprints (the golden
/// tests in `simhash/mod.rs` and `crawl/html.rs` pin them).
const NAMED: &[(&str, Scheme)] = &[
    (
        "v1",
        Scheme {
            simhash: WORDS_TF_STOP_WORDS,
            html: PageText::All,
            sketch: false,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v2",
        Scheme {
            simhash: WORDS_TF_STOP_WORDS,
            html: PageText::Main(MainRules::FIRST),
            sketch: false,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v3",
        Scheme {
            simhash: SCRIPT_HAN_WORDS,
            html: PageText::Main(MainRules::FIRST),
            sketch: false,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v4",
        Scheme {
            simhash: SCRIPT_HAN_WORDS,
            html: PageText::Main(MainRules::SECOND),
            sketch: false,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v5",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::SECOND),
            sketch: false,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v6",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::THIRD),
            sketch: false,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v7",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::THIRD),
            sketch: true,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v8",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::FOURTH),
            sketch: true,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v9",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::FIFTH),
            sketch: true,
            http: HttpBodies::Raw,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v10",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::FIFTH),
            sketch: true,
            http: HttpBodies::Decoded,
            target_uri: TargetUri::AsWritten,
        },
    ),
    (
        "v11",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::FIFTH),
            sketch: true,
            http: HttpBodies::Decoded,
            target_uri: TargetUri::Unbracketed,
        },
    ),
    (
        "v12",
        Scheme {
            simhash: SCRIPT_LONG_HAN_WORDS,
            html: PageText::Main(MainRules::SIXTH),
            sketch: true,
            http: HttpBodies::Decoded,
            target_uri: TargetUri::Unbracketed,
        },
    ),
];

impl Default for Scheme {
    /// The newest named scheme.
    fn default() -> Scheme {
        NAMED[NAMED.len() - 1].1
    }
}

impl Scheme {
    /// The scheme string of a shard, as stored in its metadata. The HTML
    /// mode is part of it only for shards of HTML pages (`html_input`), so
    /// that text shards (WET, JSONL) of two schemes that differ only in it
    /// stay comparable.
    pub(crate) fn describe(&self, html_input: bool) -> String {
        let options = &self.simhash;
        // A published rule's string is written out whole, as its
        // fingerprints are fixed: nothing it is made of may change it.
        let (features, weights) = match options.features {
            Features::Script(ScriptRule::HanWords) => (
                "script(han:words,other:chars:5)".to_string(),
                "script(han:tf,other:log-tf)",
            ),
            Features::Script(ScriptRule::LongHanWords) => (
                "script(han>=200:words,han<200:chars:4,other:chars:5)".to_string(),
                "script(han>=200:tf,han<200:log-tf,other:log-tf)",
            ),
            other if options.log_weights => (other.to_string(), "log-tf"),
            other => (other.to_string(), "tf"),
        };
        let stop_words = match options.stop_words {
            true => "en+zh",
            false => "none",
        };
        let mut scheme = format!(
            "{ALGORITHM} norm=nfkc-lower-ws features={features} weights={weights} stopwords={stop_words}"
        );
        if self.sketch {
            scheme.push_str(SKETCH_PART);
        }
        if html_input {
            scheme.push_str(&format!(" html={}", self.html));
            if self.http == HttpBodies::Decoded {
                scheme.push_str(HTTP_DECODED_PART);
            }
            if self.target_uri == TargetUri::Unbracketed {
                scheme.push_str(UNBRACKETED_PART);
            }
        }
        scheme
    }

    /// The scheme as the flags that choose it: `--scheme NAME` for a named
    /// one (with `--no-sketch` for one without its sketch), else the flags
    /// that differ from the default's. Processes that must fingerprint
    /// alike show it when they differ.
    pub(crate) fn as_flags(&self) -> String {
        let with_sketch = Scheme {
            sketch: true,
            ..*self
        };
        match (self.name(), with_sketch.name()) {
            (Some(name), _) => return format!("--scheme {name}"),
            (None, Some(name)) => return format!("--scheme {name} --no-sketch"),
            (None, None) => {}
        }
        let (options, default) = (&self.simhash, Scheme::default());
        let mut flags = Vec::new();
        if options.features != default.simhash.features {
            flags.push(format!("--features {}", options.features));
        }
        if options.log_weights {
            flags.push("--log-weights".to_string());
        }
        if !options.stop_words {
            flags.push("--keep-stop-words".to_string());
        }
        if self.html != default.html {
            let text = match self.html {
                PageText::All => HtmlText::All,
                PageText::Main(_) => HtmlText::Main,
            };
            flags.push(format!("--html-text {text}"));
        }
        if !self.sketch {
            flags.push("--no-sketch".to_string());
        }
        flags.join(" ")
    }

    /// The scheme's name, when it has one.
    pub(crate) fn name(&self) -> Option<&'static str> {
        NAMED
            .iter()
            .find(|(_, named)| named == self)
            .map(|&(name, _)| name)
    }

    /// A named scheme.
    pub fn named(name: &str) -> Result<Scheme> {
        match NAMED.iter().find(|(n, _)| *n == name) {
            Some(&(_, scheme)) => Ok(scheme),
            None => {
                let names: Vec<&str> = NAMED.iter().map(|&(n, _)| n).collect();
                bail!(
                    "--scheme {name}: no such scheme (known: {})",
                    names.join(", ")
                )
            }
        }
    }

    /// The scheme from the flags of `fingerprint` (or a job spec's
    /// `[fingerprint]`): a named scheme, or its parts one by one (the
    /// default scheme's where not given), but not both; `no_sketch` drops
    /// the sketch from either.
    pub(crate) fn from_flags(
        scheme: Option<&str>,
        features: Option<&str>,
        log_weights: bool,
        keep_stop_words: bool,
        html: Option<HtmlText>,
        no_sketch: bool,
    ) -> Result<Scheme> {
        let scheme = Scheme::from_parts(scheme, features, log_weights, keep_stop_words, html)?;
        Ok(Scheme {
            sketch: scheme.sketch && !no_sketch,
            ..scheme
        })
    }

    fn from_parts(
        scheme: Option<&str>,
        features: Option<&str>,
        log_weights: bool,
        keep_stop_words: bool,
        html: Option<HtmlText>,
    ) -> Result<Scheme> {
        if let Some(name) = scheme {
            if features.is_some() || log_weights || keep_stop_words || html.is_some() {
                bail!("--scheme {name} fixes the features, weights and HTML text: drop --features, --log-weights, --keep-stop-words and --html-text");
            }
            return Scheme::named(name);
        }
        let default = Scheme::default();
        let features = match features {
            Some(features) => features.parse()?,
            None => default.simhash.features,
        };
        if matches!(features, Features::Script(_)) && log_weights {
            bail!("--log-weights: the `script` features (the default) choose their own weights; give --features too (e.g. --features words --log-weights)");
        }
        Ok(Scheme {
            simhash: SimhashOptions {
                features,
                log_weights,
                stop_words: !keep_stop_words,
            },
            html: html.map_or(default.html, PageText::from),
            sketch: default.sketch,
            http: default.http,
            target_uri: default.target_uri,
        })
    }

    /// The scheme a shard's scheme string describes (as
    /// [`Scheme::describe`] wrote it): a named one, or one the flags of
    /// `fingerprint` can make, with n-grams up to 32. For a shard of text
    /// (no `html=` part) the HTML mode is the default's: no text of it
    /// depends on it.
    pub(crate) fn from_description(description: &str) -> Option<Scheme> {
        if let Some((before, after)) = description.split_once(SKETCH_PART) {
            let scheme = Scheme::from_description(&format!("{before}{after}"))?;
            return Some(Scheme {
                sketch: true,
                ..scheme
            });
        }
        let html_modes = [
            PageText::All,
            PageText::Main(MainRules::FIRST),
            PageText::Main(MainRules::SECOND),
            PageText::Main(MainRules::THIRD),
            PageText::Main(MainRules::FOURTH),
            PageText::Main(MainRules::FIFTH),
            PageText::Main(MainRules::SIXTH),
        ];
        let features = [
            Features::Words,
            Features::Script(ScriptRule::HanWords),
            Features::Script(ScriptRule::LongHanWords),
        ]
        .into_iter()
        .chain((1..=32).flat_map(|n| [Features::Chars(n), Features::Shingles(n)]));
        let named = NAMED.iter().map(|&(_, scheme)| scheme);
        let flagged = features.flat_map(|features| {
            [(false, false), (false, true), (true, false), (true, true)].map(
                |(log_weights, stop_words)| SimhashOptions {
                    features,
                    log_weights,
                    stop_words,
                },
            )
        });
        named
            .filter(|scheme| !scheme.sketch)
            .chain(flagged.flat_map(|simhash| {
                html_modes.into_iter().flat_map(move |html| {
                    let bodies = [HttpBodies::Raw, HttpBodies::Decoded];
                    let uris = [TargetUri::AsWritten, TargetUri::Unbracketed];
                    bodies.into_iter().flat_map(move |http| {
                        uris.map(|target_uri| Scheme {
                            simhash,
                            html,
                            sketch: false,
                            http,
                            target_uri,
                        })
                    })
                })
            }))
            .find_map(|scheme| {
                let html = scheme.describe(true) == description;
                let text = scheme.describe(false) == description;
                match (html, text) {
                    (true, _) => Some(scheme),
                    (false, true) => Some(Scheme {
                        html: Scheme::default().html,
                        http: Scheme::default().http,
                        target_uri: Scheme::default().target_uri,
                        ..scheme
                    }),
                    _ => None,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scheme shows as the flags that choose it: a named one by its
    /// name, one of flags by those that differ from the default.
    #[test]
    fn a_scheme_shows_as_its_flags() {
        let flags = |scheme: Option<&str>, features: Option<&str>, keep: bool, no_sketch: bool| {
            Scheme::from_flags(scheme, features, false, keep, None, no_sketch)
                .unwrap()
                .as_flags()
        };
        assert_eq!(flags(None, None, false, false), "--scheme v12");
        assert_eq!(flags(Some("v7"), None, false, false), "--scheme v7");
        assert_eq!(
            flags(Some("v11"), None, false, true),
            "--scheme v11 --no-sketch"
        );
        assert_eq!(
            flags(None, Some("words"), true, true),
            "--features words --keep-stop-words --no-sketch"
        );
    }
    use crate::io::parquet::schemes::comparable;

    #[test]
    fn a_scheme_is_found_again_from_its_description() {
        for (_, scheme) in NAMED {
            let found = Scheme::from_description(&scheme.describe(true));
            assert_eq!(found, Some(*scheme));
            let text = Scheme::from_description(&scheme.describe(false)).unwrap();
            assert_eq!(text.simhash, scheme.simhash);
        }
        let flagged = Scheme::from_flags(
            None,
            Some("shingles:3"),
            true,
            true,
            Some(HtmlText::All),
            false,
        );
        let flagged = flagged.unwrap();
        assert_eq!(
            Scheme::from_description(&flagged.describe(true)),
            Some(flagged)
        );
        let raw = Scheme {
            http: HttpBodies::Raw,
            ..flagged
        };
        assert_eq!(Scheme::from_description(&raw.describe(true)), Some(raw));
        assert_eq!(
            Scheme::from_description("simhash64/9 features=unknown"),
            None
        );
    }

    #[test]
    fn the_default_is_the_last_named_scheme() {
        let (name, scheme) = NAMED[NAMED.len() - 1];
        assert_eq!(scheme, Scheme::default());
        assert_eq!(Scheme::default().name(), Some(name));
        assert_eq!(name, "v12");
    }

    #[test]
    fn published_schemes_are_pinned() {
        let v1 = Scheme::named("v1").unwrap();
        let v2 = Scheme::named("v2").unwrap();
        let text = "simhash64/1 norm=nfkc-lower-ws features=words weights=tf stopwords=en+zh";
        assert_eq!(v1.describe(false), text);
        assert_eq!(v2.describe(false), text);
        assert_eq!(v1.describe(true), format!("{text} html=all"));
        assert_eq!(v2.describe(true), format!("{text} html=main"));
        let v3 = Scheme::named("v3").unwrap();
        let text = "simhash64/1 norm=nfkc-lower-ws features=script(han:words,other:chars:5) weights=script(han:tf,other:log-tf) stopwords=en+zh";
        assert_eq!(v3.describe(false), text);
        assert_eq!(v3.describe(true), format!("{text} html=main"));
        // v4 changed only the main-content rules: the same text shards, other
        // HTML shards.
        let v4 = Scheme::named("v4").unwrap();
        assert_eq!(v4.describe(false), text);
        assert_eq!(v4.describe(true), format!("{text} html=main/2"));
        // v5 changed short Han texts: other text shards, other HTML shards.
        let v5 = Scheme::named("v5").unwrap();
        let text = "simhash64/1 norm=nfkc-lower-ws features=script(han>=200:words,han<200:chars:4,other:chars:5) weights=script(han>=200:tf,han<200:log-tf,other:log-tf) stopwords=en+zh";
        assert_eq!(v5.describe(false), text);
        assert_eq!(v5.describe(true), format!("{text} html=main/2"));
        assert!(!comparable(&v4.describe(false), &v5.describe(false)));
        // v6 changed only the main-content rules.
        let v6 = Scheme::named("v6").unwrap();
        assert_eq!(v6.describe(false), text);
        assert_eq!(v6.describe(true), format!("{text} html=main/3"));
        assert!(comparable(&v5.describe(false), &v6.describe(true)));
        assert!(!comparable(&v5.describe(true), &v6.describe(true)));
        // v7 added the sketch: v6's fingerprints, so its shards meet v6's.
        let v7 = Scheme::named("v7").unwrap();
        let sketched = format!("{text} sketch=simhash192/1");
        assert_eq!(v7.describe(false), sketched);
        assert_eq!(v7.describe(true), format!("{sketched} html=main/3"));
        assert!(comparable(&v6.describe(true), &v7.describe(true)));
        assert!(comparable(&v6.describe(false), &v7.describe(true)));
        assert!(!comparable(&v5.describe(true), &v7.describe(true)));
        // v8 changed only the main-content rules.
        let v8 = Scheme::named("v8").unwrap();
        assert_eq!(v8.describe(false), sketched);
        assert_eq!(v8.describe(true), format!("{sketched} html=main/4"));
        assert!(comparable(&v7.describe(false), &v8.describe(true)));
        assert!(!comparable(&v7.describe(true), &v8.describe(true)));
        // v9 too (headings weigh more).
        let v9 = Scheme::named("v9").unwrap();
        assert_eq!(v9.describe(false), sketched);
        assert_eq!(v9.describe(true), format!("{sketched} html=main/5"));
        assert!(comparable(&v8.describe(false), &v9.describe(true)));
        assert!(!comparable(&v8.describe(true), &v9.describe(true)));
        // v10 decodes HTTP bodies: v9's text shards, other HTML shards.
        let v10 = Scheme::named("v10").unwrap();
        assert_eq!(v10.describe(false), sketched);
        assert_eq!(
            v10.describe(true),
            format!("{sketched} html=main/5 http=decoded")
        );
        assert!(comparable(&v9.describe(false), &v10.describe(true)));
        assert!(comparable(&v9.describe(true), &v10.describe(false)));
        assert!(!comparable(&v9.describe(true), &v10.describe(true)));
        assert_eq!((v9.http, v10.http), (HttpBodies::Raw, HttpBodies::Decoded));
        assert_eq!(
            Scheme {
                http: v9.http,
                ..v10
            },
            v9
        );
        // v11 takes wget's bracketed target URIs without the brackets:
        // v10's text shards, other HTML shards (their ids differ).
        let v11 = Scheme::named("v11").unwrap();
        assert_eq!(v11.describe(false), sketched);
        assert_eq!(
            v11.describe(true),
            format!("{sketched} html=main/5 http=decoded uri=unbracketed")
        );
        assert!(comparable(&v10.describe(false), &v11.describe(true)));
        assert!(!comparable(&v10.describe(true), &v11.describe(true)));
        let as_written = TargetUri::AsWritten;
        assert_eq!(
            Scheme {
                target_uri: as_written,
                ..v11
            },
            v10
        );
        // v12 changed only the main-content rules.
        let v12 = Scheme::named("v12").unwrap();
        assert_eq!(v12.describe(false), sketched);
        assert_eq!(
            v12.describe(true),
            format!("{sketched} html=main/6 http=decoded uri=unbracketed")
        );
        assert!(comparable(&v11.describe(false), &v12.describe(true)));
        assert!(!comparable(&v11.describe(true), &v12.describe(true)));
        assert_eq!(
            Scheme {
                html: PageText::Main(MainRules::FIFTH),
                ..v12
            },
            v11
        );
        let no_sketch = Scheme::from_flags(None, None, false, false, None, true).unwrap();
        assert_eq!(
            no_sketch.describe(true),
            format!("{text} html=main/6 http=decoded uri=unbracketed")
        );
        assert_eq!(no_sketch.name(), None);
        // Before v10 no scheme decoded HTTP bodies, nor said so.
        let before = |named: &'static str| NAMED.iter().take_while(move |(name, _)| *name != named);
        for (name, scheme) in before("v10") {
            assert_eq!(scheme.http, HttpBodies::Raw, "{name}");
            assert!(!scheme.describe(true).contains("http="), "{name}");
        }
        // Before v11 none took a target URI but as written.
        for (name, scheme) in before("v11") {
            assert_eq!(scheme.target_uri, as_written, "{name}");
            assert!(!scheme.describe(true).contains("uri="), "{name}");
        }
    }

    #[test]
    fn html_shards_of_v3_and_v4_are_not_compared_but_their_text_shards_are() {
        let (v3, v4) = (Scheme::named("v3").unwrap(), Scheme::named("v4").unwrap());
        assert!(!comparable(&v3.describe(true), &v4.describe(true)));
        assert!(comparable(&v3.describe(false), &v4.describe(true)));
        assert!(comparable(&v3.describe(true), &v4.describe(false)));
        // `--html-text main` means the current rules: the default's.
        let from = Scheme::from_flags;
        let flags = from(None, None, false, false, Some(HtmlText::Main), false).unwrap();
        assert_eq!(flags, Scheme::default());
        assert_eq!(flags.name(), Some("v12"));
    }

    #[test]
    fn every_option_shows_in_the_scheme() {
        let base = Scheme::named("v2").unwrap();
        let variants = [
            SimhashOptions {
                features: Features::Chars(4),
                ..base.simhash
            },
            SimhashOptions {
                features: Features::Script(ScriptRule::HanWords),
                ..base.simhash
            },
            SimhashOptions {
                features: Features::Script(ScriptRule::LongHanWords),
                ..base.simhash
            },
            SimhashOptions {
                log_weights: true,
                ..base.simhash
            },
            SimhashOptions {
                stop_words: false,
                ..base.simhash
            },
        ];
        for simhash in variants {
            let variant = Scheme { simhash, ..base };
            assert_ne!(variant.describe(false), base.describe(false));
        }
    }

    #[test]
    fn a_scheme_and_its_parts_are_not_given_together() {
        let from = |scheme, features, log, keep, html| {
            Scheme::from_flags(scheme, features, log, keep, html, false)
        };
        let error = from(Some("v1"), Some("chars:4"), false, false, None).unwrap_err();
        assert!(error.to_string().contains("--scheme v1"), "{error}");
        let error = from(Some("v1"), None, false, false, Some(HtmlText::All)).unwrap_err();
        assert!(error.to_string().contains("--html-text"), "{error}");
        let error = from(Some("v13"), None, false, false, None).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("known: v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12)"),
            "{error}"
        );
        let error = from(None, None, true, false, None).unwrap_err();
        assert!(error.to_string().contains("--features too"), "{error}");
        let scheme = from(None, None, false, true, None).unwrap();
        assert_eq!(
            scheme.simhash.features,
            Features::Script(ScriptRule::LongHanWords)
        );
        assert!(!scheme.simhash.stop_words);
        let scheme = from(None, Some("shingles:2"), true, false, Some(HtmlText::All)).unwrap();
        assert_eq!(scheme.simhash.features, Features::Shingles(2));
        assert!(scheme.simhash.log_weights && scheme.simhash.stop_words);
        assert_eq!(scheme.html, PageText::All);
    }
}
