//! One run at a time writes an output: process 0 holds a lock from staging
//! to commit ([`RunLock`]: a file beside the target that it `flock`s; in an
//! object store, an object inside the prefix, [`LOCK`], put with
//! `If-None-Match: *`, so that a role allowed only `out/*` can run), and a
//! second run on the same `--out` stops on one line rather than both
//! writing the one staging directory or prefix. A crashed run's lock file is free again;
//! its lock object is taken over if its process was of this host (gone,
//! or its pid now another process's: a lock records its process's start),
//! and otherwise named as the one to remove.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::Staging;
use crate::exec::runtime::AbortCleanup;
use crate::io::storage::{is_url, ExclusiveObject, LOCK};

/// A run's exclusive hold on an output: a file beside the target (or an
/// object inside its prefix), naming this host and process; removed on
/// drop.
///
/// A local lock file is also `flock`ed while held: the kernel releases it
/// however the process ends, so a crashed run's file is simply taken, and
/// two runs taking it at once cannot both win. An object has no such lock:
/// one whose process is gone from this host is taken over by a put made
/// only if the object is still the version read.
#[derive(Debug)]
pub(crate) struct RunLock {
    place: LockPlace,
    /// The directories made for a local lock, deepest first: removed with
    /// it while empty, so a run stopped before its first output leaves no
    /// empty night behind.
    made: Vec<PathBuf>,
    /// A local lock's open file, holding the `flock` until it is closed,
    /// after the file's removal.
    _held: Option<File>,
    /// Its removal if the process has to stop at once (a signal, a lost
    /// peer), while it is held.
    _on_abort: AbortCleanup,
}

/// Where a lock is: a local file, or an object in an object store.
#[derive(Clone)]
enum LockPlace {
    Local(PathBuf),
    Remote(ExclusiveObject),
}

impl std::fmt::Debug for LockPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockPlace::Local(path) => write!(f, "{}", path.display()),
            LockPlace::Remote(object) => write!(f, "{object}"),
        }
    }
}

impl LockPlace {
    /// The lock of `target`: a hidden sibling, as its staging is; in an
    /// object store, [`LOCK`] inside the prefix, unless it goes `beside`.
    fn of(target: &Path, beside: bool) -> Result<LockPlace> {
        let shown = target.to_string_lossy();
        if !is_url(&shown) {
            let staging = Staging::dir_for(target)?;
            return Ok(LockPlace::Local(staging.with_extension("neardup-lock")));
        }
        let url = shown.trim_end_matches('/');
        if !beside {
            return ExclusiveObject::parse(&format!("{url}/{LOCK}")).map(LockPlace::Remote);
        }
        let Some((parent, name)) = url.rsplit_once('/') else {
            bail!("{shown}: not an output's URL");
        };
        ExclusiveObject::parse(&format!("{parent}/.{name}.neardup-lock")).map(LockPlace::Remote)
    }

    fn remove(&self) {
        match self {
            LockPlace::Local(path) => {
                let _ = fs::remove_file(path);
            }
            LockPlace::Remote(object) => object.delete(),
        }
    }
}

/// The holder (`host pid`) of a lock that could not be taken.
struct HeldBy(String);

/// Attempts at a lock that other runs keep releasing and taking meanwhile.
const LOCK_TRIES: usize = 3;

impl RunLock {
    /// Takes the lock of `target` (a local path or an object store's URL),
    /// beside it, making a local target's parent directory first.
    pub(crate) fn take_beside(target: &Path, what: &str) -> Result<RunLock> {
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
        let made = match (is_url(&target.to_string_lossy()), parent) {
            (false, Some(parent)) => make_dirs(parent)?,
            _ => Vec::new(),
        };
        // Named by its directory: `target` is only the lock's name.
        let shown = parent.unwrap_or(Path::new("."));
        let taken = RunLock::take_making(target, shown, what, true, made.clone());
        if taken.is_err() {
            remove_empty_dirs(&made);
        }
        taken
    }

    /// Takes the lock of the output `target`, whose run is `what` (writing
    /// this output), or fails on one line naming the run that holds it.
    pub(super) fn take(target: &Path, what: &str) -> Result<RunLock> {
        RunLock::take_making(target, target, what, false, Vec::new())
    }

    /// [`Self::take`], the lock `beside` the target or not, with `made` the
    /// directories made for it, and the run's work named by `shown` in a
    /// refusal.
    fn take_making(
        target: &Path,
        shown: &Path,
        what: &str,
        beside: bool,
        made: Vec<PathBuf>,
    ) -> Result<RunLock> {
        let place = LockPlace::of(target, beside)?;
        let holder = this_holder();
        let taken = match &place {
            LockPlace::Local(path) => lock_file(path, &holder).map(|held| held.map(Some)),
            LockPlace::Remote(object) => {
                lock_object(object, &holder).map(|held| held.map(|()| None))
            }
        }
        .with_context(|| format!("{}: cannot take the lock for {what}", shown.display()))?;
        let _held = taken.map_err(|HeldBy(held_by)| {
            anyhow!(
                "{}: another run ({}) is {what}; if none is, remove {place:?}",
                shown.display(),
                describe_holder(&held_by),
            )
        })?;
        let (removed, dirs) = (place.clone(), made.clone());
        let _on_abort = crate::exec::runtime::on_abort(move || {
            removed.remove();
            remove_empty_dirs(&dirs);
        });
        Ok(RunLock {
            place,
            made,
            _held,
            _on_abort,
        })
    }
}

/// Makes `dir` and its missing parents; gives those it made, deepest first.
fn make_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .filter(|d| !d.as_os_str().is_empty())
        .take_while(|d| !d.exists())
        .map(Path::to_path_buf)
        .collect();
    fs::create_dir_all(dir)
        .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    Ok(missing)
}

/// Removes `dirs` (deepest first) as long as they are empty.
fn remove_empty_dirs(dirs: &[PathBuf]) {
    for dir in dirs {
        if fs::remove_dir(dir).is_err() {
            return;
        }
    }
}

/// Opens and `flock`s the lock file `path`, writing `holder` into it.
fn lock_file(path: &Path, holder: &str) -> Result<Result<File, HeldBy>> {
    for _ in 0..LOCK_TRIES {
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("{}: cannot create", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Ok(Err(HeldBy(fs::read_to_string(path).unwrap_or_default())))
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("{}: cannot lock", path.display()))
            }
        }
        // A run releasing the lock removes the file before closing it: the
        // lock just taken may be on a file no longer there.
        if !is_same_file(&file, path) {
            continue;
        }
        let written = file
            .set_len(0)
            .and_then(|()| std::io::Write::write_all(&mut file, holder.as_bytes()));
        if let Err(e) = written {
            // Ours, and empty or cut short (a full disk): none to leave behind.
            let _ = fs::remove_file(path);
            return Err(e).with_context(|| format!("{}: cannot write", path.display()));
        }
        return Ok(Ok(file));
    }
    bail!(
        "{}: cannot take the lock: other runs keep taking it",
        path.display()
    )
}

/// Whether the open `file` is the one at `path`.
fn is_same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Creates the lock object holding `holder`, or takes over a stale one.
fn lock_object(object: &ExclusiveObject, holder: &str) -> Result<Result<(), HeldBy>> {
    for _ in 0..LOCK_TRIES {
        if object.create(holder.as_bytes())? {
            return Ok(Ok(()));
        }
        // None: released since, so created next time round.
        let Some(seen) = object.read() else { continue };
        if !is_stale(&seen.text) {
            return Ok(Err(HeldBy(seen.text)));
        }
        tracing::warn!(lock = %object, "taking over the lock of a run that is gone");
        if object.replace(seen, holder.as_bytes())? {
            return Ok(Ok(()));
        }
    }
    bail!("{object}: cannot take the lock: other runs keep taking it")
}

impl Drop for RunLock {
    fn drop(&mut self) {
        self.place.remove();
        remove_empty_dirs(&self.made);
    }
}

/// This host's name, as a lock records it.
pub(super) fn host_name() -> String {
    let mut name = [0u8; 256];
    // SAFETY: the buffer is valid for its length, and terminated below.
    let ok = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len() - 1) } == 0;
    let end = name.iter().position(|&b| b == 0).unwrap_or(0);
    match ok {
        true => String::from_utf8_lossy(&name[..end]).into_owned(),
        false => "unknown-host".to_string(),
    }
}

/// This process as a lock names it: `host pid@start`, its start in the
/// kernel's clock ticks since boot (where `/proc` tells it), so that the
/// same pid used again is not taken for the holder: in a container,
/// neardup is often pid 1, in every pod that runs after a killed one.
fn this_holder() -> String {
    let pid = std::process::id();
    match process_start(pid as libc::pid_t) {
        Some(start) => format!("{} {pid}@{start}", host_name()),
        None => format!("{} {pid}", host_name()),
    }
}

/// When process `pid` started, in clock ticks since boot (field 22 of
/// `/proc/PID/stat`, after the command name, which may hold spaces).
fn process_start(pid: libc::pid_t) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Whether a lock's `holder` (`host pid`, or `host pid@start`) is a
/// process of this host that no longer runs, or whose pid another process
/// has taken since. One on another host cannot be checked from here.
fn is_stale(holder: &str) -> bool {
    let Some((host, pid, start)) = holder_parts(holder) else {
        return false;
    };
    let start = start.and_then(|start| start.parse::<u64>().ok());
    let Ok(pid) = pid.parse::<libc::pid_t>() else {
        return false;
    };
    let reused = || start.is_some_and(|start| process_start(pid).is_some_and(|now| now != start));
    host == host_name() && (is_gone(pid) || reused())
}

/// Whether no process `pid` runs on this host.
fn is_gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let refused = unsafe { libc::kill(pid, 0) } != 0;
    refused && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes the local stagings in `tmp` named `{of_target}{pid}` whose
/// process is gone: a run killed outright (SIGKILL, the OOM killer) of
/// the same output on this host, which could not remove its own.
pub(super) fn remove_stale_staging(tmp: &Path, of_target: &str) {
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|name| name.strip_prefix(of_target));
        if let Some(Ok(pid)) = pid.map(str::parse::<libc::pid_t>) {
            if is_gone(pid) {
                tracing::info!(dir = %entry.path().display(), "removing a killed run's staging");
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// A lock's holder in words: "process 123 on host-a".
fn describe_holder(holder: &str) -> String {
    match holder_parts(holder) {
        Some((host, pid, _)) => format!("process {pid} on {host}"),
        None => "unknown".to_string(),
    }
}

/// A lock's holder, `host pid` or `host pid@start`, as `(host, pid, start)`.
fn holder_parts(holder: &str) -> Option<(&str, &str, Option<&str>)> {
    let (host, process) = holder.trim().rsplit_once(' ')?;
    Some(match process.split_once('@') {
        Some((pid, start)) => (host, pid, Some(start)),
        None => (host, process, None),
    })
}

/// Copies a file (local, or an object) to `path` through a temporary name,
/// as every output file is placed; returns the bytes copied.
#[cfg(test)]
mod tests {
    use super::*;

    /// A lock's holder text naming a process of this host that has ended.
    fn gone_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    }

    fn gone_holder() -> String {
        format!("{} {}", host_name(), gone_pid())
    }

    /// How many of `runs` threads, started together, take a lock with
    /// `take`, each holding what it took until all have tried.
    fn winners<T: Send>(runs: usize, take: impl Fn(usize) -> Option<T> + Sync) -> usize {
        let barrier = std::sync::Barrier::new(runs);
        std::thread::scope(|scope| {
            let tries: Vec<_> = (0..runs)
                .map(|run| {
                    let (take, barrier) = (&take, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        let held = take(run);
                        barrier.wait();
                        held.is_some()
                    })
                })
                .collect();
            tries
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|&won| won)
                .count()
        })
    }

    #[test]
    fn a_lock_file_is_held_by_one_run_and_free_once_its_holder_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("pairs");
        let file = dir.path().join(".pairs.neardup-lock");
        let held = RunLock::take(&target, "writing this output").unwrap();
        let holder = format!("process {} on {}", std::process::id(), host_name());
        let refused = RunLock::take(&target, "writing this output").unwrap_err();
        assert!(refused.to_string().contains(&holder), "{refused}");
        drop(held);
        assert!(!file.exists(), "released");

        // A file left by a crash holds no lock, whoever it names.
        for left in [gone_holder(), this_holder()] {
            fs::write(&file, left).unwrap();
            let taken = RunLock::take(&target, "writing this output").unwrap();
            let text = fs::read_to_string(&file).unwrap();
            assert_eq!(text, this_holder());
            drop(taken);
        }

        // Runs taking it at once, over and over: one wins each time.
        for round in 0..20 {
            fs::write(&file, gone_holder()).unwrap();
            let won = winners(4, |_| RunLock::take(&target, "writing this output").ok());
            assert_eq!(won, 1, "round {round}");
        }
    }

    #[test]
    fn a_killed_runs_staging_of_the_same_output_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let (gone, live) = (child.id(), std::process::id());
        let of_target = format!("neardup-staging-00ff-{}-", host_name());
        let names = [
            format!("{of_target}{gone}"),
            format!("{of_target}{live}"),
            format!("neardup-staging-00ff-another-host-{gone}"),
            format!("neardup-staging-0aaa-{}-{gone}", host_name()),
        ];
        for name in &names {
            fs::create_dir(tmp.path().join(name)).unwrap();
        }
        remove_stale_staging(tmp.path(), &of_target);
        let left: Vec<bool> = names.iter().map(|n| tmp.path().join(n).exists()).collect();
        assert_eq!(
            left,
            [false, true, true, true],
            "only the gone process's, of this output and host"
        );
    }

    #[test]
    fn a_lock_beside_removes_the_directories_it_made_while_empty() {
        let dir = tempfile::tempdir().unwrap();
        let night = dir.path().join("nights/2026-12-06");
        let target = night.join("pairs.night");
        drop(RunLock::take_beside(&target, "running this night").unwrap());
        assert!(
            !dir.path().join("nights").exists(),
            "both made, both removed"
        );

        let held = RunLock::take_beside(&target, "running this night").unwrap();
        fs::create_dir(night.join("fingerprints")).unwrap();
        drop(held);
        assert!(
            night.join("fingerprints").exists(),
            "a stage's output stays"
        );

        fs::remove_dir(night.join("fingerprints")).unwrap();
        let held = RunLock::take_beside(&target, "running this night").unwrap();
        drop(held);
        assert!(night.exists(), "a directory it found is not its to remove");
    }

    #[test]
    fn a_lock_naming_a_running_pid_that_started_later_is_stale() {
        let pid = std::process::id();
        let start = process_start(pid as libc::pid_t).expect("/proc on Linux");
        let host = host_name();
        assert_eq!(this_holder(), format!("{host} {pid}@{start}"));
        assert!(!is_stale(&this_holder()));
        // A pod started again after a kill: its pid 1 is another process.
        assert!(is_stale(&format!(
            "{host} {pid}@{}",
            start.saturating_sub(1)
        )));
        assert!(!is_stale(&format!("another-host {pid}@{}", start + 1)));
        assert!(is_stale(&format!("{host} {}@{start}", gone_pid())));
        assert_eq!(
            describe_holder(&this_holder()),
            format!("process {pid} on {host}")
        );
    }

    #[test]
    fn a_stale_lock_object_is_taken_over_by_one_run() {
        let object = ExclusiveObject::in_memory("memory:///.pairs.neardup-lock");
        assert!(object.create(b"host-a 1").unwrap());
        assert!(!object.create(b"host-b 2").unwrap(), "exclusive");
        // Two runs read the same stale version: the first put wins.
        let (first, second) = (object.read().unwrap(), object.read().unwrap());
        assert!(object.replace(first, b"host-c 3").unwrap());
        assert!(!object.replace(second, b"host-d 4").unwrap());
        assert_eq!(object.read().unwrap().text, "host-c 3");

        let live = this_holder();
        for round in 0..20 {
            object.delete();
            assert!(object.create(gone_holder().as_bytes()).unwrap());
            let won = winners(4, |_| {
                matches!(lock_object(&object, &live), Ok(Ok(()))).then_some(())
            });
            assert_eq!(won, 1, "round {round}");
        }
        // One whose process runs, or of another host, is not taken over:
        // in the format before start times too.
        let pid = std::process::id();
        let live_without_start = format!("{} {pid}", host_name());
        for held in [live, live_without_start, "another-host 1".to_string()] {
            object.delete();
            assert!(object.create(held.as_bytes()).unwrap());
            assert!(matches!(lock_object(&object, "me 1"), Ok(Err(HeldBy(by))) if by == held));
        }
    }
}
