//! Paths and globs: what `--queries`, `--corpus`, `--input` and `--pairs`
//! name, expanded to files (local, or objects in a store).

use std::collections::HashSet;

use super::*;
use crate::io::storage::{
    is_unfinished, object_place, reaches_hidden, split_glob, unfinished_output, NoFiles,
    OUTPUT_MARKERS, SUCCESS,
};

/// The Parquet files `specs` name, local or objects (`s3://`, `gs://`,
/// `az://`, `http(s)://`; see [`crate::io::storage`]): in the order of
/// `specs`, each spec's files sorted.
pub fn expand_locations(specs: &[String]) -> Result<Vec<Location>> {
    expand_locations_with(specs, &["parquet"])
}

/// Like [`expand_locations`], taking from directories and prefixes the
/// files whose names end in `.` and one of `extensions`.
pub(crate) fn expand_locations_with(
    specs: &[String],
    extensions: &[&str],
) -> Result<Vec<Location>> {
    let mut files = Vec::new();
    let mut seen = HashSet::new();
    for spec in specs {
        let found = match is_url(spec) {
            true => expand_remote(spec, extensions)?,
            false => expand_paths_with(std::slice::from_ref(spec), extensions)?
                .into_iter()
                .map(Location::Local)
                .collect(),
        };
        files.extend(not_seen(spec, found, &mut seen));
    }
    Ok(files)
}

/// The files of `found` (what `spec` names) that no earlier spec named,
/// by [`place`], each added to `seen`: a file named twice (`--corpus a
/// --corpus a/part-0.parquet`, or a directory and a glob into it) is
/// read once, not counted and matched twice.
pub(crate) fn not_seen(
    spec: &str,
    found: Vec<Location>,
    seen: &mut HashSet<String>,
) -> Vec<Location> {
    let before = found.len();
    let new: Vec<Location> = found
        .into_iter()
        .filter(|file| seen.insert(place(&file.to_string())))
        .collect();
    if new.len() < before {
        let again = before - new.len();
        tracing::warn!("{spec}: {again} file(s) named by an earlier path too; each is read once");
    }
    new
}

/// The local files `specs` name, taking from directories the files whose
/// names end in `.` and one of `extensions`. An object URL is refused.
pub(crate) fn expand_paths_with(specs: &[String], extensions: &[&str]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for spec in specs {
        if is_url(spec) {
            bail!("{spec}: only local files can be read here, not objects");
        }
        let path = Path::new(spec);
        if path.is_dir() {
            let before = files.len();
            collect_files(path, extensions, &mut files)?;
            if files.len() == before {
                bail!(NoFiles(format!(
                    "{spec}: directory contains no .{} files",
                    extensions.join(" or .")
                )));
            }
        } else if path.is_file() {
            refuse_unfinished_parent(path)?;
            files.push(path.to_path_buf());
        } else if spec.contains(['*', '?', '[']) {
            let before = files.len();
            // As Spark reads a glob: a matched directory is read as a
            // directory input, and what a wildcard reached through a name
            // starting `_` or `.` (a `_SUCCESS`, a killed run's staging
            // directory) is skipped.
            for entry in
                glob::glob(spec).with_context(|| format!("{spec}: invalid glob pattern"))?
            {
                let entry = entry.with_context(|| format!("{spec}: cannot read a match"))?;
                if reaches_hidden(spec, &entry.to_string_lossy()) {
                    continue;
                }
                if entry.is_dir() {
                    collect_files(&entry, extensions, &mut files)?;
                } else if entry.is_file() {
                    refuse_unfinished_parent(&entry)?;
                    files.push(entry);
                }
            }
            if files.len() == before {
                bail!(NoFiles(format!("{spec}: no files match this pattern")));
            }
        } else {
            bail!(NoFiles(format!("{spec}: no such file or directory")));
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Refuses a file named alone (or by a glob) in a neardup output without
/// `_SUCCESS`, as its directory is refused.
fn refuse_unfinished_parent(file: &Path) -> Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let present = OUTPUT_MARKERS.into_iter().chain([SUCCESS]);
    if is_unfinished(present.filter(|name| dir.join(name).exists())) {
        bail!(unfinished_output(&dir.display().to_string()));
    }
    Ok(())
}

pub(super) fn collect_files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list directory", dir.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot list directory", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('_') {
            names.push(name.to_string());
        }
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, extensions, out)?;
        } else if extensions.iter().any(|e| has_extension(&name, e)) {
            out.push(path);
        }
    }
    if is_unfinished(names.iter().map(String::as_str)) {
        bail!(unfinished_output(&dir.display().to_string()));
    }
    Ok(())
}

/// Refuses an output that is one of `inputs`, holds one, or lies inside an
/// input directory (or one a glob reaches into): `--overwrite` would delete
/// the input, and the next run would read the output as input.
pub(crate) fn refuse_output_over_inputs<'a>(
    out: &Path,
    inputs: impl IntoIterator<Item = &'a String>,
) -> Result<()> {
    let shown = out.display();
    let out = place(&out.to_string_lossy());
    for spec in inputs {
        if overlaps(&out, spec) {
            bail!("{shown}: the output overlaps the input {spec}; give it a path of its own");
        }
    }
    Ok(())
}

/// Whether one of the two places is the other or lies inside it.
pub(crate) fn nested(a: &Path, b: &Path) -> bool {
    nested_places(&place(&a.to_string_lossy()), &place(&b.to_string_lossy()))
}

fn nested_places(a: &str, b: &str) -> bool {
    within(a, b) || within(b, a)
}

/// Whether the output at `out` (a [`place`]) and the input `spec` overlap.
fn overlaps(out: &str, spec: &str) -> bool {
    let Some((literal, pattern)) = split_glob(spec) else {
        return nested_places(out, &place(spec));
    };
    let input = place(if literal.is_empty() { "." } else { literal });
    if within(&input, out) {
        return true;
    }
    // Below the literal part, the glob reaches `out` (or inside it) when
    // each of its parts matches `out`'s part at the same depth.
    let Some(below) = out.strip_prefix(&input).and_then(|b| b.strip_prefix('/')) else {
        return false;
    };
    pattern
        .split('/')
        .zip(below.split('/'))
        .all(|(part, name)| part == "**" || glob::Pattern::new(part).is_ok_and(|p| p.matches(name)))
}

/// Whether `inner` is `outer` or lies inside it; both are [`place`]s.
fn within(inner: &str, outer: &str) -> bool {
    inner
        .strip_prefix(outer)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A path or URL as one comparable string without a trailing `/`: a URL
/// as [`object_place`] spells it, a local path made absolute with the part
/// that exists resolved (symlinks included), so `out`, `./out/` and a link
/// to it are one place, as are `s3a://b/x/./y` and `s3://b/x/y`.
fn place(spec: &str) -> String {
    let text = match is_url(spec) {
        true => object_place(spec).unwrap_or_else(|| spec.to_string()),
        false => resolved(Path::new(spec)).to_string_lossy().into_owned(),
    };
    text.trim_end_matches('/').to_string()
}

/// `path` made absolute, its longest existing ancestor canonicalized.
fn resolved(path: &Path) -> PathBuf {
    let absolute = clean(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
    let mut existing = absolute.as_path();
    let mut missing = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// `a/b/../c` as `a/c`, lexically: a job spec's paths name directories,
/// not symlinks to climb, and messages show paths as the user means them.
pub(crate) fn clean(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}
