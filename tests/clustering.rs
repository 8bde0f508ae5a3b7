//! `neardup cluster` against a union-find oracle, across workers and
//! processes, and the keep/drop policy on a hand-made graph.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use arrow_array::{Array, Int64Array};
use neardup::cluster::ClusterOptions;
use neardup::clustering::{run_cluster, ClusterJobOptions};
use neardup::gen::SplitMix64;
use neardup::pairs::Pair;
use neardup::parquet_io::output::write_pairs;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A pair-graph edge: (query_id, corpus_id, self_pair).
type Edge = (i64, i64, bool);

/// Writes edges as `match` output parts (the columns `cluster` reads).
fn write_edges(dir: &Path, edges: &[Edge], parts: usize) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let per = edges.len().div_ceil(parts).max(1);
    for (i, chunk) in edges.chunks(per).enumerate() {
        let mut pairs: Vec<Pair> = chunk
            .iter()
            .map(|&(q, c, self_pair)| Pair {
                query_id: q,
                corpus_id: c,
                query_simhash: 0,
                corpus_simhash: 0,
                distance: 0,
                self_pair,
            })
            .collect();
        pairs.sort();
        write_pairs(&dir.join(format!("part-{i:05}.parquet")), &pairs).unwrap();
    }
    dir.display().to_string()
}

/// Union-find with path halving.
struct UnionFind(HashMap<i64, i64>);

impl UnionFind {
    fn find(&mut self, x: i64) -> i64 {
        let mut x = *self.0.entry(x).or_insert(x);
        loop {
            let parent = self.0[&x];
            if parent == x {
                return x;
            }
            let grand = self.0[&parent];
            self.0.insert(x, grand);
            x = grand;
        }
    }

    fn union(&mut self, a: i64, b: i64) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0.insert(ra.max(rb), ra.min(rb));
        }
    }
}

/// The expected `clusters/` rows, `(id, cluster_id, cluster_size)` by id,
/// under the documented policy.
fn oracle(edges: &[Edge], corpus_wins: bool) -> ClusterRows {
    let mut uf = UnionFind(HashMap::new());
    let mut in_corpus = HashSet::new();
    for &(q, c, self_pair) in edges {
        uf.union(q, c);
        if !self_pair {
            in_corpus.insert(c);
        }
    }
    let ids: Vec<i64> = uf.0.keys().copied().collect();
    let mut members: HashMap<i64, Vec<i64>> = HashMap::new();
    for id in ids {
        let root = uf.find(id);
        members.entry(root).or_default().push(id);
    }
    let mut rows = Vec::new();
    for pages in members.values() {
        let rank = |id: &i64| (u8::from(!(corpus_wins && in_corpus.contains(id))), *id);
        let keep = *pages.iter().min_by_key(|id| rank(id)).unwrap();
        rows.extend(pages.iter().map(|&id| (id, keep, pages.len() as u64)));
    }
    rows.sort_unstable();
    rows
}

fn read_columns(dir: &Path) -> Vec<Vec<i64>> {
    let mut columns: Vec<Vec<i64>> = Vec::new();
    for part in common::part_files(dir) {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&part).unwrap())
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            columns.resize(batch.num_columns(), Vec::new());
            for (i, column) in batch.columns().iter().enumerate() {
                let values = column.as_any().downcast_ref::<Int64Array>().unwrap();
                assert_eq!(values.null_count(), 0);
                columns[i].extend(values.values().iter());
            }
        }
    }
    columns
}

/// `clusters/` rows: `(id, cluster_id, cluster_size)`.
type ClusterRows = Vec<(i64, i64, u64)>;
/// `drop/` rows: `(id, keep_id)`.
type DropRows = Vec<(i64, i64)>;

/// `clusters/` rows sorted by id, and `drop/` rows sorted by id.
fn read_output(out: &Path) -> (ClusterRows, DropRows) {
    let c = read_columns(&out.join("clusters"));
    let mut clusters: Vec<(i64, i64, u64)> = if c.is_empty() {
        Vec::new()
    } else {
        (0..c[0].len())
            .map(|r| (c[0][r], c[1][r], c[2][r] as u64))
            .collect()
    };
    clusters.sort_unstable();
    let d = read_columns(&out.join("drop"));
    let mut drops: Vec<(i64, i64)> = if d.is_empty() {
        Vec::new()
    } else {
        (0..d[0].len()).map(|r| (d[0][r], d[1][r])).collect()
    };
    drops.sort_unstable();
    (clusters, drops)
}

fn cluster(pairs: &str, out: &Path, corpus_wins: bool, workers: usize, parts: usize) {
    let mut opts = ClusterJobOptions::new(vec![pairs.to_string()], out.to_path_buf());
    opts.corpus_wins = corpus_wins;
    opts.cluster = ClusterOptions::local(workers);
    opts.parts = parts;
    opts.overwrite = true;
    run_cluster(&opts).unwrap();
    assert!(out.join("_SUCCESS").exists());
}

fn check_against_oracle(edges: &[Edge], name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_edges(&dir.path().join("pairs"), edges, 3);
    for corpus_wins in [false, true] {
        let expected = oracle(edges, corpus_wins);
        let expected_drops: Vec<(i64, i64)> = expected
            .iter()
            .filter(|(id, keep, _)| id != keep)
            .map(|&(id, keep, _)| (id, keep))
            .collect();
        let out = dir.path().join(format!("out-{corpus_wins}"));
        cluster(&pairs, &out, corpus_wins, 2, 3);
        let (clusters, drops) = read_output(&out);
        assert_eq!(clusters, expected, "{name}, corpus_wins {corpus_wins}");
        assert_eq!(drops, expected_drops, "{name}, corpus_wins {corpus_wins}");
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
        let sizes: BTreeMap<i64, u64> = expected.iter().map(|&(_, k, s)| (k, s)).collect();
        assert_eq!(summary["clusters"], sizes.len() as u64, "{name}");
        assert_eq!(
            summary["largest_cluster"],
            sizes.values().max().copied().unwrap_or(0)
        );
        assert_eq!(summary["pairs"], edges.len() as u64);
    }
}

/// Random edges over `nodes` ids; `self_every`-th edges are `--self` pairs.
fn random_edges(rng: &mut SplitMix64, nodes: u64, edges: usize, first: i64) -> Vec<Edge> {
    (0..edges)
        .map(|i| {
            let q = first + rng.below(nodes) as i64;
            let c = first + rng.below(nodes) as i64;
            (q, c, i % 3 == 0)
        })
        .collect()
}

#[test]
fn many_small_components() {
    let mut rng = SplitMix64::new(1);
    check_against_oracle(&random_edges(&mut rng, 20_000, 6_000, 0), "sparse");
}

#[test]
fn one_giant_component_with_small_ones() {
    let mut rng = SplitMix64::new(2);
    let mut edges = random_edges(&mut rng, 2_000, 8_000, 0);
    edges.extend(random_edges(&mut rng, 30_000, 5_000, 1_000_000));
    check_against_oracle(&edges, "giant");
}

#[test]
fn long_chains_self_loops_and_repeated_edges() {
    let mut edges: Vec<Edge> = (0..3_000).map(|i| (i, i + 1, i % 2 == 0)).collect();
    edges.extend((0..500).map(|i| (10_000 + 2 * i, 10_000 + 2 * i + 2, false)));
    edges.extend((0..200).map(|i| (50_000 + i, 50_000 + i, false)));
    edges.extend((0..1_000).map(|i| (i % 7, (i % 7) + 100, true)));
    edges.extend_from_slice(&edges.clone()[..700]);
    // Reversed copies: the graph is undirected.
    edges.extend((0..300).map(|i| (i + 1, i, false)));
    check_against_oracle(&edges, "chains");
}

#[test]
fn negative_and_extreme_ids() {
    let edges = vec![
        (i64::MIN, -5, false),
        (-5, 0, true),
        (i64::MAX, i64::MAX - 1, false),
        (-1, 1, true),
    ];
    check_against_oracle(&edges, "extreme ids");
}

#[test]
fn keep_drop_policy_on_a_hand_made_graph() {
    // new pages: 2, 4, 5, 7, 10, 20, 50, 55; corpus pages: 9, 30, 40, 50, 60.
    let edges = vec![
        (5, 9, false), // new 5 copies corpus 9
        (5, 7, true),  // new 5 and new 7 copy each other
        (2, 4, true),  // two new pages only
        (20, 30, false),
        (20, 40, false),
        (50, 60, false), // 50 is new tonight and (below) also in the corpus
        (55, 50, false),
    ];
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let out = dir.path().join("corpus-wins");
    cluster(&pairs, &out, true, 1, 1);
    let (clusters, drops) = read_output(&out);
    assert_eq!(
        clusters,
        vec![
            (2, 2, 2),
            (4, 2, 2),
            (5, 9, 3),
            (7, 9, 3),
            (9, 9, 3),
            (20, 30, 3),
            (30, 30, 3),
            (40, 30, 3),
            (50, 50, 3),
            (55, 50, 3),
            (60, 50, 3),
        ]
    );
    assert_eq!(
        drops,
        vec![
            (4, 2),
            (5, 9),
            (7, 9),
            (20, 30),
            (40, 30),
            (55, 50),
            (60, 50)
        ]
    );
    // Without --corpus-wins the smallest id is kept.
    let out = dir.path().join("smallest");
    cluster(&pairs, &out, false, 1, 1);
    let (clusters, _) = read_output(&out);
    let keep: BTreeMap<i64, i64> = clusters.iter().map(|&(id, k, _)| (id, k)).collect();
    assert_eq!((keep[&9], keep[&40], keep[&60]), (5, 20, 50));
}

fn data_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for sub in ["clusters", "drop"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let name = format!("{sub}/{}", path.file_name().unwrap().to_string_lossy());
            files.push((name, std::fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

#[test]
fn same_bytes_for_1_2_and_4_workers_and_2_processes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(3);
    let edges = random_edges(&mut rng, 5_000, 4_000, 0);
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 4);
    let base = dir.path().join("w1");
    cluster(&pairs, &base, true, 1, 3);
    let expected = data_files(&base);
    for workers in [2, 4] {
        let out = dir.path().join(format!("w{workers}"));
        cluster(&pairs, &out, true, workers, 3);
        assert_eq!(data_files(&out), expected, "{workers} workers");
    }
    let hosts = dir.path().join("hosts");
    let listeners: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut file = File::create(&hosts).unwrap();
    for l in &listeners {
        writeln!(file, "{}", l.local_addr().unwrap()).unwrap();
    }
    drop(listeners);
    let out = dir.path().join("p2");
    let spawned: Vec<_> = (0..2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_neardup"))
                .args([
                    "cluster",
                    "--corpus-wins",
                    "--parts",
                    "3",
                    "--overwrite",
                    "--pairs",
                    &pairs,
                ])
                .arg("--out")
                .arg(&out)
                .arg("--hostfile")
                .arg(&hosts)
                .args(["--process", &i.to_string(), "--workers", "2"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in spawned {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(data_files(&out), expected, "2 processes");
}

#[test]
fn oversized_clusters_are_warned_about_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut edges: Vec<Edge> = (0..40).map(|i| (i, i + 1, true)).collect();
    edges.extend((100..110).map(|i| (i, i + 1, true)));
    edges.push((200, 201, false));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["cluster", "--max-cluster-size", "5", "--pairs", &pairs])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("2 cluster(s) have more than 5 pages"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
    assert_eq!(summary["oversized_clusters"], 2);
    assert_eq!(summary["oversized"][0]["cluster_id"], 0);
    assert_eq!(summary["oversized"][0]["size"], 41);
    assert_eq!(summary["oversized"][1]["cluster_id"], 100);
    assert_eq!(summary["size_histogram"][0]["clusters"], 1); // {200, 201}
}

#[test]
fn input_that_is_not_match_output_gets_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("shard.parquet");
    common::write_shard(&shard, &[(1, 2), (3, 4)]);
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["cluster", "--pairs"])
        .arg(&shard)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no column `query_id`"), "{stderr}");
    assert!(!dir.path().join("out").exists());
}
