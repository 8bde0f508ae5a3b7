//! Command-line interface: argument definitions and their mapping onto the
//! library's calls.

// `--help` prints the doc comments as they are, where `[runtime]` is the
// job spec's table, not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::cluster::drop_policy::DropPolicy;
use crate::cluster::keep_order::KeepOrder;
use crate::cluster::{run_cluster, ClusterOptions};
use crate::exec::runtime::{
    default_workers, process_env, ProcessSettings, RuntimeOptions, Timeouts,
};
use crate::fingerprint::crawl::html::HtmlText;
use crate::fingerprint::crawl::{Format, TextFields};
use crate::fingerprint::scheme::Scheme;
use crate::fingerprint::{run_fingerprint, FingerprintOptions};
use crate::gen::{generate, GenOptions};
use crate::io::parquet::input::{open_inputs, Columns};
use crate::job;
use crate::matching::design;
use crate::matching::design::MAX_K;
use crate::matching::kernel::Kernel;
use crate::matching::pair_runs::DEFAULT_PAIR_MEMORY_MIB;
use crate::matching::verify;
use crate::matching::{bytes_of_mib, check_k, read_queries, run_match, MatchOptions};

/// `-k` as given: a negative or non-integer k is out of range too (clap
/// named the range of a `u32`), in [`check_k`]'s words.
fn parse_k(text: &str) -> Result<u32, String> {
    let k = text.parse::<i64>().ok().and_then(|k| u32::try_from(k).ok());
    match k {
        Some(k) if check_k(k).is_ok() => Ok(k),
        _ => Err(format!(
            "-k {text} is out of range: k must be between 0 and {MAX_K}"
        )),
    }
}

#[derive(Debug, Parser)]
#[command(name = "neardup", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find every pair of fingerprints within k bits: B against F, and/or B against itself.
    #[command(name = "match")]
    Match(MatchArgs),
    /// Print the table design `match` would use for a query set, and the alternatives.
    Plan(PlanArgs),
    /// Write deterministic synthetic fingerprint shards with planted near-duplicates.
    Gen(GenArgs),
    /// Turn crawl text (WARC, WET, JSONL, Parquet) into simhash fingerprint shards.
    Fingerprint(FingerprintArgs),
    /// Group `match` pairs into clusters of near-duplicates and list the pages to drop.
    Cluster(ClusterArgs),
    /// Run a job spec (TOML): fingerprint, match, cluster, append, report; finished stages are skipped.
    Run(RunArgs),
    /// Why two pages matched: their fingerprinted texts, a word diff and the features behind the differing bits.
    Explain(ExplainArgs),
    /// One HTML page of a night's results (and trends over several nights).
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Night directories (each holding the stages' outputs, as `run` writes
    /// them), oldest first: the last is shown in detail, all in the trends.
    /// A quoted glob in the last part ('s3://crawl/nights/*') stands for
    /// the directories it matches, in name order.
    #[arg(required = true, num_args = 1.., value_name = "NIGHT_DIR")]
    pub(crate) nights: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, default_value = "report.html")]
    pub(crate) out: PathBuf,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Two pages (ids or URLs) to compare, or one with --text.
    #[arg(required = true, num_args = 1..=2, value_name = "ID_OR_URL", allow_negative_numbers = true)]
    pub(crate) pages: Vec<String>,
    /// The fingerprint shards that hold the pages: files, directories, globs
    /// or object-store URLs.
    #[arg(long, required = true, num_args = 1..)]
    pub(crate) fingerprints: Vec<String>,
    /// Print only the text one page was fingerprinted from.
    #[arg(long)]
    pub(crate) text: bool,
    /// JSON on stdout, for scripts.
    #[arg(long)]
    pub(crate) json: bool,
    /// The most features shown.
    #[arg(long, default_value_t = 10)]
    pub(crate) top: usize,
    /// The id field or column of JSONL and Parquet input, as `fingerprint`
    /// was given it (default: as its _summary.json beside the shard
    /// records, else id).
    #[arg(long)]
    pub(crate) id_field: Option<String>,
    /// The url field or column of JSONL and Parquet input (default: as
    /// recorded, else url).
    #[arg(long)]
    pub(crate) url_field: Option<String>,
    /// The text field or column of JSONL and Parquet input (default: as
    /// recorded, else text).
    #[arg(long)]
    pub(crate) text_field: Option<String>,
}

#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// `match` outputs: directories, part files or globs.
    #[arg(long, required = true, num_args = 1..)]
    pub(crate) pairs: Vec<String>,
    /// Output directory (gets clusters/ and drop/).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Which page of a cluster is kept: keys in order, each breaking the
    /// ties of the one before, then the smallest id. Keys: corpus (first
    /// only), earliest, latest, rel-canonical, canonical-url, longest,
    /// column:NAME:asc|desc [default: corpus,rel-canonical,canonical-url,earliest
    /// with --pages, else corpus with --corpus, else the smallest id; corpus
    /// is left out when neither --corpus nor a pair file's self_pair says
    /// which pages are the corpus's]
    #[arg(long, value_name = "KEY,...")]
    pub(crate) keep_by: Option<String>,
    /// The table of page attributes the keys read (and drop/'s URLs): the
    /// night's fingerprint shards, or any Parquet with `id` and the keys'
    /// columns; files, directories, globs or object-store URLs.
    #[arg(long, num_args = 1..)]
    pub(crate) pages: Vec<String>,
    /// The corpus's fingerprint shards (match's --corpus): its pages are
    /// corpus pages, the longest held first (since their batch was
    /// complete, at its latest fetch_time; a batch is an output committed
    /// with _SUCCESS, else each path given); drop/'s keep_url for pages
    /// kept from it. Its ids and the keys' columns are read in full, and
    /// its URLs again for pages canonical links name.
    #[arg(long, num_args = 1..)]
    pub(crate) corpus: Vec<String>,
    /// The default order, whose corpus key is then required: pairs that
    /// cannot tell corpus pages (no self_pair, no --corpus) are refused.
    #[arg(long)]
    pub(crate) corpus_wins: bool,
    /// direct: drop a page only for a kept page it is paired with (the
    /// nearest); component: drop every page of a cluster for its representative.
    #[arg(long, value_enum, default_value_t = DropPolicy::Direct)]
    pub(crate) drop_policy: DropPolicy,
    /// Warn about, and list, clusters with more pages than this.
    #[arg(long, default_value_t = 1000)]
    pub(crate) max_cluster_size: u64,
    /// Number of output part files in clusters/ and drop/ (split by a hash of the page id, so a giant cluster spreads over all).
    #[arg(long, default_value_t = 1)]
    pub(crate) parts: usize,
    /// Replace an existing output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The job spec; relative paths in it are relative to its directory.
    pub(crate) spec: PathBuf,
    /// Run every stage again, even those whose output has _SUCCESS.
    #[arg(long)]
    pub(crate) force: bool,
    /// The value of {date} in the spec (default: today, UTC).
    #[arg(long)]
    pub(crate) date: Option<String>,
    /// Worker threads per process (replaces the spec's [runtime] workers).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// The processes and their peers (each replaces the spec's [runtime] key
    /// of the same name).
    #[command(flatten)]
    pub(crate) processes: ProcessArgs,
    /// Seconds to wait for every process to connect (replaces [runtime] connect_timeout).
    #[arg(long)]
    pub(crate) connect_timeout: Option<f64>,
    /// Seconds a process may send nothing before the others stop (replaces [runtime] peer_timeout).
    #[arg(long)]
    pub(crate) peer_timeout: Option<f64>,
}

/// Where the workers run: threads of this process, and the other processes
/// of the run (timely processes).
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// Worker threads per process (default: every core this process may use).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    #[command(flatten)]
    pub(crate) processes: ProcessArgs,
    /// Seconds to wait for every process to connect before giving up.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) connect_timeout: f64,
    /// Seconds a process may send nothing (not even a heartbeat) before the
    /// others stop, naming it.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) peer_timeout: f64,
}

/// The processes of a run and how they find each other; what is left
/// out comes from a scheduler's environment ([`crate::exec::scheduler`]).
#[derive(Clone, Debug, Args)]
pub(crate) struct ProcessArgs {
    /// Processes of the run (default: the hostfile's length, Slurm's
    /// task count, else 1).
    #[arg(long)]
    pub(crate) processes: Option<usize>,
    /// This process's index; 0 commits the output (default: the
    /// scheduler's, JOB_COMPLETION_INDEX or SLURM_PROCID; needed with
    /// several processes and neither).
    #[arg(long)]
    pub(crate) process: Option<usize>,
    /// One host:port per line; line i is process i.
    #[arg(long)]
    pub(crate) hostfile: Option<PathBuf>,
    /// Every process's host:port, with {i} for its index, e.g. a Kubernetes
    /// headless Service's 'neardup-{i}.neardup:4100'.
    #[arg(long)]
    pub(crate) hostfile_pattern: Option<String>,
    /// First port on each node for peers from Slurm's node list; a node's
    /// k-th task listens on it + k (default 4100).
    #[arg(long, value_name = "PORT")]
    pub(crate) port: Option<u16>,
}

impl From<ProcessArgs> for ProcessSettings {
    fn from(args: ProcessArgs) -> ProcessSettings {
        ProcessSettings {
            processes: args.processes,
            process: args.process,
            hostfile: args.hostfile,
            hostfile_pattern: args.hostfile_pattern,
            port: args.port,
        }
    }
}

impl RuntimeArgs {
    pub(crate) fn options(&self) -> Result<RuntimeOptions> {
        let settings = ProcessSettings::from(self.processes.clone());
        let timeouts = Timeouts {
            connect: self.connect_timeout,
            peer: self.peer_timeout,
        };
        let workers = self.workers.unwrap_or_else(default_workers);
        RuntimeOptions::from_settings(workers, &settings, timeouts, &process_env)
    }
}

/// Column names of the input shards.
#[derive(Debug, Args)]
pub(crate) struct ColumnArgs {
    /// Name of the INT64 (or UINT64) id column.
    #[arg(long, default_value = "id")]
    pub(crate) id_column: String,
    /// Name of the INT64 (or UINT64) simhash column.
    #[arg(long, default_value = "simhash")]
    pub(crate) simhash_column: String,
}

impl ColumnArgs {
    fn columns(&self) -> Columns {
        Columns {
            id: self.id_column.clone(),
            simhash: self.simhash_column.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct MatchArgs {
    /// Query set B: Parquet files, directories of them, or globs.
    #[arg(long, required = true, num_args = 1..)]
    pub(crate) queries: Vec<String>,
    /// Corpus F: Parquet files, directories of them, or globs.
    #[arg(long, num_args = 1..)]
    pub(crate) corpus: Vec<String>,
    /// Output directory.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Largest Hamming distance that counts as a near-duplicate (0 to 10;
    /// default 3, under --verify the candidates' k, 6).
    #[arg(short, allow_negative_numbers = true, value_parser = parse_k)]
    pub(crate) k: Option<u32>,
    /// Quality mode: find candidates within k, then keep a pair only if
    /// its fingerprints and sketches together (256 bits) differ in at most
    /// --verify-threshold bits. Needs shards with a sketch (scheme v7 or later).
    #[arg(long)]
    pub(crate) verify: bool,
    /// The wide distance --verify keeps pairs within (0 to 256; default 28
    /// on text shards, 20 on HTML shards or shards of an unknown scheme).
    #[arg(long)]
    pub(crate) verify_threshold: Option<u32>,
    /// Also find pairs inside B (each unordered pair once, query_id < corpus_id).
    #[arg(long = "self")]
    pub(crate) self_join: bool,
    /// Match even when B's and F's fingerprint schemes (recorded in each
    /// shard) differ; by default that is refused.
    #[arg(long)]
    pub(crate) allow_mixed_schemes: bool,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
    /// Number of output part files (split by query id).
    #[arg(long, default_value_t = 1)]
    pub(crate) parts: usize,
    /// Replace an existing output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Number of blocks m (k < m <= 64) instead of the automatic choice.
    #[arg(long)]
    pub(crate) blocks: Option<u32>,
    /// Memory budget for the tables, in MiB.
    #[arg(long, default_value_t = design::DEFAULT_TABLE_MEMORY >> 20)]
    pub(crate) table_memory_mib: u64,
    /// Probe kernel instead of this CPU's best (`neardup plan` shows which).
    #[arg(long, value_enum)]
    pub(crate) kernel: Option<Kernel>,
    /// Pairs a worker holds in memory, in MiB; beyond it they are spilled
    /// as sorted runs under the output's staging directory.
    #[arg(long, default_value_t = DEFAULT_PAIR_MEMORY_MIB)]
    pub(crate) pair_memory_mib: u64,
    #[command(flatten)]
    pub(crate) columns: ColumnArgs,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Query set B (its distinct fingerprints are counted).
    #[arg(long, conflicts_with = "num_queries", required_unless_present = "num_queries", num_args = 1..)]
    pub(crate) queries: Vec<String>,
    /// Plan for this many distinct query fingerprints instead of reading B.
    #[arg(long)]
    pub(crate) num_queries: Option<u64>,
    /// Largest Hamming distance (0 to 10).
    #[arg(short, default_value_t = 3, allow_negative_numbers = true, value_parser = parse_k)]
    pub(crate) k: u32,
    /// Number of blocks m instead of the automatic choice.
    #[arg(long)]
    pub(crate) blocks: Option<u32>,
    /// Memory budget for the tables, in MiB.
    #[arg(long, default_value_t = design::DEFAULT_TABLE_MEMORY >> 20)]
    pub(crate) table_memory_mib: u64,
    /// Plan for this probe kernel instead of this CPU's best.
    #[arg(long, value_enum)]
    pub(crate) kernel: Option<Kernel>,
    #[command(flatten)]
    pub(crate) columns: ColumnArgs,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Output directory (gets queries/, corpus/ and planted.parquet).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Rows of B.
    #[arg(long)]
    pub(crate) queries: u64,
    /// Rows of F.
    #[arg(long)]
    pub(crate) corpus: u64,
    /// Corpus files.
    #[arg(long, default_value_t = 1)]
    pub(crate) shards: usize,
    /// Seed: the same seed writes the same data.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Fraction of corpus rows planted as near-copies of a query.
    #[arg(long, default_value_t = 0.01)]
    pub(crate) plant_rate: f64,
    /// Fraction of queries planted as near-copies of an earlier query.
    #[arg(long, default_value_t = 0.01)]
    pub(crate) self_rate: f64,
    /// Planted distances are uniform in 0..=this.
    #[arg(long, default_value_t = 5)]
    pub(crate) max_distance: u32,
    /// Rows per Parquet row group.
    #[arg(long, default_value_t = 128 * 1024)]
    pub(crate) row_group_rows: usize,
    /// Also write a random `sketch` column (for `match --verify`); a
    /// planted row's sketch is its query's with 0 to 32 bits flipped.
    #[arg(long)]
    pub(crate) sketch: bool,
    /// Replace an existing output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

#[derive(Debug, Args)]
pub struct FingerprintArgs {
    /// Input files, directories or globs.
    #[arg(long, required = true, num_args = 1..)]
    pub(crate) input: Vec<String>,
    /// Output directory: one shard per input file.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Input format (default: from each file's name).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// A named fingerprint scheme (v12, the default; v11, v10, ..., v1), fixing features,
    /// weights, HTML text and HTTP decoding: to fingerprint as an older corpus was.
    #[arg(long, conflicts_with_all = ["features", "log_weights", "keep_stop_words", "html_text"])]
    pub(crate) scheme: Option<String>,
    /// Which text of an HTML page (WARC responses) is fingerprinted: its
    /// main content (default; all its text when none is found) or all of it.
    #[arg(long, value_enum)]
    pub(crate) html_text: Option<HtmlText>,
    /// Features: script (the default: words with term-frequency weights for
    /// text mostly of Han characters, character 4-grams with log weights
    /// if it has fewer than 200 of them, character 5-grams with log weights
    /// for other text), words, shingles:N (word N-grams) or chars:N
    /// (character N-grams).
    #[arg(long)]
    pub(crate) features: Option<String>,
    /// Weight features by 1 + ln(count) instead of their count.
    #[arg(long)]
    pub(crate) log_weights: bool,
    /// Keep stop words (by default common English and Chinese function words are dropped).
    #[arg(long)]
    pub(crate) keep_stop_words: bool,
    /// Leave out the sketch (192 more bits a page, 24 bytes a row, that
    /// `match --verify` needs): the same fingerprints, under a scheme
    /// without a name.
    #[arg(long)]
    pub(crate) no_sketch: bool,
    /// Input files are spread over the workers of every process.
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
    /// JSONL field / Parquet column holding the INT64 id (else the URL's hash).
    #[arg(long, default_value = "id")]
    pub(crate) id_field: String,
    /// JSONL field / Parquet column holding the URL.
    #[arg(long, default_value = "url")]
    pub(crate) url_field: String,
    /// JSONL field / Parquet column holding the text.
    #[arg(long, default_value = "text")]
    pub(crate) text_field: String,
    /// JSONL field / Parquet column holding the fetch time (RFC 3339
    /// strings, or a Parquet TIMESTAMP), for the shards' `fetch_time`
    /// (default: none, null; WARC and WET take their WARC-Date).
    #[arg(long)]
    pub(crate) time_field: Option<String>,
    /// Replace an existing output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// Parses the command line. A usage error is one line on stderr and exit
/// code 1, as every other error is (clap's own is several lines and 2);
/// help and the version print as clap prints them.
impl Command {
    /// Whether the command frees big buffers step after step (`cluster`,
    /// and `run`, which may cluster): see [`crate::exec::allocator::tune`].
    pub fn frees_big_buffers(&self) -> bool {
        matches!(self, Command::Cluster(_) | Command::Run(_))
    }
}

pub fn parse() -> Cli {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) =>
        {
            error.exit()
        }
        // No command: the help, as a flag error (clap's own exit is 2).
        Err(error) if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            std::process::exit(1)
        }
        Err(error) => {
            let line = one_line_usage_error(&error.render().to_string());
            crate::exec::logging::print_error(&format!("{line} (see --help)"));
            std::process::exit(1)
        }
    }
}

/// clap's message for a command line it refuses, on one line: its lines
/// before the usage, which name what is missing and the values or the
/// near spelling it takes.
fn one_line_usage_error(text: &str) -> String {
    let said: Vec<&str> = text
        .lines()
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let Some((first, rest)) = said.split_first() else {
        return "error: invalid arguments".to_string();
    };
    rest.iter().fold(first.to_string(), |line, next| {
        let joint = if line.ends_with(':') { " " } else { "; " };
        line + joint + next
    })
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let result = match cli.command {
        Command::Match(args) => run_match_command(args),
        Command::Plan(args) => run_plan_command(args),
        Command::Gen(args) => run_gen_command(args),
        Command::Fingerprint(args) => run_fingerprint_command(args),
        Command::Cluster(args) => run_cluster_command(args),
        Command::Run(args) => run_job_command(args),
        Command::Explain(args) => run_explain_command(args),
        Command::Report(args) => run_report_command(args),
    };
    if let Err(error) = &result {
        crate::exec::runtime::tell_peers_of_failure(error);
    }
    crate::io::staging::remove_local_staging();
    result
}

fn run_report_command(args: ReportArgs) -> Result<()> {
    let opts = crate::report::ReportOptions {
        nights: crate::report::discover_nights(&args.nights)?,
        out: args.out.clone(),
        progress: true,
    };
    let summary = crate::report::run_report(&opts)?;
    print_line(&summary.line(&args.out))
}

fn run_explain_command(args: ExplainArgs) -> Result<()> {
    match (args.text, args.pages.len()) {
        (true, 1) | (false, 2) => {}
        (true, _) => anyhow::bail!("--text takes one page, not {}", args.pages.len()),
        (false, _) => anyhow::bail!("give two pages to compare, or one with --text"),
    }
    use crate::fingerprint::explain::{run_explain, ExplainOptions, GivenFields};
    run_explain(&ExplainOptions {
        pages: args.pages,
        fingerprints: args.fingerprints,
        json: args.json,
        top_features: args.top,
        fields: GivenFields {
            id: args.id_field,
            url: args.url_field,
            text: args.text_field,
        },
    })
}

fn run_match_command(args: MatchArgs) -> Result<()> {
    // Checked here, not by clap: its error for a flag another needs lists
    // no flag.
    if args.verify_threshold.is_some() && !args.verify {
        bail!("--verify-threshold needs --verify");
    }
    let (k, verify_threshold) = verify::k_and_threshold(args.k, args.verify, args.verify_threshold);
    let opts = MatchOptions {
        queries: args.queries,
        corpus: args.corpus,
        out: args.out.clone(),
        k,
        verify_threshold,
        self_join: args.self_join,
        allow_mixed_schemes: args.allow_mixed_schemes,
        runtime: args.runtime.options()?,
        parts: args.parts,
        overwrite: args.overwrite,
        columns: args.columns.columns(),
        blocks: args.blocks,
        table_memory: bytes_of_mib(args.table_memory_mib),
        kernel: args.kernel,
        pair_memory: bytes_of_mib(args.pair_memory_mib),
        progress: true,
    };
    let summary = run_match(&opts)?;
    print_line(&summary.line(&args.out))
}

fn run_plan_command(args: PlanArgs) -> Result<()> {
    design::check_blocks_range(args.k, args.blocks)?;
    design::check_table_memory(bytes_of_mib(args.table_memory_mib))?;
    let stored = match args.num_queries {
        Some(n) => n,
        None => count_distinct_fingerprints(&args.queries, &args.columns.columns())?,
    };
    let (kernel, why) = Kernel::choose(args.kernel)?;
    design::check_blocks(
        stored,
        args.k,
        args.blocks,
        bytes_of_mib(args.table_memory_mib),
    )?;
    let plan = design::plan(
        stored,
        args.k,
        bytes_of_mib(args.table_memory_mib),
        args.blocks,
        kernel.probe_cost(),
    );
    print_all(&plan.report(stored, args.k, &kernel.line(why)))
}

/// Prints one line of a command's summary; see [`print_all`].
fn print_line(line: &str) -> Result<()> {
    print_all(&format!("{line}\n"))
}

/// Writes `text` to stdout. A reader that stopped early (`neardup plan |
/// head`, or a job's summary into a closed pipe) is not an error: the work
/// is done and its output committed. The process keeps ignoring SIGPIPE,
/// which timely's sockets rely on, so the closed pipe arrives here as
/// `BrokenPipe` instead of killing the process.
fn print_all(text: &str) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("stdout: cannot write the summary line (the output is committed)"),
    }
}

fn count_distinct_fingerprints(specs: &[String], columns: &Columns) -> Result<u64> {
    let (files, units) = open_inputs(specs, columns)?;
    let threads = crate::exec::runtime::default_workers();
    Ok(read_queries(&files, &units, columns, threads)?.groups() as u64)
}

fn run_gen_command(args: GenArgs) -> Result<()> {
    let opts = GenOptions {
        out: args.out.clone(),
        queries: args.queries,
        corpus: args.corpus,
        shards: args.shards,
        seed: args.seed,
        plant_rate: args.plant_rate,
        self_rate: args.self_rate,
        max_distance: args.max_distance,
        row_group_rows: args.row_group_rows,
        sketch: args.sketch,
        overwrite: args.overwrite,
    };
    let summary = generate(&opts)?;
    print_line(&format!(
        "generated {} queries and {} corpus rows in {} shard(s), {} planted pairs -> {}",
        args.queries,
        args.corpus,
        args.shards,
        summary.planted,
        args.out.display()
    ))
}

fn run_fingerprint_command(args: FingerprintArgs) -> Result<()> {
    let opts = FingerprintOptions {
        inputs: args.input,
        out: args.out.clone(),
        format: args.format,
        fields: TextFields {
            id: args.id_field,
            url: args.url_field,
            text: args.text_field,
            time: args.time_field,
        },
        scheme: Scheme::from_flags(
            args.scheme.as_deref(),
            args.features.as_deref(),
            args.log_weights,
            args.keep_stop_words,
            args.html_text,
            args.no_sketch,
        )?,
        runtime: args.runtime.options()?,
        overwrite: args.overwrite,
        progress: true,
    };
    let summary = run_fingerprint(&opts)?;
    print_line(&summary.line(&args.out))
}

fn run_job_command(args: RunArgs) -> Result<()> {
    let date = args.date.unwrap_or_else(job::today);
    job::check_date(&date)?;
    let opts = job::RunOptions {
        spec: args.spec,
        force: args.force,
        date,
        progress: true,
        overrides: job::RuntimeOverrides {
            workers: args.workers,
            processes: args.processes.into(),
            connect_timeout: args.connect_timeout,
            peer_timeout: args.peer_timeout,
        },
    };
    let spec = job::load(&opts)?;
    let mut printed = Ok(());
    job::run_job(&spec, opts.force, |(name, outcome)| {
        let line = match outcome {
            job::StageOutcome::Ran(line) => format!("{name}: {line}"),
            job::StageOutcome::Skipped(why) => format!("{name}: skipped, {why}"),
        };
        // A stage's line that cannot be printed must not stop the stages
        // after it: the first such error is reported once they are done.
        if printed.is_ok() {
            printed = print_line(&line);
        }
    })?;
    printed
}

fn run_cluster_command(args: ClusterArgs) -> Result<()> {
    let opts = ClusterOptions {
        pairs: args.pairs,
        out: args.out.clone(),
        keep_by: KeepOrder::resolve(
            args.keep_by.as_deref(),
            args.corpus_wins,
            !args.pages.is_empty(),
            !args.corpus.is_empty(),
        )?,
        pages: args.pages,
        corpus: args.corpus,
        drop_policy: args.drop_policy,
        max_cluster_size: args.max_cluster_size,
        parts: args.parts,
        runtime: args.runtime.options()?,
        overwrite: args.overwrite,
        progress: true,
    };
    let summary = run_cluster(&opts)?;
    print_line(&summary.line(&args.out))
}
