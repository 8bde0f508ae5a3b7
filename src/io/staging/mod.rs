//! Writing results so that a reader never mistakes a failed run for a
//! finished one: everything goes to a staging directory beside the target,
//! each file under a temporary name renamed into place, `_SUCCESS` last,
//! and the directory is renamed to the target when complete: a run that
//! cannot write `_SUCCESS` (a full disk) leaves the target as it was. A
//! target that appeared while the run wrote (another program's) is not
//! replaced unless `--overwrite` was given and it holds only an output.
//!
//! An object store has no rename: there, each file is uploaded under its
//! final name as soon as it is complete (from a local staging directory,
//! by the worker that wrote it), `_SUCCESS` is written last by process 0
//! once every worker has reported, and a failed run deletes what it wrote.
//! `_UNFINISHED` goes first and is deleted after `_SUCCESS`: a run killed
//! outright cannot delete its files, and readers refuse them by it.
//!
//! A stop (a signal, a lost peer) removes the output in progress, but
//! waits for a commit under way ([`crate::exec::runtime::AbortCleanup`]):
//! removed halfway through, the staging would be renamed into place
//! holding part of its files, or none, and then marked complete.
//!
//! Before a local commit, process 0 checks that every part the stage
//! should have is in staging ([`Staging::expect_parts`]): processes that
//! name one relative `--out` from different working directories, or mount
//! different disks there, each write their parts to a staging directory of
//! their own, and process 0 alone would otherwise commit a directory
//! lacking the others' parts. A process that writes no part (a stage of
//! fewer files than workers) leaves a mark of its own there instead
//! ([`Staging::expect_processes`], [`mark_process_present`]), removed
//! before the commit.
//!
//! One run at a time writes an output: [`RunLock`] (in `lock.rs`).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};

mod lock;
pub(crate) use lock::RunLock;
use lock::{host_name, remove_stale_staging};

use crate::exec::parallel::lock;
use crate::exec::runtime::AbortCleanup;
use crate::io::parquet::input::refuse_output_over_inputs;
use crate::io::storage::{is_url, OutputPrefix, LOCK, SOURCES, SUCCESS, SUMMARY, UNFINISHED};

/// An output directory under construction.
///
/// Dropped without [`Staging::commit`], it removes everything it wrote: a
/// failed run leaves nothing at the target (and an old output replaced with
/// `--overwrite` stays intact until the new one is complete).
#[derive(Debug)]
pub(crate) struct Staging {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
    /// The object-store prefix the output goes to, if it does.
    remote: Option<OutputPrefix>,
    /// The removal of this output if the process stops at once, until it
    /// is committed.
    abort_cleanup: Option<AbortCleanup>,
    /// Files (relative to the staging directory) the commit requires.
    expected: Vec<PathBuf>,
    /// Whether an existing target may be replaced (`--overwrite`).
    overwrite: bool,
    /// This run's hold on a local target, released once the staging is
    /// committed or removed (it is dropped after [`Drop for Staging`]).
    _lock: Option<RunLock>,
}

/// Local staging directories of outputs bound for an object store, with
/// their prefixes: a file placed in one is uploaded under its final name.
static REMOTE_STAGING: std::sync::Mutex<Vec<(PathBuf, OutputPrefix)>> =
    std::sync::Mutex::new(Vec::new());

/// The object-store prefix of an output directory (`None`: local).
fn remote_target(target: &Path) -> Result<Option<OutputPrefix>> {
    let shown = target.to_string_lossy();
    match is_url(&shown) {
        true => OutputPrefix::parse(&shown).map(Some),
        false => Ok(None),
    }
}

/// Whether the output at `target` is complete (has `_SUCCESS`).
pub(crate) fn is_complete(target: &Path) -> Result<bool> {
    match remote_target(target)? {
        Some(prefix) => prefix.has(SUCCESS),
        None => Ok(target.join(SUCCESS).exists()),
    }
}

/// The object-store prefix and the path below it of a file in the local
/// staging directory of an output bound for one.
fn remote_file(path: &Path) -> Option<(OutputPrefix, String)> {
    lock(&REMOTE_STAGING).iter().find_map(|(dir, prefix)| {
        let relative = path.strip_prefix(dir).ok()?;
        Some((prefix.clone(), relative.to_string_lossy().into_owned()))
    })
}

/// Removes this process's local staging directories of outputs bound for
/// an object store, once its command is over: every file in them was
/// uploaded and removed as it was placed, and process 0's commit removes
/// its own, but every other process of a run made one too (in the
/// system's temporary directory) and would leave it there.
pub(crate) fn remove_local_staging() {
    for (dir, _) in lock(&REMOTE_STAGING).drain(..) {
        let _ = fs::remove_dir_all(&dir);
    }
}

/// Renames a finished file from its temporary name into place; in the
/// staging directory of an output bound for an object store, it is then
/// uploaded under its final name and its local copy removed.
pub(crate) fn place(tmp: &Path, path: &Path) -> Result<()> {
    fs::rename(tmp, path)
        .with_context(|| format!("{}: cannot rename into place", path.display()))?;
    if let Some((prefix, relative)) = remote_file(path) {
        prefix.upload(path, &relative)?;
        let _ = fs::remove_file(path);
    }
    Ok(())
}

/// Creates the directory a file is about to be written in, when it is in
/// the local staging of an output bound for an object store: there, each
/// process has its own, and only process 0 made the subdirectories.
pub(crate) fn prepare_parent(path: &Path) -> Result<()> {
    match (remote_file(path), path.parent()) {
        (Some(_), Some(parent)) => fs::create_dir_all(parent)
            .with_context(|| format!("{}: cannot create directory", parent.display())),
        _ => Ok(()),
    }
}

impl Staging {
    /// Refuses an existing `target` unless `overwrite`, then creates a fresh
    /// staging directory beside it, removed if the process has to stop at
    /// once (a signal, a lost peer) before it is committed.
    pub(crate) fn create(target: &Path, overwrite: bool) -> Result<Staging> {
        let mut staging = Staging::start(target, overwrite)?;
        staging.remove_on_abort();
        Ok(staging)
    }

    fn start(target: &Path, overwrite: bool) -> Result<Staging> {
        if let Some(prefix) = remote_target(target)? {
            return Staging::create_for_object_store(target, prefix, overwrite);
        }
        if target.exists() && !overwrite {
            bail!(
                "{}: output directory already exists (use --overwrite to replace it)",
                target.display()
            );
        }
        if target.is_file() {
            bail!("{}: is a file; an output is a directory", target.display());
        }
        if target.exists() {
            if let Some(file) = first_foreign_file(target)? {
                bail!(not_an_output(target, &file.display(), NOT_REPLACED));
            }
        }
        let staging = Staging::dir_for(target)?;
        if let Some(parent) = staging.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("{}: cannot create directory", parent.display()))?;
        }
        let lock = RunLock::take(target, "writing this output")?;
        if staging.exists() {
            fs::remove_dir_all(&staging).with_context(|| {
                format!(
                    "{}: cannot remove stale staging directory",
                    staging.display()
                )
            })?;
        }
        fs::create_dir(&staging)
            .with_context(|| format!("{}: cannot create staging directory", staging.display()))?;
        Ok(Staging {
            target: target.to_path_buf(),
            staging,
            committed: false,
            remote: None,
            abort_cleanup: None,
            expected: Vec::new(),
            overwrite,
            _lock: Some(lock),
        })
    }

    /// [`Staging::create`] for an output in an object store: an existing
    /// prefix is refused unless `overwrite`, and then deleted now (files
    /// are written under their final names, so the old ones cannot stay
    /// until the commit).
    fn create_for_object_store(
        target: &Path,
        prefix: OutputPrefix,
        overwrite: bool,
    ) -> Result<Staging> {
        let lock = RunLock::take(target, "writing this output")?;
        if prefix.is_object()? {
            bail!(
                "{}: an object of that name exists: an output is a prefix, give one of its own",
                target.display()
            );
        }
        if prefix.exists()? {
            if !overwrite {
                let unfinished = match prefix.has(SUCCESS)? {
                    true => "",
                    false => ", without _SUCCESS: a run that did not finish",
                };
                bail!(
                    "{}: output prefix already exists{unfinished} (use --overwrite to replace it)",
                    target.display()
                );
            }
            if let Some(object) = prefix.first_foreign(is_output_file)? {
                bail!(not_an_output(target, &object, NOT_REPLACED));
            }
            prefix.delete_all()?;
        }
        prefix.put(UNFINISHED, Default::default())?;
        let staging = Staging::dir_for(target)?;
        Ok(Staging {
            target: target.to_path_buf(),
            staging,
            committed: false,
            remote: Some(prefix),
            abort_cleanup: None,
            expected: Vec::new(),
            overwrite,
            _lock: Some(lock),
        })
    }

    /// The staging directory of `target`: a hidden sibling, so that it is on
    /// the same file system (the commit is a rename) and every process of a
    /// cluster finds it without being told. For an output in an object
    /// store, this process's own local directory, made here, whose files
    /// are uploaded as they are placed.
    pub(crate) fn dir_for(target: &Path) -> Result<PathBuf> {
        if let Some(prefix) = remote_target(target)? {
            let key = xxhash_rust::xxh3::xxh3_64(target.to_string_lossy().as_bytes());
            let of_target = format!("neardup-staging-{key:016x}-{}-", host_name());
            remove_stale_staging(&std::env::temp_dir(), &of_target);
            let dir = std::env::temp_dir().join(format!("{of_target}{}", std::process::id()));
            fs::create_dir_all(&dir)
                .with_context(|| format!("{}: cannot create directory", dir.display()))?;
            let mut remote = lock(&REMOTE_STAGING);
            if !remote.iter().any(|(known, _)| *known == dir) {
                remote.push((dir.clone(), prefix));
            }
            return Ok(dir);
        }
        let name = target
            .file_name()
            .with_context(|| format!("{}: not a usable output directory name", target.display()))?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(parent.join(format!(".{}.neardup-staging", name.to_string_lossy())))
    }

    /// The staging of a job's output, which may not overlap what the job
    /// `reads`: the leader (process 0) creates it ([`Self::create`]); the
    /// other processes have none.
    pub(crate) fn for_job<'a>(
        target: &Path,
        overwrite: bool,
        leader: bool,
        reads: impl IntoIterator<Item = &'a String>,
    ) -> Result<Option<Staging>> {
        refuse_output_over_inputs(target, reads)?;
        if !leader {
            return Ok(None);
        }
        Staging::create(target, overwrite).map(Some)
    }

    /// Removes what this output wrote if the process has to stop at once (a
    /// lost peer, a failed worker, a signal) before it is committed: its
    /// staging directory, and for an object store, the objects under its
    /// prefix.
    fn remove_on_abort(&mut self) {
        let (dir, remote) = (self.staging.clone(), self.remote.clone());
        self.abort_cleanup = Some(crate::exec::runtime::on_abort(move || {
            remove_while_written(&dir);
            if let Some(prefix) = &remote {
                crate::io::storage::stop_uploads();
                let _ = prefix.delete_all();
            }
        }));
    }

    /// Where files are written until commit.
    pub(crate) fn dir(&self) -> &Path {
        &self.staging
    }

    /// Makes the commit require `parts` (paths relative to the staging
    /// directory), which every worker of every process writes its share of.
    pub(crate) fn expect_parts(&mut self, parts: impl IntoIterator<Item = PathBuf>) {
        self.expected.extend(parts);
    }

    /// Makes the commit require the mark of each process but 0
    /// ([`mark_process_present`]) among `processes`: a stage whose
    /// processes may write no part (fewer input files than workers) still
    /// finds a process that writes to a staging directory of its own.
    pub(crate) fn expect_processes(&mut self, processes: usize) {
        self.expected
            .extend((1..processes).map(|process| PathBuf::from(process_mark(process))));
    }

    /// Fails, naming the first part missing from a local staging
    /// directory, if any is: another process wrote it elsewhere. The
    /// processes' marks found are removed, so as not to be committed.
    fn check_parts_present(&self) -> Result<()> {
        let (marks, parts): (Vec<&PathBuf>, Vec<&PathBuf>) =
            (self.expected.iter()).partition(|part| is_process_mark(part));
        let absent = |part: &&&PathBuf| !self.staging.join(part).is_file();
        if let Some(mark) = marks.iter().find(absent) {
            bail!(
                "{}: process {} did not write to {}; nothing is committed: --out must be on storage all processes share",
                self.target.display(),
                process_of_mark(mark),
                self.staging.display()
            );
        }
        let missing: Vec<&&PathBuf> = parts.iter().filter(absent).collect();
        if let Some(first) = missing.first() {
            bail!(
                "{}: part {} ({} of {} missing) is not in {}; nothing is committed: --out must be on storage all processes share",
                self.target.display(),
                first.display(),
                missing.len(),
                parts.len(),
                self.staging.display()
            );
        }
        for mark in marks {
            let _ = fs::remove_file(self.staging.join(mark));
        }
        Ok(())
    }

    /// Writes `summary` as `_summary.json`, then commits.
    pub(crate) fn commit_with_summary(self, summary: &impl serde::Serialize) -> Result<()> {
        write_atomically(
            &self.staging.join(SUMMARY),
            &serde_json::to_vec_pretty(summary)?,
        )?;
        self.commit()
    }

    /// Moves the staged directory to the target and writes `_SUCCESS` last,
    /// after what was asked to be done first ([`before_commit`]). A stop
    /// meanwhile (a signal) waits for it: removing the staging directory
    /// halfway would leave `_SUCCESS` over what was left of it.
    pub(crate) fn commit(mut self) -> Result<()> {
        run_before_commit(&self.target)?;
        let cleanup = self.abort_cleanup.take();
        let moved = match &cleanup {
            Some(cleanup) => cleanup.disarm_after(|| self.move_into_place()),
            None => self.move_into_place(),
        };
        self.abort_cleanup = cleanup;
        moved
    }

    fn move_into_place(&mut self) -> Result<()> {
        if let Some(prefix) = &self.remote {
            // Every part was uploaded by its writer before it reported.
            prefix.put(SUCCESS, Default::default())?;
            self.committed = true;
            let _ = prefix.delete(UNFINISHED);
            let _ = fs::remove_dir_all(&self.staging);
            return Ok(());
        }
        self.check_parts_present()?;
        crate::exec::runtime::pause_in_commit_if_told();
        File::create(self.staging.join(SUCCESS))
            .with_context(|| format!("{}: cannot write {SUCCESS}", self.target.display()))?;
        if self.target.exists() {
            self.refuse_replacing_what_appeared()?;
            fs::remove_dir_all(&self.target)
                .with_context(|| format!("{}: cannot replace old output", self.target.display()))?;
        }
        fs::rename(&self.staging, &self.target)
            .with_context(|| format!("{}: cannot move output into place", self.target.display()))?;
        self.committed = true;
        Ok(())
    }

    /// Refuses to replace a target that is there at the commit: without
    /// `--overwrite` it was not there at the start, and what appeared since
    /// is another run's or program's; with it, it must still hold only an
    /// output's files.
    fn refuse_replacing_what_appeared(&self) -> Result<()> {
        let target = &self.target;
        if !self.overwrite {
            bail!(
                "{}: appeared while this run wrote its output (another program's?); nothing is committed, and it is left as it is",
                target.display()
            );
        }
        if let Some(file) = first_foreign_file(target)? {
            bail!(not_an_output(target, &file.display(), NOT_REPLACED));
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.staging);
            if let Some(prefix) = &self.remote {
                let _ = prefix.delete_all();
            }
        }
    }
}

/// Removes the directory `dir` while workers may still be writing parts in
/// it (a stop does not wait for them): renamed aside first, so that no
/// file is created at its path any more, then removed. Removed in place, it
/// kept every part created while it was being emptied (hundreds, of an
/// output of thousands of parts).
fn remove_while_written(dir: &Path) {
    let mut aside = dir.as_os_str().to_owned();
    aside.push(".removing");
    let aside = PathBuf::from(aside);
    let gone = match fs::rename(dir, &aside) {
        Ok(()) => aside,
        Err(_) => dir.to_path_buf(),
    };
    let _ = fs::remove_dir_all(&gone);
}

/// What is to be done just before an output is committed, by its target.
type Action = Box<dyn FnOnce() -> Result<()> + Send>;

static BEFORE_COMMIT: Mutex<Vec<(PathBuf, Action)>> = Mutex::new(Vec::new());

/// An action [`before_commit`] holds for a target until that output's
/// commit takes it; [`BeforeCommit::finish`] runs it if none did, and
/// dropping this forgets it unrun.
#[must_use]
pub(crate) struct BeforeCommit(PathBuf);

/// Has `action` done just before the output at `target` is committed, on
/// whichever thread commits it: a job unmarks the stages after one only
/// once that stage's new output is whole (see [`crate::job`]), so that a
/// rerun stopped before then leaves the night as it was.
pub(crate) fn before_commit(
    target: &Path,
    action: impl FnOnce() -> Result<()> + Send + 'static,
) -> BeforeCommit {
    lock(&BEFORE_COMMIT).push((target.to_path_buf(), Box::new(action)));
    BeforeCommit(target.to_path_buf())
}

impl BeforeCommit {
    /// Runs the action if no commit of its target took it.
    pub(crate) fn finish(self) -> Result<()> {
        run_before_commit(&self.0)
    }
}

impl Drop for BeforeCommit {
    fn drop(&mut self) {
        take_before_commit(&self.0);
    }
}

fn take_before_commit(target: &Path) -> Option<Action> {
    let mut actions = lock(&BEFORE_COMMIT);
    let at = actions.iter().position(|(held, _)| held == target)?;
    Some(actions.swap_remove(at).1)
}

fn run_before_commit(target: &Path) -> Result<()> {
    take_before_commit(target).map_or(Ok(()), |action| action())
}

/// Whether a file of an output's, named `name`, is one neardup writes:
/// `--overwrite` replaces only a directory or prefix holding nothing else,
/// so that a mistyped `--out` cannot delete other data.
fn is_output_file(name: &str) -> bool {
    matches!(
        name,
        SUCCESS | SUMMARY | SOURCES | UNFINISHED | LOCK | "planted.parquet"
    ) || (name.starts_with("part-") && name.ends_with(".parquet"))
}

/// The first file under `dir` (at any depth) that neardup does not write.
fn first_foreign_file(dir: &Path) -> Result<Option<PathBuf>> {
    let entries = fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot list", dir.display()))?;
        let path = entry.path();
        let foreign = match entry.file_type().map(|kind| kind.is_dir()) {
            Ok(true) => first_foreign_file(&path)?,
            _ => (!is_output_file(&entry.file_name().to_string_lossy())).then_some(path),
        };
        if foreign.is_some() {
            return Ok(foreign);
        }
    }
    Ok(None)
}

/// Why `--overwrite` leaves a directory that is not an output.
const NOT_REPLACED: &str =
    "--overwrite does not replace it; remove it yourself, or give --out another path";

/// Why [`remove_output`] leaves a directory that is not an output.
const NOT_REMOVED: &str = "it is not removed; remove it yourself, or give the output another path";

/// The refusal to replace or remove `target`, which holds `file`: `so`
/// says what is not done and what to do instead.
fn not_an_output(target: &Path, file: &dyn std::fmt::Display, so: &str) -> String {
    format!(
        "{}: not a neardup output ({file} is none of its files), so {so}",
        target.display()
    )
}
pub(crate) fn copy_into_place(source: &crate::io::storage::Location, path: &Path) -> Result<u64> {
    let tmp = temporary_name(path);
    prepare_parent(path)?;
    let mut target = File::create(&tmp).map_err(|e| cannot_write(&tmp, "create", e))?;
    let bytes = std::io::copy(&mut source.reader()?, &mut target)
        .with_context(|| format!("cannot copy {source} to {}", path.display()))?;
    drop(target);
    place(&tmp, path)?;
    Ok(bytes)
}

/// Writes `bytes` to `path` through a temporary name in the same directory.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temporary_name(path);
    prepare_parent(path)?;
    // A file that cannot be written (a full disk) or placed (a directory
    // in the way) leaves no temporary behind.
    let remove_tmp = |_: &_| {
        let _ = fs::remove_file(&tmp);
    };
    fs::write(&tmp, bytes)
        .map_err(|e| cannot_write(&tmp, "write", e))
        .inspect_err(remove_tmp)?;
    place(&tmp, path).inspect_err(remove_tmp)
}

/// Writes the file `path` (a local path or an object's URL) whole or not
/// at all: a local file by a rename, an object by one upload, which a
/// store shows only once it is whole.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    match object_file(path)? {
        Some((prefix, name)) => prefix.put(&name, bytes.to_vec().into()),
        None => write_atomically(path, bytes),
    }
}

/// Removes the output directory `dir` (a local path or a prefix's URL)
/// and all it holds, if it is there; refused, with nothing removed, if it
/// holds a file neardup does not write (a team's own archive of that name).
pub(crate) fn remove_output(dir: &Path) -> Result<()> {
    if let Some(prefix) = remote_target(dir)? {
        if let Some(object) = prefix.first_foreign(is_output_file)? {
            bail!(not_an_output(dir, &object, NOT_REMOVED));
        }
        return prefix.delete_all();
    }
    if dir.is_file() {
        bail!(
            "{}: is a file, not a neardup output, so {NOT_REMOVED}",
            dir.display()
        );
    }
    let foreign = match dir.is_dir() {
        true => first_foreign_file(dir)?,
        false => None,
    };
    if let Some(file) = foreign {
        bail!(not_an_output(dir, &file.display(), NOT_REMOVED));
    }
    match fs::remove_dir_all(dir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("{}: cannot remove", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Whether the file `path` (a local path or an object's URL) exists.
pub(crate) fn file_exists(path: &Path) -> Result<bool> {
    match object_file(path)? {
        Some((prefix, name)) => prefix.has(&name),
        None => Ok(path.is_file()),
    }
}

/// Removes the file `path` (a local path or an object's URL), if it is
/// there.
pub(crate) fn remove_file(path: &Path) -> Result<()> {
    match object_file(path)? {
        Some((prefix, name)) => prefix.delete(&name),
        None => match fs::remove_file(path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(error).with_context(|| format!("{}: cannot remove", path.display()))
            }
            _ => Ok(()),
        },
    }
}

/// The prefix and name of a file named by URL (`None`: local).
fn object_file(path: &Path) -> Result<Option<(OutputPrefix, String)>> {
    let shown = path.to_string_lossy();
    if !is_url(&shown) {
        return Ok(None);
    }
    match shown.trim_end_matches('/').rsplit_once('/') {
        Some((prefix, name)) => Ok(Some((OutputPrefix::parse_dir(prefix)?, name.to_string()))),
        None => bail!("{shown}: not a file's URL"),
    }
}

/// The error of a file `tmp` that cannot be made (`verb`: create, write).
/// In a staging directory that is not there, it is a process of a run
/// whose `--out` is not the one process 0 made (another disk, another
/// working directory).
pub(crate) fn cannot_write(tmp: &Path, verb: &str, error: std::io::Error) -> anyhow::Error {
    let parent = tmp.parent().unwrap_or(Path::new("."));
    let in_staging = parent.to_string_lossy().ends_with(".neardup-staging");
    let missing = error.kind() == std::io::ErrorKind::NotFound && !parent.exists();
    match (missing, in_staging) {
        (true, true) => anyhow!(
            "{}: no such staging directory here: --out must be on storage all processes share",
            parent.display()
        ),
        // The file's own name, not its temporary one, for a directory
        // that is not there.
        (true, false) => anyhow!("{}: no such directory", parent.display()),
        _ => anyhow!(error).context(format!("{}: cannot {verb}", tmp.display())),
    }
}

/// The name of process `process`'s mark in a staging directory.
fn process_mark(process: usize) -> String {
    format!("{PROCESS_MARK_PREFIX}{process}")
}

const PROCESS_MARK_PREFIX: &str = ".written-by-process-";

fn is_process_mark(part: &Path) -> bool {
    part.to_string_lossy().starts_with(PROCESS_MARK_PREFIX)
}

fn process_of_mark(mark: &Path) -> String {
    let name = mark.to_string_lossy();
    name.trim_start_matches(PROCESS_MARK_PREFIX).to_string()
}

/// Leaves this process's mark in the local staging directory `dir` of an
/// output that process 0 commits ([`Staging::expect_processes`]), or fails
/// as a write there would: the directory is not here, so this process
/// does not share `--out` with process 0. An output bound for an object
/// store needs none: each process uploads to the one prefix.
pub(crate) fn mark_process_present(out: &Path, dir: &Path, process: usize) -> Result<()> {
    if process == 0 || remote_target(out)?.is_some() {
        return Ok(());
    }
    let mark = dir.join(process_mark(process));
    File::create(&mark)
        .map(drop)
        .map_err(|e| cannot_write(&mark, "create", e).context(format!("process {process}")))
}

/// The temporary name of `path` while it is written: hidden, beside it.
pub(crate) fn temporary_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// File name of output part `p`.
pub(crate) fn part_name(p: usize) -> String {
    format!("part-{p:05}.parquet")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A staging directory bound for `prefix`, as [`Staging::create`] makes
    /// it for a URL.
    fn staging_for(prefix: &OutputPrefix, dir: &Path) -> Staging {
        lock(&REMOTE_STAGING).push((dir.to_path_buf(), prefix.clone()));
        Staging {
            target: PathBuf::from("memory:///out"),
            staging: dir.to_path_buf(),
            committed: false,
            remote: Some(prefix.clone()),
            abort_cleanup: None,
            expected: Vec::new(),
            overwrite: false,
            _lock: None,
        }
    }

    /// A directory removed while a thread keeps writing files in it is
    /// gone once the thread can write no more, and nothing is left beside it.
    #[test]
    fn a_directory_removed_while_written_leaves_nothing() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join(".out.neardup-staging");
        fs::create_dir(&dir).unwrap();
        let writer = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut written = 0;
                while written < 200_000
                    && fs::write(dir.join(format!("part-{written}")), "x").is_ok()
                {
                    written += 1;
                }
                written
            })
        };
        while fs::read_dir(&dir).map_or(true, |mut entries| entries.next().is_none()) {
            std::thread::yield_now();
        }
        remove_while_written(&dir);
        let written = writer.join().unwrap();
        assert!(written < 200_000, "the writer never stopped");
        let left: Vec<_> = fs::read_dir(parent.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// A file that cannot be written whole (a full disk: its temporary
    /// name leads to `/dev/full`) fails naming it and leaves no temporary.
    #[test]
    fn a_file_written_to_a_full_disk_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        let tmp = temporary_name(&path);
        std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
        let error = format!("{:#}", write_atomically(&path, b"<html>").unwrap_err());
        assert!(error.contains("No space left on device"), "{error}");
        assert!(!tmp.exists() && tmp.symlink_metadata().is_err() && !path.exists());
    }

    /// A staging of `target` holding one part, as a stage leaves it.
    fn staged(target: &Path, overwrite: bool) -> Staging {
        let staging = Staging::create(target, overwrite).unwrap();
        fs::write(staging.dir().join(part_name(0)), "part").unwrap();
        staging
    }

    /// What appeared at the target while a run wrote is left as it is:
    /// another program's directory without `--overwrite`, and with it, one
    /// holding a file no output holds.
    #[test]
    fn a_commit_leaves_what_appeared_at_its_target_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let staging = staged(&target, false);
        fs::create_dir_all(target.join("pairs")).unwrap();
        fs::write(target.join("pairs").join(SUCCESS), "").unwrap();
        let error = staging.commit().unwrap_err().to_string();
        assert!(error.contains("appeared while this run wrote"), "{error}");
        assert!(target.join("pairs").join(SUCCESS).exists());
        assert!(!target.join(SUCCESS).exists());

        let old = dir.path().join("old");
        staged(&old, false).commit().unwrap();
        let staging = staged(&old, true);
        fs::write(old.join("notes.txt"), "mine").unwrap();
        let error = staging.commit().unwrap_err().to_string();
        assert!(error.contains("not a neardup output"), "{error}");
        assert!(old.join("notes.txt").exists());
        fs::remove_file(old.join("notes.txt")).unwrap();
        staged(&old, true).commit().unwrap();
        assert!(old.join(SUCCESS).exists() && old.join(part_name(0)).exists());
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "staging or locks left: {left:?}");
    }

    /// A commit that cannot write `_SUCCESS` leaves nothing at the target
    /// (an old output replaced with `--overwrite` stays): it is written in
    /// staging, before the rename.
    #[test]
    fn a_commit_that_cannot_write_its_success_marker_leaves_the_target_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        for overwrite in [false, true] {
            let staging = staged(&target, overwrite);
            // A directory where the marker goes: creating it as a file fails.
            fs::create_dir(staging.dir().join(SUCCESS)).unwrap();
            let error = staging.commit().unwrap_err().to_string();
            assert!(error.contains("cannot write _SUCCESS"), "{error}");
            match overwrite {
                false => assert!(!target.exists()),
                true => assert_eq!(fs::read(target.join(part_name(0))).unwrap(), b"old"),
            }
            let old = staged(&target, true);
            fs::write(old.dir().join(part_name(0)), "old").unwrap();
            old.commit().unwrap();
        }
    }

    #[test]
    fn an_object_store_output_uploads_files_as_placed_and_a_failed_run_deletes_them() {
        let prefix = OutputPrefix::in_memory("memory:///out");
        let dir = tempfile::tempdir().unwrap();
        let staging = staging_for(&prefix, dir.path());
        let part = staging.dir().join("part-00000.parquet");
        write_atomically(&part, b"PAR1").unwrap();
        // Uploaded under its final name, and the local copy gone.
        assert!(prefix.has("part-00000.parquet").unwrap());
        assert!(!part.exists());
        // A subdirectory only process 0 made locally is made where needed.
        write_atomically(&staging.dir().join("drop/x.json"), b"{}").unwrap();
        assert!(prefix.has("drop/x.json").unwrap());
        assert!(!prefix.has(SUCCESS).unwrap());
        drop(staging);
        assert!(!prefix.exists().unwrap(), "a failed run leaves nothing");

        let prefix = OutputPrefix::in_memory("memory:///out");
        let dir = tempfile::tempdir().unwrap();
        let staging = staging_for(&prefix, dir.path());
        write_atomically(&staging.dir().join("part-00000.parquet"), b"PAR1").unwrap();
        staging.commit_with_summary(&"done").unwrap();
        for name in ["part-00000.parquet", "_summary.json", SUCCESS] {
            assert!(prefix.has(name).unwrap(), "{name}");
        }
        assert!(!dir.path().exists(), "the local staging is removed");
    }
}
