//! The layout's rule, read from the code: three stages (`fingerprint`,
//! `matching`, `cluster`), each a folder, over shared parts (`io`, `exec`,
//! `random`); a stage imports only shared parts, a shared part imports no
//! stage, and no two top-level modules import each other, however
//! indirectly. Imports are the `crate::` paths of `src/` (comments left
//! out).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const STAGES: [&str; 3] = ["fingerprint", "matching", "cluster"];
const SHARED: [&str; 3] = ["io", "exec", "random"];

/// Every top-level module's imports of other top-level modules, each with
/// a file that makes it.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .to_string();
            let module = relative.split(['/', '.']).next().unwrap().to_string();
            let code: String = std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .map(|line| line.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            for used in crate_paths(&code) {
                if used != module {
                    found
                        .entry(module.clone())
                        .or_default()
                        .entry(used)
                        .or_insert_with(|| relative.clone());
                }
            }
        }
    }
    found
}

/// The top-level modules `code` names after `crate::`, also inside
/// `crate::{a::x, b}` groups.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut used = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut start) = (0, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start => {
                        used.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            used.insert(ident(rest));
        }
    }
    used.retain(|name| !name.is_empty());
    used
}

#[test]
fn stages_import_only_shared_parts_and_shared_parts_import_no_stage() {
    let mut wrong = Vec::new();
    for (module, used) in imports() {
        for (other, file) in used {
            let stage = STAGES.contains(&module.as_str());
            let shared = SHARED.contains(&module.as_str());
            if (stage || shared) && !SHARED.contains(&other.as_str()) {
                wrong.push(format!("{module} imports {other} ({file})"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let imports = imports();
    // A module on a cycle reaches itself.
    for start in imports.keys() {
        let mut seen = BTreeSet::new();
        let mut next: Vec<&String> = imports[start].keys().collect();
        while let Some(module) = next.pop() {
            assert!(module != start, "{start} imports itself through {seen:?}");
            if seen.insert(module.clone()) {
                next.extend(imports.get(module).into_iter().flat_map(|m| m.keys()));
            }
        }
    }
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let code = "use crate::io::parquet;\nuse crate::{exec::parallel::lock, gen::{self, X}};";
    let found: Vec<String> = crate_paths(code).into_iter().collect();
    assert_eq!(found, ["exec", "gen", "io"]);
}

/// The prefixes of the `crate::` paths named in the `.rs` files under
/// `src/{dir}` (comments left out), each with a file that names it.
fn paths_under(dir: &str, prefix: &str) -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let files: Vec<_> = match root.is_dir() {
        true => std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect(),
        false => vec![root.with_extension("rs")],
    };
    let mut found = BTreeMap::new();
    for file in files {
        let code = std::fs::read_to_string(&file).unwrap();
        for line in code.lines().map(|l| l.split("//").next().unwrap_or("")) {
            for (at, _) in line.match_indices(prefix) {
                let rest = &line[at + prefix.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.insert(name, file.display().to_string());
            }
        }
    }
    found
}

#[test]
fn lower_parts_of_a_folder_import_none_above_them() {
    // The union-find knows nothing of drop policies, joins or outputs (it
    // holds each page's keep keys, their encoding `keep_order`'s); the
    // storage layer nothing of Parquet.
    for (dir, prefix, allowed) in [
        (
            "cluster/components",
            "crate::cluster::",
            &["components", "keep_order"][..],
        ),
        ("io/storage", "crate::io::", &["storage"]),
    ] {
        for (name, file) in paths_under(dir, prefix) {
            assert!(
                allowed.contains(&name.as_str()),
                "{file} imports {prefix}{name}"
            );
        }
    }
}
