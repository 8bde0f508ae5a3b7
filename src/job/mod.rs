//! `neardup run JOB.toml`: the nightly workflow as one resumable job.
//!
//! Stages, in order, each the library call of its command:
//! 1. `fingerprint` the night's crawl into B;
//! 2. `match` B against the corpus F and against itself;
//! 3. `cluster` the pairs into clusters and a keep/drop list;
//! 4. `append` B, without tonight's drops, to the corpus as a new batch
//!    directory, so the next night sees tonight's pages (see [`append`]);
//! 5. `report`: the night as one HTML page, `report.html` beside the
//!    stages' outputs (see [`crate::report`]).
//!
//! A stage whose output already has `_SUCCESS` is skipped, so a failed night
//! resumes where it stopped; once one stage runs, every later stage runs too,
//! since its input changed. Process 0 removes the later stages' completion
//! marks just before the stage commits its new output: a local output
//! keeps its old `_SUCCESS` until the new one is committed, so a night
//! stopped between two stages would otherwise find the later one complete,
//! made from the earlier one's old output; and a rerun (`--force`) stopped
//! before its first commit leaves the night as it was, its corpus batch too.
//! `--force` runs them all. On several processes every
//! process runs the same job with its own `--process`, having first agreed
//! with the others on the date, `--force` and which stages it skips (a
//! process that skipped a stage its peers run would leave them waiting);
//! stage outputs are committed by process 0 before any process moves on.

mod append;
mod dates;
mod spec;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cluster::keep_order::KeepOrder;
use crate::cluster::{check_pages, run_cluster, ClusterOptions};
use crate::exec::runtime::{
    self, on_process_0, process_env, ProcessSettings, RuntimeOptions, Terms, Timeouts, FIRST_STAGE,
};
use crate::fingerprint::crawl::TextFields;
use crate::fingerprint::{input_files, run_fingerprint, FingerprintOptions};
use crate::io::parquet::input::{
    clean, expand_locations, nested, refuse_output_over_inputs, Columns, FingerprintFile,
};
use crate::io::parquet::output::document_schema;
use crate::io::parquet::schemes::{check_same, SchemeOf};
use crate::io::staging::{
    before_commit, file_exists, remove_file, remove_output, BeforeCommit, RunLock,
};
use crate::io::storage::{is_url, Location, NoFiles, SUCCESS};
use crate::matching::design::DEFAULT_TABLE_MEMORY;
use crate::matching::pair_runs::DEFAULT_PAIR_MEMORY_MIB;
use crate::matching::verify;
use crate::matching::{bytes_of_mib, run_match, MatchOptions};
use crate::report::{run_report, NightDirs, ReportOptions};

use append::append_batch;
pub(crate) use dates::{check_date, today};
use spec::{ClusterSpec, FingerprintSpec, JobSpec, MatchSpec, RuntimeSpec};

/// How to run a job: the spec file and the per-invocation settings.
#[derive(Clone, Debug)]
pub(crate) struct RunOptions {
    pub(crate) spec: PathBuf,
    /// Run every stage, even those with `_SUCCESS`.
    pub(crate) force: bool,
    /// Replaces `{date}` in the spec's strings.
    pub(crate) date: String,
    pub(crate) progress: bool,
    /// Command-line settings that replace the spec's `[runtime]`.
    pub(crate) overrides: RuntimeOverrides,
}

/// `[runtime]` settings given on the command line, e.g. by
/// `scripts/processes-local.sh`, which picks the ports itself.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuntimeOverrides {
    pub(crate) workers: Option<usize>,
    /// The process index and the peers; a hostfile or a pattern here
    /// replaces both of the spec's.
    pub(crate) processes: ProcessSettings,
    pub(crate) connect_timeout: Option<f64>,
    pub(crate) peer_timeout: Option<f64>,
}

/// A job with its paths resolved against the spec's directory and `{date}`
/// filled in.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) spec_path: PathBuf,
    /// The night, as `--date` gave it.
    pub(crate) date: String,
    pub(crate) runtime: RuntimeOptions,
    pub(crate) fingerprint: Option<FingerprintOptions>,
    pub(crate) matching: MatchOptions,
    pub(crate) clustering: Option<ClusterOptions>,
    pub(crate) append: Option<(PathBuf, String)>,
    /// The report's file, unless `[report] enabled = false`.
    pub(crate) report: Option<PathBuf>,
}

/// The cluster stage's options from `[cluster]`: its pages table is the
/// night's fingerprints (`match`'s queries) unless `pages` names one. The
/// keys default to `corpus,rel-canonical,canonical-url,earliest` when
/// there is a pages table (the job fingerprints the night, whose shards
/// have those columns; `pages` names one; or the queries, fingerprinted
/// elsewhere, have them too), else to the corpus alone; `corpus_wins =
/// false` leaves the corpus key out. The corpus is read for its pages
/// (`--corpus`) unless `corpus_pages = false`.
/// Whether `queries` (the night's fingerprints, made elsewhere) have the
/// columns the default keys read, as a night's own shards do.
fn have_default_key_columns(queries: &[String]) -> bool {
    let mut probe = ClusterOptions::new(Vec::new(), PathBuf::new());
    probe.pages = queries.to_vec();
    probe.keep_by = KeepOrder::default_with_pages();
    check_pages(&probe, None).is_ok()
}

fn cluster_options(
    c: &ClusterSpec,
    matching: &MatchOptions,
    fingerprints: bool,
    resolve: &dyn Fn(&str) -> PathBuf,
    resolve_all: &dyn Fn(&[String]) -> Vec<String>,
) -> Result<ClusterOptions> {
    let pairs = vec![matching.out.display().to_string()];
    let mut o = ClusterOptions::new(pairs, resolve(&c.out));
    let with_pages = fingerprints
        || c.pages.is_some()
        || (c.keep_by.is_none() && have_default_key_columns(&matching.queries));
    o.keep_by = match (&c.keep_by, c.corpus_wins) {
        (Some(_), Some(_)) => bail!("give keep_by or corpus_wins, not both"),
        (Some(keys), None) => KeepOrder::parse(&keys.join(","))?,
        (None, Some(false)) if with_pages => {
            KeepOrder::parse("rel-canonical,canonical-url,earliest")?
        }
        (None, _) if with_pages => KeepOrder::default_with_pages(),
        (None, corpus_wins) => KeepOrder::without_pages(corpus_wins.unwrap_or(true)),
    };
    o.pages = match &c.pages {
        Some(pages) => resolve_all(pages),
        None if o.keep_by.reads_pages() || fingerprints => matching.queries.clone(),
        None => Vec::new(),
    };
    if c.corpus_pages {
        o.corpus = matching.corpus.clone();
    }
    o.drop_policy = c.drop_policy;
    o.max_cluster_size = c.max_cluster_size;
    o.parts = c.parts;
    Ok(o)
}

/// What happened to one stage.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StageOutcome {
    Ran(String),
    /// Skipped, its output complete: why it counts as complete.
    Skipped(String),
}

/// A stage's name and outcome.
pub(crate) type StageReport = (&'static str, StageOutcome);

/// Reads and checks a job spec: the file parses, every key is known, and
/// every input the spec names (rather than one a stage produces) exists.
pub(crate) fn load(opts: &RunOptions) -> Result<Job> {
    let shown = opts.spec.display();
    let text = fs::read_to_string(&opts.spec).with_context(|| format!("{shown}: cannot read"))?;
    let spec: JobSpec = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{shown}: {}", describe_toml_error(&text, &e)))?;
    check_placeholders(&text).with_context(|| format!("{shown}"))?;
    check_nightly_outputs(&spec, &text).with_context(|| format!("{shown}"))?;
    let base = opts
        .spec
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // An output may be an object-store prefix: its URL is taken as it is.
    let resolve = |s: &str| -> PathBuf {
        let s = s.replace("{date}", &opts.date);
        match is_url(&s) {
            true => PathBuf::from(s),
            false => clean(&base.join(s)),
        }
    };
    let resolve_all = |specs: &[String]| -> Vec<String> {
        specs
            .iter()
            .map(|s| resolve(s).display().to_string())
            .collect()
    };

    // A hostfile or process number from the command line is not the
    // spec's to answer for: its error names the flag or file already.
    let runtime = match any_process_flag(&opts.overrides.processes) {
        true => runtime_options(&spec.runtime, opts, &resolve)?,
        false => runtime_options(&spec.runtime, opts, &resolve)
            .with_context(|| format!("{shown}: [runtime]"))?,
    };
    // A spec this process then refuses (an input missing on its host) is
    // told to its peers, which would otherwise wait out --connect-timeout.
    runtime::stage_starting(&runtime);

    let fingerprint = match &spec.fingerprint {
        Some(f) => Some(
            fingerprint_options(f, &resolve_all(&f.input), resolve(&f.out), opts, &runtime)
                .with_context(|| format!("{shown}: [fingerprint]"))?,
        ),
        None => None,
    };
    let append = spec
        .append
        .as_ref()
        .map(|a| (resolve(&a.corpus), a.batch.replace("{date}", &opts.date)));
    if let Some((_, batch)) = &append {
        if batch.is_empty() || batch.starts_with(['.', '_']) || batch.contains(['/', '\\']) {
            bail!("{shown}: [append] batch {batch:?} must be a plain directory name");
        }
    }
    let m = &spec.match_;
    let queries = match (&m.queries, &fingerprint) {
        (Some(q), _) => resolve_all(q),
        (None, Some(f)) => vec![f.out.display().to_string()],
        (None, None) => {
            bail!("{shown}: [match] needs queries when the job has no [fingerprint] stage")
        }
    };
    if m.verify_threshold.is_some() && !m.verify {
        bail!("{shown}: [match] verify_threshold needs verify = true");
    }
    let mut matching = MatchOptions::new(queries, resolve_all(&m.corpus), resolve(&m.out));
    set_match_options(m, &mut matching);
    matching.runtime = runtime.clone();
    matching.overwrite = true;
    matching.progress = opts.progress;
    // Refused before the first stage commits, not once it has.
    matching
        .validate()
        .with_context(|| format!("{shown}: [match]"))?;

    let clustering = match &spec.cluster {
        Some(c) => Some(
            cluster_options(c, &matching, fingerprint.is_some(), &resolve, &resolve_all)
                .with_context(|| format!("{shown}: [cluster]"))?,
        ),
        None => None,
    };
    let clustering = clustering.map(|mut o: ClusterOptions| {
        o.runtime = runtime.clone();
        o.overwrite = true;
        o.progress = opts.progress;
        o
    });
    if let Some(c) = &clustering {
        c.validate()
            .with_context(|| format!("{shown}: [cluster]"))?;
    }
    let report = spec.report.enabled.then(|| match &spec.report.out {
        Some(out) => resolve(out),
        None => {
            let last = clustering.as_ref().map_or(&matching.out, |c| &c.out);
            last.parent().unwrap_or(Path::new(".")).join("report.html")
        }
    });
    let job = Job {
        spec_path: opts.spec.clone(),
        date: opts.date.clone(),
        runtime,
        fingerprint,
        matching,
        clustering,
        append,
        report,
    };
    job.check_inputs()?;
    job.check_outputs()?;
    job.warn_unless_the_corpus_is_matched();
    Ok(job)
}

/// Refuses a `{word}` in the spec's strings other than `{date}`: a typo such
/// as `{dat}` would stay in the path as it is, shared by every night.
fn check_placeholders(text: &str) -> Result<()> {
    let table: toml::Table = toml::from_str(text)?;
    let mut strings = Vec::new();
    collect_strings(&toml::Value::Table(table), "", &mut strings);
    for (key, value) in strings {
        for (at, _) in value.match_indices('{') {
            let Some(end) = value[at + 1..].find('}') else {
                continue;
            };
            let word = &value[at + 1..at + 1 + end];
            let is_word = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
            if is_word && word != "date" {
                bail!(
                    "{key} = {value:?}: unknown placeholder {{{word}}}; the only one is {{date}}"
                );
            }
        }
    }
    Ok(())
}

/// Every string of a TOML value, with its dotted key.
fn collect_strings(value: &toml::Value, key: &str, out: &mut Vec<(String, String)>) {
    let child = |name: &str| match key.is_empty() {
        true => name.to_string(),
        false => format!("{key}.{name}"),
    };
    match value {
        toml::Value::String(s) => out.push((key.to_string(), s.clone())),
        toml::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, key, out)),
        toml::Value::Table(table) => table
            .iter()
            .for_each(|(name, v)| collect_strings(v, &child(name), out)),
        _ => {}
    }
}

/// A job with `{date}` in its paths runs night after night, so each of its
/// outputs must name `{date}` too: else the second night finds the first
/// night's output complete and skips the stage (or, for the append batch,
/// leaves the first night's batch out of the corpus).
fn check_nightly_outputs(spec: &JobSpec, text: &str) -> Result<()> {
    if !text.contains("{date}") {
        return Ok(());
    }
    let outputs = [
        (
            "[fingerprint] out",
            spec.fingerprint.as_ref().map(|f| &f.out),
        ),
        ("[match] out", Some(&spec.match_.out)),
        ("[cluster] out", spec.cluster.as_ref().map(|c| &c.out)),
        ("[append] batch", spec.append.as_ref().map(|a| &a.batch)),
        ("[report] out", spec.report.out.as_ref()),
    ];
    for (name, out) in outputs {
        if let Some(out) = out.filter(|out| !out.contains("{date}")) {
            bail!(
                "{name} {out:?} has no {{date}} while the job's other paths do; \
                 the next night would skip it as complete"
            );
        }
    }
    Ok(())
}

/// The runtime of a job: `[runtime]`, with the command line's flags in
/// place of the keys of the same names.
fn runtime_options(
    r: &RuntimeSpec,
    opts: &RunOptions,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<RuntimeOptions> {
    let o = &opts.overrides;
    let flags = &o.processes;
    let (hostfile, hostfile_pattern) = match (&flags.hostfile, &flags.hostfile_pattern) {
        (None, None) => (
            r.hostfile.as_deref().map(resolve),
            r.hostfile_pattern.clone(),
        ),
        (file, pattern) => (file.clone(), pattern.clone()),
    };
    let settings = ProcessSettings {
        processes: flags.processes.or(r.processes),
        process: flags.process,
        hostfile,
        hostfile_pattern,
        port: flags.port.or(r.port),
    };
    let timeouts = Timeouts {
        connect: o.connect_timeout.unwrap_or(r.connect_timeout),
        peer: o.peer_timeout.unwrap_or(r.peer_timeout),
    };
    let workers = o.workers.unwrap_or(r.workers);
    RuntimeOptions::from_settings(workers, &settings, timeouts, &process_env)
}

/// Whether the command line gave any of the process settings.
fn any_process_flag(flags: &ProcessSettings) -> bool {
    let ProcessSettings {
        processes,
        process,
        hostfile,
        hostfile_pattern,
        port,
    } = flags;
    processes.is_some()
        || process.is_some()
        || hostfile.is_some()
        || hostfile_pattern.is_some()
        || port.is_some()
}

/// Sets `matching`'s options from the keys of `[match]`.
fn set_match_options(m: &MatchSpec, matching: &mut MatchOptions) {
    (matching.k, matching.verify_threshold) =
        verify::k_and_threshold(m.k, m.verify, m.verify_threshold);
    matching.self_join = m.self_join;
    matching.allow_mixed_schemes = m.allow_mixed_schemes;
    matching.parts = m.parts;
    matching.blocks = m.blocks;
    matching.kernel = m.kernel;
    matching.table_memory = m
        .table_memory_mib
        .map_or(DEFAULT_TABLE_MEMORY, bytes_of_mib);
    matching.pair_memory = bytes_of_mib(m.pair_memory_mib.unwrap_or(DEFAULT_PAIR_MEMORY_MIB));
    matching.columns = Columns {
        id: m.id_column.clone().unwrap_or_else(|| "id".into()),
        simhash: m.simhash_column.clone().unwrap_or_else(|| "simhash".into()),
    };
}

fn fingerprint_options(
    f: &FingerprintSpec,
    inputs: &[String],
    out: PathBuf,
    opts: &RunOptions,
    runtime: &RuntimeOptions,
) -> Result<FingerprintOptions> {
    let mut o = FingerprintOptions::new(inputs.to_vec(), out);
    o.format = f.format;
    let defaults = TextFields::default();
    o.fields = TextFields {
        id: f.id_field.clone().unwrap_or(defaults.id),
        url: f.url_field.clone().unwrap_or(defaults.url),
        text: f.text_field.clone().unwrap_or(defaults.text),
        time: f.time_field.clone(),
    };
    o.scheme = f.scheme()?;
    o.runtime = runtime.clone();
    o.overwrite = true;
    o.progress = opts.progress;
    Ok(o)
}

impl Job {
    /// The night's report at `out`, from the stages' outputs: process 0's.
    fn write_report(&self, out: &Path) -> Result<String> {
        let clusters = self.clustering.as_ref().map(|c| c.out.clone());
        let fingerprints = self.fingerprint.as_ref().map(|f| f.out.clone());
        let night = out.parent().unwrap_or(Path::new("."));
        let dirs = NightDirs {
            name: night.file_name().map_or_else(
                || night.display().to_string(),
                |n| n.to_string_lossy().into(),
            ),
            fingerprints,
            pairs: Some(self.matching.out.clone()),
            clusters,
        };
        let opts = ReportOptions {
            nights: vec![dirs],
            out: out.to_path_buf(),
            progress: self.matching.progress,
        };
        Ok(run_report(&opts)?.line(out))
    }

    /// The append stage's batch directory, if the job has one.
    fn batch_dir(&self) -> Option<PathBuf> {
        self.append
            .as_ref()
            .map(|(corpus, batch)| corpus.join(batch))
    }

    /// Checks that the inputs the spec names exist, before any stage runs.
    fn check_inputs(&self) -> Result<()> {
        let shown = self.spec_path.display();
        if let Some(f) = &self.fingerprint {
            input_files(f).with_context(|| format!("{shown}: [fingerprint] input"))?;
        }
        let produced = self
            .fingerprint
            .as_ref()
            .map(|f| f.out.display().to_string());
        for q in &self.matching.queries {
            if Some(q) != produced.as_ref() {
                expand_locations(std::slice::from_ref(q))
                    .with_context(|| format!("{shown}: [match] queries"))?;
            }
        }
        for c in &self.matching.corpus {
            if !self.is_growing_corpus(c) {
                expand_locations(std::slice::from_ref(c))
                    .with_context(|| format!("{shown}: [match] corpus"))?;
            }
        }
        if let Some(f) = &self.fingerprint {
            self.check_corpus_scheme(f)
                .with_context(|| format!("{shown}: [fingerprint] scheme"))?;
            self.check_sketches_for_verify(f)
                .with_context(|| format!("{shown}: [match] verify"))?;
        }
        if let Some(c) = &self.clustering {
            self.check_keep_columns(c, produced.as_deref())
                .with_context(|| format!("{shown}: [cluster]"))?;
        }
        Ok(())
    }

    /// Refuses, before the night is fingerprinted, a scheme whose
    /// fingerprints `match` would refuse to compare with the corpus's: the
    /// first corpus file that records a scheme (of the first few: a
    /// footer read each) stands for the corpus (`match` refuses a corpus
    /// of mixed schemes anyway). Compared as a
    /// text shard's scheme, which is comparable to the same scheme's HTML
    /// shards whatever their HTML mode: `match` still checks that.
    fn check_corpus_scheme(&self, f: &FingerprintOptions) -> Result<()> {
        if self.matching.allow_mixed_schemes {
            return Ok(());
        }
        let paths = self.corpus_locations().unwrap_or_default();
        let files = paths.iter().flat_map(|(_, files)| files);
        let recorded = files.take(SCHEME_FILES).find_map(|file| {
            // A file match cannot read is for match to name.
            let opened = FingerprintFile::open(file, &self.matching.columns);
            Some(SchemeOf {
                side: "F",
                path: file.to_string(),
                scheme: Some(opened.ok()?.scheme()?),
            })
        });
        let Some(corpus) = recorded else {
            return Ok(());
        };
        let tonight = SchemeOf {
            side: "B",
            path: f.out.display().to_string(),
            scheme: Some(f.scheme.describe(false)),
        };
        check_same(&[tonight, corpus], false).map(|_| ())
    }

    /// Refuses a match that verifies its pairs on the night's shards when
    /// they will have no sketch to verify with: `match` would fail once
    /// the night is fingerprinted.
    fn check_sketches_for_verify(&self, f: &FingerprintOptions) -> Result<()> {
        if self.matching.verify_threshold.is_none() || f.scheme.sketch {
            return Ok(());
        }
        let scheme = match f.scheme.name() {
            Some(name) => format!("scheme {name}"),
            None => "no_sketch = true".to_string(),
        };
        bail!("verify = true needs the night's shards to have sketches, and [fingerprint] {scheme} leaves them out: fingerprint with sketches (v7 or later, without no_sketch) or leave verify out")
    }

    /// Refuses, before any stage runs, keys that read a column the pages
    /// table lacks: the fingerprint shards' schema if this job writes the
    /// table, else its files' footers (unless it is the corpus, still
    /// growing).
    fn check_keep_columns(&self, c: &ClusterOptions, produced: Option<&str>) -> Result<()> {
        if produced.is_some_and(|out| c.pages.iter().any(|p| p == out)) {
            return check_pages(c, Some(&document_schema(false)));
        }
        if c.pages.iter().any(|p| self.is_growing_corpus(p)) {
            return Ok(());
        }
        check_pages(c, None)
    }

    /// Checks that no two stages write to one place, and that no stage
    /// writes over an input the spec names.
    fn check_outputs(&self) -> Result<()> {
        let shown = self.spec_path.display();
        let outputs = self.outputs();
        for (i, (name, out)) in outputs.iter().enumerate() {
            for (other, path) in &outputs[i + 1..] {
                if nested(out, path) {
                    bail!(
                        "{shown}: {name} {} and {other} {} overlap; each stage needs a path of its own",
                        out.display(),
                        path.display()
                    );
                }
            }
        }
        let produced: Vec<String> = outputs
            .iter()
            .map(|(_, o)| o.display().to_string())
            .collect();
        let named = self.fingerprint.iter().flat_map(|f| &f.inputs);
        let named = named
            .chain(&self.matching.queries)
            .chain(&self.matching.corpus)
            .chain(self.clustering.iter().flat_map(|c| &c.pages))
            .filter(|spec| !produced.contains(spec));
        let inputs: Vec<&String> = named.collect();
        for (name, out) in &outputs {
            // The batch lies in the corpus, which match reads, by design.
            if *name != "[append] batch" {
                refuse_output_over_inputs(out, inputs.iter().copied())
                    .with_context(|| format!("{shown}: {name}"))?;
            }
        }
        Ok(())
    }

    /// Each stage's name and the file whose presence makes it complete
    /// (its `_SUCCESS`, or the report), in the order they run.
    fn completion_marks(&self) -> Vec<(&'static str, PathBuf)> {
        let mut marks = Vec::new();
        if let Some(f) = &self.fingerprint {
            marks.push(("fingerprint", f.out.join(SUCCESS)));
        }
        marks.push(("match", self.matching.out.join(SUCCESS)));
        if let Some(c) = &self.clustering {
            marks.push(("cluster", c.out.join(SUCCESS)));
        }
        if let Some(batch) = self.batch_dir() {
            marks.push(("append", batch.join(SUCCESS)));
        }
        if let Some(report) = &self.report {
            marks.push(("report", report.clone()));
        }
        marks
    }

    fn outputs(&self) -> Vec<(&'static str, PathBuf)> {
        let mut outputs = Vec::new();
        if let Some(f) = &self.fingerprint {
            outputs.push(("[fingerprint] out", f.out.clone()));
        }
        outputs.push(("[match] out", self.matching.out.clone()));
        if let Some(c) = &self.clustering {
            outputs.push(("[cluster] out", c.out.clone()));
        }
        if let Some(batch) = self.batch_dir() {
            outputs.push(("[append] batch", batch));
        }
        if let Some(report) = &self.report {
            outputs.push(("[report] out", report.clone()));
        }
        outputs
    }

    /// Whether `spec` is the append stage's corpus directory, or a path or
    /// glob inside it, which the first night has not filled yet.
    fn is_growing_corpus(&self, spec: &str) -> bool {
        self.append.as_ref().is_some_and(|(corpus, _)| {
            let corpus = corpus.display().to_string();
            let corpus = corpus.trim_end_matches('/');
            let spec = spec.trim_end_matches('/');
            spec == corpus || spec.starts_with(&format!("{corpus}/"))
        })
    }

    /// Warns when tonight's batch goes where no night's match looks: the
    /// pages appended would never be matched again.
    fn warn_unless_the_corpus_is_matched(&self) {
        let Some((corpus, _)) = &self.append else {
            return;
        };
        if !self
            .matching
            .corpus
            .iter()
            .any(|spec| self.is_growing_corpus(spec))
        {
            tracing::warn!(
                "[append] corpus {} is not in [match] corpus: the pages it gets will never be matched",
                corpus.display()
            );
        }
    }

    /// The corpus files for tonight's match: the spec's inputs, without
    /// tonight's own batch (a rerun after the append must not match B
    /// against itself as corpus).
    fn corpus_files(&self) -> Result<Vec<String>> {
        let files = self
            .corpus_locations()?
            .into_iter()
            .flat_map(|(_, files)| files);
        Ok(files.map(|f| f.to_string()).collect())
    }

    /// The corpus for tonight's cluster: each path as given, whose files
    /// without `_SUCCESS` above them are one batch
    /// ([`crate::cluster::keep_order::KeepOrder::held_since`]), or its
    /// files where tonight's batch lies in it (each of the job's batches
    /// has `_SUCCESS`).
    fn corpus_paths(&self) -> Result<Vec<String>> {
        let mut paths = Vec::new();
        for (spec, files) in self.corpus_locations()? {
            match spec {
                Some(spec) => paths.push(spec.clone()),
                None => paths.extend(files.iter().map(|f| f.to_string())),
            }
        }
        Ok(paths)
    }

    /// [`Self::corpus_files`], as the listing gives them, by path given:
    /// the path, unless tonight's batch was left out of its files.
    fn corpus_locations(&self) -> Result<Vec<(Option<&String>, Vec<Location>)>> {
        let tonight = self.batch_dir().map(|t| format!("{}/", t.display()));
        let mut paths = Vec::new();
        for spec in &self.matching.corpus {
            let expanded = match expand_locations(std::slice::from_ref(spec)) {
                // The job's own corpus is missing or empty until the first
                // append; an unfinished batch in it is refused, not skipped.
                Err(error) if self.is_growing_corpus(spec) && error.is::<NoFiles>() => continue,
                expanded => expanded?,
            };
            let in_tonight = |file: &Location| {
                (tonight.as_ref()).is_some_and(|t| file.to_string().starts_with(t))
            };
            let listed = expanded.len();
            let files: Vec<Location> = expanded.into_iter().filter(|f| !in_tonight(f)).collect();
            if files.is_empty() {
                continue;
            }
            let given = (files.len() == listed).then_some(spec);
            paths.push((given, files));
        }
        Ok(paths)
    }
}

/// Corpus files whose footers are read for a scheme when a spec loads.
const SCHEME_FILES: usize = 16;

/// A TOML error on one line: where it is, the key, and what is wrong.
fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end();
    let Some(span) = error.span() else {
        return message.to_string();
    };
    let start = span.start.min(text.len());
    let number = text[..start].matches('\n').count() + 1;
    let line = text.lines().nth(number - 1).unwrap_or_default();
    match line.split_once('=') {
        Some((key, _)) if !message.contains("field") => {
            format!("line {number}, key `{}`: {message}", key.trim())
        }
        _ => format!("line {number}: {message}"),
    }
}

/// Removes the completion marks of the stages after `name`: their outputs
/// were made from what `name` is replacing, so a run stopped before they
/// are made again must not find them complete (a local output keeps
/// its old `_SUCCESS` until the new one is committed). The corpus batch
/// goes whole: every night's match reads the corpus, and would refuse it
/// as an unfinished output.
fn unmark_later_stages(marks: &[(&'static str, PathBuf)], name: &str) -> Result<()> {
    let later = marks.iter().skip_while(|(stage, _)| *stage != name).skip(1);
    for (stage, mark) in later {
        match (*stage, mark.parent()) {
            ("append", Some(batch)) => remove_output(batch).context("[append] batch")?,
            _ => remove_file(mark)?,
        }
    }
    Ok(())
}

/// Why each of the first stages is complete, up to the first that is not
/// (none if `force`): the stages a run skips. Decided before the first
/// stage runs, since every stage after one that runs runs too.
fn complete_stages(marks: &[(&'static str, PathBuf)], force: bool) -> Result<Vec<String>> {
    let mut complete = Vec::new();
    for (_, mark) in marks.iter().take_while(|_| !force) {
        if !file_exists(mark)? {
            break;
        }
        complete.push(match (mark.file_name(), mark.parent()) {
            (Some(name), Some(out)) if name == SUCCESS => {
                format!("{} has {SUCCESS}", out.display())
            }
            _ => format!("{} exists", mark.display()),
        });
    }
    Ok(complete)
}

/// On several processes, checks that every process runs the same night
/// the same way before any stage starts: the date, `--force`, the stages'
/// outputs and which stages each skips. A process started without
/// `--force`, or seeing other outputs on its host, would otherwise skip
/// stages its peers run and exit 0 while they waited for it.
fn agree_on_the_night(job: &Job, force: bool, skipped: usize) -> Result<()> {
    let marks = job.completion_marks();
    let outputs: Vec<String> = marks.iter().map(|(_, m)| m.display().to_string()).collect();
    let first = marks.get(skipped).map_or("none", |(name, _)| name);
    let terms = Terms::new("run", &job.runtime)
        .with_shown("--date", &job.date)
        .with_shown("--force", force)
        .with_shown("the stages' outputs", outputs.join(" "))
        .with_shown(FIRST_STAGE, first);
    runtime::agree_with_peers(&job.runtime, &terms)
}

/// Runs the job's stages, skipping those already complete unless `force`.
pub(crate) fn run_job(
    job: &Job,
    force: bool,
    mut report: impl FnMut(&StageReport),
) -> Result<Vec<StageReport>> {
    // One run of a night at a time: a second would find stages complete
    // that the first is rewriting, or run one beside it.
    let _night = match job.runtime.is_leader() {
        true => {
            let night = PathBuf::from(format!("{}.night", job.matching.out.display()));
            Some(RunLock::take_beside(&night, "running this night")?)
        }
        false => None,
    };
    let marks = job.completion_marks();
    runtime::stage_starting(&job.runtime);
    let complete = complete_stages(&marks, force)?;
    agree_on_the_night(job, force, complete.len())?;
    let mut complete = complete.into_iter();
    let mut reports = Vec::new();
    let mut stage =
        |name: &'static str, out: PathBuf, run: &mut dyn FnMut() -> Result<String>| -> Result<()> {
            let outcome = match complete.next() {
                Some(why) => StageOutcome::Skipped(why),
                None => {
                    let unmark = job.runtime.is_leader().then(|| {
                        let marks = marks.clone();
                        before_commit(&out, move || unmark_later_stages(&marks, name))
                    });
                    tracing::info!(stage = name, out = %out.display(), "running stage");
                    let line = run().with_context(|| format!("stage {name}"))?;
                    unmark.map_or(Ok(()), BeforeCommit::finish)?;
                    StageOutcome::Ran(line)
                }
            };
            let entry = (name, outcome);
            report(&entry);
            reports.push(entry);
            Ok(())
        };
    if let Some(f) = &job.fingerprint {
        stage("fingerprint", f.out.clone(), &mut || {
            Ok(run_fingerprint(f)?.line(&f.out))
        })?;
    }
    stage("match", job.matching.out.clone(), &mut || {
        let mut opts = job.matching.clone();
        opts.corpus = job.corpus_files()?;
        Ok(run_match(&opts)?.line(&opts.out))
    })?;
    if let Some(c) = &job.clustering {
        stage("cluster", c.out.clone(), &mut || {
            let mut c = c.clone();
            if !c.corpus.is_empty() {
                c.corpus = job.corpus_paths()?;
            }
            Ok(run_cluster(&c)?.line(&c.out))
        })?;
    }
    if let (Some(batch), Some(f)) = (job.batch_dir(), job.append.as_ref()) {
        let queries = job.matching.queries.clone();
        stage("append", batch.clone(), &mut || {
            let elsewhere = format!("process {}: appending is process 0's", job.runtime.process);
            let drops = job.clustering.as_ref().map(|c| c.out.join("drop"));
            on_process_0(&job.runtime, "append", elsewhere, || {
                append_batch(&queries, drops.as_deref(), &f.0, &batch)
            })
        })?;
    }
    if let Some(out) = &job.report {
        stage("report", out.clone(), &mut || {
            let elsewhere = format!("process {}: the report is process 0's", job.runtime.process);
            on_process_0(&job.runtime, "report", elsewhere, || job.write_report(out))
        })?;
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_lexically() {
        assert_eq!(clean(Path::new("jobs/../out/x")), Path::new("out/x"));
        assert_eq!(clean(Path::new("./jobs/./a")), Path::new("jobs/a"));
        assert_eq!(clean(Path::new("../x")), Path::new("../x"));
        assert_eq!(clean(Path::new("/a/../b")), Path::new("/b"));
        assert_eq!(clean(Path::new("jobs/..")), Path::new("."));
    }
}
