//! Paths and globs: what `--queries`, `--corpus`, `--input` and `--pairs`
//! name, expanded to files (local, or objects in a store).

use super::*;

/// Like [`expand_paths`] for Parquet files that may also be objects
/// (`s3://`, `gs://`, `az://`, `http(s)://`; see [`crate::io::storage`]):
/// in the order of `specs`, each spec's files sorted.
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
    for spec in specs {
        match is_url(spec) {
            true => files.extend(expand_remote(spec, extensions)?),
            false => files.extend(
                expand_paths_with(std::slice::from_ref(spec), extensions)?
                    .into_iter()
                    .map(Location::Local),
            ),
        }
    }
    Ok(files)
}

/// Like [`expand_paths`], taking from directories the files whose names end
/// in `.` and one of `extensions`. Local only: an object URL is refused.
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
                bail!(
                    "{spec}: directory contains no .{} files",
                    extensions.join(" or .")
                );
            }
        } else if path.is_file() {
            files.push(path.to_path_buf());
        } else if spec.contains(['*', '?', '[']) {
            let before = files.len();
            for entry in
                glob::glob(spec).with_context(|| format!("{spec}: invalid glob pattern"))?
            {
                let entry = entry.with_context(|| format!("{spec}: cannot read a match"))?;
                if entry.is_file() {
                    files.push(entry);
                }
            }
            if files.len() == before {
                bail!("{spec}: no files match this pattern");
            }
        } else {
            bail!("{spec}: no such file or directory");
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

pub(super) fn collect_files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list directory", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot list directory", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
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
    Ok(())
}
