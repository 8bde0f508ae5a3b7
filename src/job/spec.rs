//! A job spec as written in TOML (`neardup run JOB.toml`): a table a
//! stage, and `[runtime]`; unknown keys are errors. [`super::load`] turns it
//! into each stage's options.

use serde::Deserialize;

use crate::cluster::drop_policy::DropPolicy;
use crate::exec::runtime::default_workers;
use crate::fingerprint::crawl::html::HtmlText;
use crate::fingerprint::crawl::Format;
use crate::fingerprint::scheme::Scheme;
use crate::matching::kernel::Kernel;

/// A job spec as written in TOML. Unknown keys are errors.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobSpec {
    #[serde(default)]
    pub(crate) runtime: RuntimeSpec,
    pub(crate) fingerprint: Option<FingerprintSpec>,
    #[serde(rename = "match")]
    pub(crate) match_: MatchSpec,
    pub(crate) cluster: Option<ClusterSpec>,
    pub(crate) append: Option<AppendSpec>,
    #[serde(default)]
    pub(crate) report: ReportSpec,
}

/// Stage 5 (`[report]`): the night's HTML report.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReportSpec {
    /// Write it (the default).
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    /// Where (default: `report.html` in the directory that holds the
    /// cluster stage's output, or else the match stage's).
    pub(crate) out: Option<String>,
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec {
            enabled: true,
            out: None,
        }
    }
}

/// Stage 3 (`[cluster]`): the match stage's pairs into clusters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClusterSpec {
    pub(crate) out: String,
    /// `--keep-by`'s keys, in order (default: corpus, rel-canonical,
    /// canonical-url, earliest, read from the pages table; the corpus alone
    /// without one).
    pub(crate) keep_by: Option<Vec<String>>,
    /// The pages table (default: the night's fingerprints, `match`'s
    /// queries).
    pub(crate) pages: Option<Vec<String>>,
    /// `true`: corpus pages first (the default order already has them);
    /// `false`: the default order without the corpus key.
    pub(crate) corpus_wins: Option<bool>,
    #[serde(default)]
    pub(crate) drop_policy: DropPolicy,
    #[serde(default = "default_max_cluster_size")]
    pub(crate) max_cluster_size: u64,
    #[serde(default = "one")]
    pub(crate) parts: usize,
    /// `[match] corpus` read as `cluster --corpus`: which pages are
    /// already in it, their keys, and `drop/`'s `keep_url` for pages kept
    /// from it (its ids in full). Once named `corpus_urls`.
    #[serde(default = "yes", alias = "corpus_urls")]
    pub(crate) corpus_pages: bool,
}

/// Where the workers run (`[runtime]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuntimeSpec {
    #[serde(default = "default_workers")]
    pub(crate) workers: usize,
    pub(crate) processes: Option<usize>,
    pub(crate) hostfile: Option<String>,
    pub(crate) hostfile_pattern: Option<String>,
    pub(crate) port: Option<u16>,
    #[serde(default = "default_timeout")]
    pub(crate) connect_timeout: f64,
    #[serde(default = "default_timeout")]
    pub(crate) peer_timeout: f64,
}

impl Default for RuntimeSpec {
    fn default() -> Self {
        RuntimeSpec {
            workers: default_workers(),
            processes: None,
            hostfile: None,
            hostfile_pattern: None,
            port: None,
            connect_timeout: default_timeout(),
            peer_timeout: default_timeout(),
        }
    }
}

/// Stage 1 (`[fingerprint]`): crawl text in, B out.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FingerprintSpec {
    pub(crate) input: Vec<String>,
    pub(crate) out: String,
    pub(crate) format: Option<Format>,
    /// A named fingerprint scheme; excludes the four below.
    pub(crate) scheme: Option<String>,
    pub(crate) features: Option<String>,
    pub(crate) html_text: Option<HtmlText>,
    #[serde(default)]
    pub(crate) log_weights: bool,
    #[serde(default)]
    pub(crate) keep_stop_words: bool,
    /// Leave the sketch out (`--no-sketch`).
    #[serde(default)]
    pub(crate) no_sketch: bool,
    pub(crate) id_field: Option<String>,
    pub(crate) url_field: Option<String>,
    pub(crate) text_field: Option<String>,
    pub(crate) time_field: Option<String>,
}

impl FingerprintSpec {
    /// The scheme its keys name, as `fingerprint`'s flags would.
    pub(crate) fn scheme(&self) -> anyhow::Result<Scheme> {
        Scheme::from_flags(
            self.scheme.as_deref(),
            self.features.as_deref(),
            self.log_weights,
            self.keep_stop_words,
            self.html_text,
            self.no_sketch,
        )
    }
}

/// Stage 2 (`[match]`): pairs of B against F, and inside B.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MatchSpec {
    /// B; defaults to the fingerprint stage's output.
    pub(crate) queries: Option<Vec<String>>,
    /// F: shards, directories or globs. The append stage's corpus directory
    /// may be listed before it exists.
    #[serde(default)]
    pub(crate) corpus: Vec<String>,
    pub(crate) out: String,
    /// Default 3, or `--verify`'s.
    pub(crate) k: Option<u32>,
    /// The quality mode (`match --verify`).
    #[serde(default)]
    pub(crate) verify: bool,
    pub(crate) verify_threshold: Option<u32>,
    #[serde(default = "yes", rename = "self")]
    pub(crate) self_join: bool,
    #[serde(default)]
    pub(crate) allow_mixed_schemes: bool,
    #[serde(default = "one")]
    pub(crate) parts: usize,
    pub(crate) blocks: Option<u32>,
    pub(crate) table_memory_mib: Option<u64>,
    pub(crate) kernel: Option<Kernel>,
    pub(crate) pair_memory_mib: Option<u64>,
    pub(crate) id_column: Option<String>,
    pub(crate) simhash_column: Option<String>,
}

/// Stage 4 (`[append]`): B, without the night's drops, becomes `corpus/batch/`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AppendSpec {
    pub(crate) corpus: String,
    pub(crate) batch: String,
}

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}

fn default_max_cluster_size() -> u64 {
    1000
}
fn default_timeout() -> f64 {
    60.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    #[test]
    fn every_shipped_spec_parses_and_builds_its_fingerprint_options() {
        let jobs = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
        for name in ["sample.toml", "nightly.toml"] {
            let text = fs::read_to_string(jobs.join(name)).unwrap();
            let spec: JobSpec = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let f = spec.fingerprint.as_ref().unwrap();
            let options = f.scheme();
            assert!(options.is_ok(), "{name}: {options:?}");
        }
    }

    #[test]
    fn workers_default_to_every_core_with_or_without_a_runtime_table() {
        let cores = std::thread::available_parallelism().unwrap().get();
        let stages = "[match]\nqueries = [\"q\"]\ncorpus = [\"c\"]\nout = \"o\"\n";
        for runtime in [
            "",
            "[runtime]\npeer_timeout = 5\n",
            "[runtime]\nworkers = 3\n",
        ] {
            let spec: JobSpec = toml::from_str(&format!("{runtime}{stages}")).unwrap();
            let expected = if runtime.contains("workers") {
                3
            } else {
                cores
            };
            assert_eq!(spec.runtime.workers, expected, "{runtime:?}");
        }
    }
}
