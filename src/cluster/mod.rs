//! The `cluster` command as a library call: pairs in, clusters and the
//! keep/drop list out.
//!
//! The workers of a process stream their shares of the pairs' row groups
//! into one union-find ([`crate::cluster::components`]) and split its components
//! among themselves; the components of different processes are joined
//! where they share pages (see [`crate::cluster::join`]). A cluster
//! one worker holds whole is counted and its drops chosen there
//! ([`crate::cluster::local_clusters`]). Under `--drop-policy direct`
//! the pages and pairs of a joined cluster go to its owner, a hash of the
//! representative, which does the same ([`crate::cluster::cluster_owner`]);
//! under `component` each worker drops its own pages of a joined cluster
//! for the representative the join gave it. The rows go to their part's writer as runs sorted
//! by id (see [`crate::cluster::part_runs`]), merged as `clusters/` and `drop/` are
//! written ([`crate::cluster::part_writer`]), each `drop/` part then given
//! its pages' URLs if a table has them ([`crate::cluster::drop_evidence`]);
//! worker 0 commits once every worker has reported. The dataflow that
//! wires these steps is [`crate::cluster::dataflow`]'s.
//!
//! How the pairs are read into the union-find is in
//! [`crate::cluster::read_pairs`]; the totals and `_summary.json` in
//! [`crate::cluster::summary`].
//!
//! `cluster` (and `run`) set mimalloc's purge delay to 250 ms instead of
//! 1 s ([`crate::exec::allocator`]): each step frees buffers of one size as the next
//! allocates others, and held for a second they count twice in the peak.

pub(crate) mod cluster_owner;
pub mod components;
pub(crate) mod dataflow;
pub(crate) mod drop_evidence;
pub mod drop_policy;
pub(crate) mod join;
pub mod keep_order;
pub(crate) mod local_clusters;
pub(crate) mod options;
pub(crate) mod page_estimate;
pub(crate) mod part_runs;
pub(crate) mod part_writer;
pub(crate) mod read_pairs;
pub(crate) mod summary;

pub use options::ClusterOptions;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use arrow_schema::Schema;

use crate::cluster::components::SharedGraph;
use crate::cluster::dataflow::Job;
use crate::cluster::drop_evidence::EvidenceSources;
use crate::cluster::drop_policy::DropPolicy;
use crate::cluster::keep_order::{ColumnKinds, KeepOrder, URL};
use crate::cluster::read_pairs::ProcessUnits;
use crate::cluster::summary::{ClusterSummary, ClusterTotals, InputsRead};
use crate::exec::parallel::{lock, Tickets};
use crate::exec::progress::StepsProgress;
use crate::exec::runtime::Terms;
use crate::io::commit::commit_staging;
use crate::io::parquet::columns::{check_string, column_list};
use crate::io::parquet::input::{into_pieces, open_pair_inputs, PairNeeds, PairUnit};
use crate::io::parquet::pages::PagesTable;
use crate::io::staging::{part_name, Staging};
use crate::io::storage::{tails_digest, Location};

/// Paths as given and the rows they hold, as a term: `none` for no paths.
fn paths_and_rows(paths: &[String], rows: u64) -> String {
    match paths.is_empty() {
        true => "none".to_string(),
        false => format!("{} ({rows} rows)", paths.join(" ")),
    }
}

/// Runs `cluster` end to end; on several processes every process calls this.
pub fn run_cluster(opts: &ClusterOptions) -> Result<ClusterSummary> {
    let started = Instant::now();
    opts.validate()?;
    crate::exec::runtime::stage_starting(&opts.runtime);
    let needs = PairNeeds {
        self_pair: opts.keep_by.needs_self_pair(!opts.corpus.is_empty()),
        distance: opts.drop_policy == DropPolicy::Direct,
    };
    let units = open_pair_inputs(&opts.pairs, needs)?;
    let tell_corpus = units.iter().any(|unit| unit.has_self_pair);
    let opts = &opts.holding_corpus(tell_corpus)?;
    warn_of_pairs_without_self_pair(opts, &units);
    let keep = &opts.keep_by;
    let peers = opts.runtime.workers * opts.runtime.processes;
    let kinds = ColumnKinds::default();
    let pages = open_pages(opts, &kinds)?.map(Arc::new);
    let units = into_pieces(units, peers);
    let mut staging = Staging::for_job(
        &opts.out,
        opts.overwrite,
        opts.runtime.is_leader(),
        opts.pairs.iter().chain(&opts.pages).chain(&opts.corpus),
    )?;
    if let Some(staging) = &mut staging {
        make_folders(staging)?;
        let names: Vec<String> = (0..opts.parts).map(part_name).collect();
        for folder in ["clusters", "drop"] {
            staging.expect_parts(names.iter().map(|name| Path::new(folder).join(name)));
        }
    }
    let pages_rows = pages.as_ref().map_or(0, |table| table.rows());
    let corpus = open_corpus(opts, &kinds)?.map(Arc::new);
    let corpus_rows = corpus.as_ref().map_or(0, |table| table.rows());
    let batches = keep.held_since(corpus.as_deref())?;
    warn_of_no_canonical_links(opts, [&pages, &corpus]);
    let drop_evidence =
        EvidenceSources::of(&pages, corpus_urls(opts, &corpus), opts.runtime.workers);
    let read = Arc::new(InputsRead {
        pages_rows,
        corpus_rows,
        corpus_batches: batches.listed,
        drop_urls: drop_evidence.is_some(),
    });
    let summary_of = move |opts: &ClusterOptions, totals: &ClusterTotals| -> ClusterSummary {
        ClusterSummary::of(opts, totals, started, &read)
    };
    let (commit, written) = {
        let (opts, summary_of) = (opts.clone(), summary_of.clone());
        commit_staging(staging, move |totals: &ClusterTotals| {
            Ok(summary_of(&opts, totals))
        })
    };
    // Each pair file once, with its rows: its units come in a run.
    let mut pair_files: Vec<(&Location, String, u64)> = Vec::new();
    for unit in &units {
        let path = unit.path.to_string();
        match pair_files.last_mut() {
            Some((_, last, rows)) if *last == path => *rows += unit.rows as u64,
            _ => pair_files.push((&unit.path, path, unit.rows as u64)),
        }
    }
    let pair_rows: Vec<(String, u64)> = (pair_files.iter())
        .map(|(_, path, rows)| (path.clone(), *rows))
        .collect();
    let terms = Terms::new("cluster", &opts.runtime)
        .with_shown("--keep-by", &opts.keep_by)
        .with_shown("--drop-policy", opts.drop_policy)
        .with_shown("--parts", opts.parts)
        .with_shown("--max-cluster-size", opts.max_cluster_size)
        .with_shown("--out", opts.out.display())
        .with_files("pairs", &pair_rows, "rows")
        .with_shown("--pages", paths_and_rows(&opts.pages, pages_rows))
        .with_shown("--corpus", paths_and_rows(&opts.corpus, corpus_rows))
        .with_input_tails(&opts.runtime, || {
            let tables = pages.iter().chain(&corpus).flat_map(|table| table.files());
            tails_digest(pair_files.iter().map(|(file, _, _)| *file).chain(tables))
        })?;
    let job = Arc::new(Job {
        opts: opts.clone(),
        total_pairs: units.iter().map(|unit| unit.rows as u64).sum(),
        units: ProcessUnits::of(units, &opts.runtime),
        dir: Staging::dir_for(&opts.out)?,
        graph: SharedGraph::new(keep.corpus_first(), opts.runtime.workers, keep.words()),
        page_units: Tickets::new(pages.as_ref().map_or(0, |table| table.units())),
        pages,
        corpus_units: Tickets::new(corpus.as_ref().map_or(0, |table| table.units())),
        corpus_list_units: Tickets::new(corpus.as_ref().map_or(0, |table| table.units())),
        corpus_held_since: batches.unit_times,
        corpus,
        drop_evidence,
        counters: Arc::default(),
    });
    let progress = StepsProgress::start(
        opts.progress,
        job.units.pairs() as u64,
        "pairs",
        dataflow::STEPS,
        job.counters.clone(),
    );
    let totals = dataflow::run(job, &terms, commit);
    progress.finish();
    let totals = totals?;
    if let Some(summary) = lock(&written).take() {
        return Ok(summary);
    }
    Ok(summary_of(opts, &totals))
}

/// Makes the output's two folders, `clusters/` and `drop/`, in its staging.
fn make_folders(staging: &Staging) -> Result<()> {
    for sub in ["clusters", "drop"] {
        let dir = staging.dir().join(sub);
        std::fs::create_dir(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    }
    Ok(())
}

/// Checks, before a job's first stage runs, that the keys can be read from
/// the pages table: from `produced`, the schema an earlier stage of the job
/// will write it with, or else from its files' footers.
pub(crate) fn check_pages(opts: &ClusterOptions, produced: Option<&Schema>) -> Result<()> {
    let Some(schema) = produced else {
        return open_pages(opts, &ColumnKinds::default()).map(drop);
    };
    let keep = &opts.keep_by;
    let shown = opts.pages.join(" ");
    for name in keep.columns() {
        let field = schema.field_with_name(&name).map_err(|_| {
            anyhow!(
                "--keep-by {keep} reads column `{name}`, which the pages table {shown} will not have (columns: {})",
                column_list(schema)
            )
        })?;
        keep.check_column(&shown, &name, field.data_type())?;
    }
    Ok(())
}

/// Where `url` stands among the optional columns of `--pages` and
/// `--corpus` ([`open_pages`], [`open_corpus`]), and `canonical_url` after
/// it where the keys read it.
pub(crate) const OPTIONAL_URL: usize = 0;
pub(crate) const OPTIONAL_CANONICAL_URL: usize = 1;

/// What reads the keys' columns, as an error about a missing one says.
fn keys_reader(keep: &KeepOrder) -> String {
    match keep.is_default() {
        true => format!(
            "--keep-by {keep} reads (the default with --pages; give --keep-by to choose others)"
        ),
        false => format!("--keep-by {keep} reads"),
    }
}

/// Opens the pages table of `--pages`, with the columns the keys need and
/// `url` where it has one; checks that the keys and the table go together.
fn open_pages(opts: &ClusterOptions, kinds: &ColumnKinds) -> Result<Option<PagesTable>> {
    let keep = &opts.keep_by;
    if opts.pages.is_empty() {
        if keep.reads_pages() {
            bail!("--keep-by {keep} reads the pages table: give it with --pages");
        }
        return Ok(None);
    }
    let check = |file: &str, column: &str, data_type: &arrow_schema::DataType| {
        keep.check_column(file, column, data_type)?;
        kinds.check(file, column, data_type)
    };
    // `url` first: `drop/` asks for it as optional column 0.
    let optional: Vec<&str> = std::iter::once(URL)
        .chain(keep.optional_columns())
        .collect();
    let table = PagesTable::open(
        "--pages",
        &opts.pages,
        (&keep.columns(), &keys_reader(keep)),
        check,
        &optional,
        check_string,
    )?;
    Ok(Some(table))
}

/// Warns of a pair file without `self_pair` among others with it when
/// corpus pages come first and only `self_pair` says which they are (no
/// `--corpus`): its pages are taken as new ones, unless another file's
/// pairs say otherwise.
fn warn_of_pairs_without_self_pair(opts: &ClusterOptions, units: &[PairUnit]) {
    let Some(file) = units.iter().find(|unit| !unit.has_self_pair) else {
        return;
    };
    if opts.keep_by.corpus_first() && opts.corpus.is_empty() {
        tracing::warn!(
            "{}: no column `self_pair`, so its pairs do not say which pages are the corpus's: a corpus page only they name may be dropped for a new page; give --corpus (its pages are the corpus's) or neardup match outputs alone",
            file.path
        );
    }
}

/// Opens the corpus of `--corpus`, if given: for its ids (the pages
/// already in it), the keys' columns and `url`, each where a file has it.
fn open_corpus(opts: &ClusterOptions, kinds: &ColumnKinds) -> Result<Option<PagesTable>> {
    if opts.corpus.is_empty() {
        return Ok(None);
    }
    let keep = &opts.keep_by;
    let strings: Vec<&str> = std::iter::once(URL)
        .chain(keep.optional_columns())
        .collect();
    let columns = keep.corpus_columns();
    // `url` first: `drop/` asks for it as optional column 0.
    let optional: Vec<&str> = strings
        .iter()
        .copied()
        .chain(columns.iter().map(String::as_str))
        .collect();
    let check = |file: &str, column: &str, data_type: &arrow_schema::DataType| {
        keep.check_column(file, column, data_type)?;
        kinds.check(file, column, data_type)?;
        match strings.contains(&column) {
            true => check_string(file, column, data_type),
            false => Ok(()),
        }
    };
    let table = PagesTable::open(
        "--corpus",
        &opts.corpus,
        (&[], ""),
        |_, _, _| Ok(()),
        &optional,
        check,
    )?;
    Ok(Some(table))
}

/// Warns of a `rel-canonical` key asked for (not the default's) that no
/// file of `--pages` or `--corpus` can rank by: without a
/// `canonical_url` column it ties every page.
fn warn_of_no_canonical_links(opts: &ClusterOptions, tables: [&Option<Arc<PagesTable>>; 2]) {
    let keep = &opts.keep_by;
    let asked = keep.rel_canonical_word().is_some() && !keep.is_default();
    let linked =
        (tables.iter().copied().flatten()).any(|table| table.has_optional(OPTIONAL_CANONICAL_URL));
    if asked && !linked {
        tracing::warn!("--keep-by {keep}: no file of --pages or --corpus has a `canonical_url` column, so rel-canonical ranks no page (every page ties on it)");
    }
}

/// The corpus as a source of `drop/`'s URLs: passed over, with a warning,
/// if no file of it has them.
fn corpus_urls(opts: &ClusterOptions, corpus: &Option<Arc<PagesTable>>) -> Option<Arc<PagesTable>> {
    let corpus = corpus.as_ref()?;
    if !corpus.has_optional(OPTIONAL_URL) {
        let shown = match opts.corpus.as_slice() {
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} and {} more", rest.len()),
            [] => String::new(),
        };
        tracing::warn!("--corpus {shown}: no file has a `url` column, so drop/ has no keep_url for pages kept from the corpus");
        return None;
    }
    Some(corpus.clone())
}
