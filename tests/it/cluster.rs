//! `neardup cluster` against a union-find oracle, across workers and
//! processes, and the keep/drop policy on a hand-made graph.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, Int64Array, Int8Array};
use neardup::cluster::drop_policy::DropPolicy;
use neardup::cluster::keep_order::KeepOrder;
use neardup::cluster::{run_cluster, ClusterOptions};
use neardup::exec::runtime::RuntimeOptions;
use neardup::io::pairs::Pair;
use neardup::io::parquet::output::write_pairs;
use neardup::random::SplitMix64;

use crate::common::parquet_batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A pair-graph edge: (query_id, corpus_id, self_pair).
type Edge = (i64, i64, bool);

/// The distance a test gives the pair of `a` and `b`: 0 to 3, the same in
/// both directions, and varied enough that "nearest partner" matters.
fn distance(a: i64, b: i64) -> u8 {
    let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
    let mixed = (lo.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ hi).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (mixed >> 62) as u8
}

/// Writes edges as `match` output parts (the columns `cluster` reads).
fn write_edges(dir: &Path, edges: &[Edge], parts: usize) -> String {
    write_edges_as(dir, edges, parts, false)
}

/// [`write_edges`], as `match --verify` writes them if `verified` (with
/// [`wide_distance`]).
fn write_edges_as(dir: &Path, edges: &[Edge], parts: usize, verified: bool) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let per = edges.len().div_ceil(parts).max(1);
    for (i, chunk) in edges.chunks(per).enumerate() {
        write_part(&dir.join(format!("part-{i:05}.parquet")), chunk, verified);
    }
    dir.display().to_string()
}

/// Writes one `match` output part of `edges`.
fn write_part(path: &Path, edges: &[Edge], verified: bool) {
    let mut pairs: Vec<Pair> = edges
        .iter()
        .map(|&(q, c, self_pair)| Pair {
            query_id: q,
            corpus_id: c,
            query_simhash: 0,
            corpus_simhash: 0,
            distance: distance(q, c),
            self_pair,
            wide_distance: verified.then(|| wide_distance(q, c)),
        })
        .collect();
    pairs.sort();
    write_pairs(path, &pairs, verified).unwrap();
}

/// Union-find with path halving, over ids: the oracle's own, sharing no
/// code with neardup's.
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

/// Pages already in the corpus: the corpus side of a pair that is not a
/// `--self` pair (a pair of a page with itself is passed over whole).
fn corpus_pages(edges: &[Edge]) -> HashSet<i64> {
    edges
        .iter()
        .filter(|e| !e.2 && e.0 != e.1)
        .map(|e| e.1)
        .collect()
}

/// Priority order's key: corpus pages first under `--corpus-wins`, then ids.
fn priority(corpus_wins: bool, in_corpus: &HashSet<i64>) -> impl Fn(i64) -> (bool, i64) + '_ {
    move |id| (!(corpus_wins && in_corpus.contains(&id)), id)
}

/// The expected `clusters/` rows, `(id, cluster_id, cluster_size)` by id,
/// under the documented policy.
fn oracle(edges: &[Edge], corpus_wins: bool) -> ClusterRows {
    let in_corpus = corpus_pages(edges);
    oracle_by(edges, priority(corpus_wins, &in_corpus))
}

/// [`oracle`] with pages ordered by `rank` (the least is kept).
fn oracle_by<K: Ord>(edges: &[Edge], rank: impl Fn(i64) -> K) -> ClusterRows {
    let mut uf = UnionFind(HashMap::new());
    // A page paired with itself is passed over: it makes no cluster.
    for &(q, c, _) in edges.iter().filter(|e| e.0 != e.1) {
        uf.union(q, c);
    }
    let ids: Vec<i64> = uf.0.keys().copied().collect();
    let mut members: HashMap<i64, Vec<i64>> = HashMap::new();
    for id in ids {
        let root = uf.find(id);
        members.entry(root).or_default().push(id);
    }
    let mut rows = Vec::new();
    for pages in members.values() {
        let keep = *pages.iter().min_by_key(|&&id| rank(id)).unwrap();
        rows.extend(pages.iter().map(|&id| (id, keep, pages.len() as u64)));
    }
    rows.sort_unstable();
    rows
}

/// The expected `drop/` rows of `policy`, sorted by id.
fn drop_oracle(
    edges: &[Edge],
    clusters: &ClusterRows,
    policy: DropPolicy,
    corpus_wins: bool,
) -> DropRows {
    match policy {
        DropPolicy::Component => clusters
            .iter()
            .filter(|(id, keep, _)| id != keep)
            .map(|&(id, keep, _)| (id, keep, None))
            .collect(),
        DropPolicy::Direct => greedy_oracle(edges, corpus_wins),
    }
}

/// The direct policy, sequentially: pages in priority order; a page with a
/// kept partner earlier in the order drops for the nearest one (then the
/// earliest in the order); any other page is kept.
fn greedy_oracle(edges: &[Edge], corpus_wins: bool) -> DropRows {
    let in_corpus = corpus_pages(edges);
    greedy_oracle_by(edges, priority(corpus_wins, &in_corpus), &distance)
}

/// [`greedy_oracle`] with pages ordered by `rank`, pairs `distance` apart
/// (the nearest is the least).
fn greedy_oracle_by<K: Ord + Clone, D: Ord + Copy>(
    edges: &[Edge],
    rank: impl Fn(i64) -> K,
    distance: &dyn Fn(i64, i64) -> D,
) -> Vec<(i64, i64, Option<D>)> {
    let mut partners: HashMap<i64, Vec<i64>> = HashMap::new();
    for &(q, c, _) in edges {
        partners.entry(q).or_default().push(c);
        partners.entry(c).or_default().push(q);
    }
    let mut pages: Vec<i64> = partners.keys().copied().collect();
    pages.sort_by_key(|&id| rank(id));
    let mut kept = HashSet::new();
    let mut drops = Vec::new();
    for id in pages {
        let best = partners[&id]
            .iter()
            .filter(|&&other| rank(other) < rank(id) && kept.contains(&other))
            .map(|&other| (distance(id, other), rank(other), other))
            .min();
        match best {
            Some((d, _, keep)) => drops.push((id, keep, Some(d))),
            None => {
                kept.insert(id);
            }
        }
    }
    drops.sort_unstable();
    drops
}

/// What the direct policy promises, checked on the input pairs alone: every
/// drop names a kept partner, with their distance, and no two kept pages
/// are paired.
fn check_direct_invariants(edges: &[Edge], clusters: &ClusterRows, drops: &DropRows, name: &str) {
    let paired: HashSet<(i64, i64)> = edges
        .iter()
        .flat_map(|&(q, c, _)| [(q, c), (c, q)])
        .collect();
    let dropped: HashSet<i64> = drops.iter().map(|d| d.0).collect();
    for &(id, keep, d) in drops {
        assert!(
            paired.contains(&(id, keep)),
            "{name}: ({id}, {keep}) is not a pair"
        );
        assert!(
            !dropped.contains(&keep),
            "{name}: {id} drops for {keep}, which is dropped"
        );
        assert_eq!(
            d,
            Some(distance(id, keep)),
            "{name}: distance of ({id}, {keep})"
        );
    }
    for &(q, c, _) in edges {
        let both_kept = !dropped.contains(&q) && !dropped.contains(&c);
        assert!(
            q == c || !both_kept,
            "{name}: kept pages {q} and {c} are paired"
        );
    }
    let pages: HashSet<i64> = clusters.iter().map(|c| c.0).collect();
    assert!(
        dropped.is_subset(&pages),
        "{name}: a dropped page is in no cluster"
    );
}

fn int64s(batch: &arrow_array::RecordBatch, column: usize) -> &[i64] {
    let values = batch
        .column(column)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(values.null_count(), 0);
    values.values()
}

/// `clusters/` rows: `(id, cluster_id, cluster_size)`.
type ClusterRows = Vec<(i64, i64, u64)>;
/// `drop/` rows: `(id, keep_id, distance)`.
type DropRows = Vec<(i64, i64, Option<u8>)>;

/// `drop/`'s `kept_by` by dropped id.
fn kept_by(out: &Path) -> HashMap<i64, String> {
    drop_strings(out, "kept_by")
        .into_iter()
        .map(|(id, name)| (id, name.expect("kept_by is never null")))
        .collect()
}

/// A string column of `drop/` by dropped id.
fn drop_strings(out: &Path, name: &str) -> HashMap<i64, Option<String>> {
    let mut values = HashMap::new();
    for batch in parquet_batches(&out.join("drop")) {
        let ids = int64s(&batch, 0);
        let strings = batch.column_by_name(name).unwrap().as_string::<i32>();
        for (&id, value) in ids.iter().zip(strings.iter()) {
            values.insert(id, value.map(str::to_string));
        }
    }
    values
}

/// `clusters/` rows sorted by id, and `drop/` rows sorted by id.
fn read_output(out: &Path) -> (ClusterRows, DropRows) {
    let mut clusters = Vec::new();
    for batch in parquet_batches(&out.join("clusters")) {
        let (id, cluster, size) = (int64s(&batch, 0), int64s(&batch, 1), int64s(&batch, 2));
        clusters.extend((0..batch.num_rows()).map(|r| (id[r], cluster[r], size[r] as u64)));
    }
    clusters.sort_unstable();
    let mut drops = Vec::new();
    for batch in parquet_batches(&out.join("drop")) {
        let (id, keep) = (int64s(&batch, 0), int64s(&batch, 1));
        let d = batch
            .column(2)
            .as_any()
            .downcast_ref::<Int8Array>()
            .unwrap();
        drops.extend(
            (0..batch.num_rows())
                .map(|r| (id[r], keep[r], d.is_valid(r).then(|| d.value(r) as u8))),
        );
    }
    drops.sort_unstable();
    (clusters, drops)
}

fn options(
    pairs: &str,
    out: &Path,
    corpus_wins: bool,
    policy: DropPolicy,
    workers: usize,
    parts: usize,
) -> ClusterOptions {
    let mut opts = ClusterOptions::new(vec![pairs.to_string()], out.to_path_buf());
    opts.keep_by = KeepOrder::without_pages(corpus_wins);
    opts.drop_policy = policy;
    opts.runtime = RuntimeOptions::local(workers);
    opts.parts = parts;
    opts.overwrite = true;
    opts
}

fn cluster(
    pairs: &str,
    out: &Path,
    corpus_wins: bool,
    policy: DropPolicy,
    workers: usize,
    parts: usize,
) {
    run_cluster(&options(pairs, out, corpus_wins, policy, workers, parts)).unwrap();
    assert!(out.join("_SUCCESS").exists());
}

/// The output in `out` against both oracles: its clusters are `expected`
/// (the union-find oracle's) and its drops the drop oracle's.
fn assert_oracles_agree(
    out: &Path,
    edges: &[Edge],
    expected: &ClusterRows,
    policy: DropPolicy,
    corpus_wins: bool,
    case: &str,
) -> (ClusterRows, DropRows) {
    let (clusters, drops) = read_output(out);
    assert!(
        clusters == *expected,
        "{case}: clusters differ from the oracle"
    );
    let expected_drops = drop_oracle(edges, expected, policy, corpus_wins);
    assert!(
        drops == expected_drops,
        "{case}: drops differ from the oracle"
    );
    // Without keys, a page is kept for being in the corpus or for its id.
    let in_corpus = corpus_pages(edges);
    let named = kept_by(out);
    for &(id, keep, _) in &drops {
        let by_corpus = corpus_wins && in_corpus.contains(&keep) && !in_corpus.contains(&id);
        let expected = if by_corpus { "corpus" } else { "id" };
        assert_eq!(named[&id], expected, "{case}: kept_by of {id} for {keep}");
    }
    (clusters, drops)
}

/// Runs both policies, with and without `--corpus-wins`, and compares every
/// row with the oracles; the same job as 2 processes of 2 workers (whose
/// components are joined across processes, where one process's workers
/// share one union-find) must write the same bytes.
fn check_against_oracle(edges: &[Edge], name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_edges(&dir.path().join("pairs"), edges, 3);
    let hosts = dir.path().join("hosts");
    for corpus_wins in [false, true] {
        let expected = oracle(edges, corpus_wins);
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            let case = format!("{name}, corpus_wins {corpus_wins}, {policy}");
            let out = dir.path().join(format!("out-{corpus_wins}-{policy}"));
            cluster(&pairs, &out, corpus_wins, policy, 2, 3);
            let (clusters, drops) =
                assert_oracles_agree(&out, edges, &expected, policy, corpus_wins, &case);
            if policy == DropPolicy::Direct {
                check_direct_invariants(edges, &clusters, &drops, &case);
            }
            let summary: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
            let sizes: BTreeMap<i64, u64> = expected.iter().map(|&(_, k, s)| (k, s)).collect();
            assert_eq!(summary["clusters"], sizes.len() as u64, "{case}");
            assert_eq!(
                summary["largest_cluster"],
                sizes.values().max().copied().unwrap_or(0)
            );
            assert_eq!(summary["pairs"], edges.len() as u64);
            let same_page = edges.iter().filter(|e| e.0 == e.1).count();
            assert_eq!(summary["same_page_pairs"], same_page as u64, "{case}");
            assert_eq!(summary["dropped"], drops.len() as u64);
            assert_eq!(summary["drop_policy"], policy.to_string());
            let processes = dir.path().join(format!("p2-{corpus_wins}-{policy}"));
            run_processes(&pairs, &processes, corpus_wins, policy, [2, 2, 3], &hosts);
            assert!(
                data_files(&processes) == data_files(&out),
                "{case}: 2 processes wrote other bytes"
            );
        }
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

/// A giant component whose pairs, in random order, lie in every file and
/// so in every process's row groups, as a Spark or DuckDB join writes
/// them: three and four processes of one worker join it across all of
/// them, and write the oracles' rows and the bytes of one process.
#[test]
fn a_giant_component_in_every_process_row_groups_on_three_and_four_processes() {
    let mut rng = SplitMix64::new(9);
    let mut edges = random_edges(&mut rng, 3_000, 9_000, 0);
    edges.extend(shuffled_chain((10_000..12_000).collect(), 10, 3));
    edges.extend(random_edges(&mut rng, 20_000, 4_000, 100_000));
    for i in (1..edges.len()).rev() {
        edges.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let expected = oracle(&edges, true);
    let giant_size = expected.iter().map(|&(_, _, size)| size).max().unwrap();
    let giant: HashSet<i64> = expected
        .iter()
        .filter(|&&(_, _, size)| size == giant_size)
        .map(|&(id, _, _)| id)
        .collect();
    assert!(giant.len() > 2_500, "a giant component of {}", giant.len());
    let parts = 6;
    for part in edges.chunks(edges.len().div_ceil(parts)) {
        let in_giant = part.iter().filter(|&&(q, _, _)| giant.contains(&q)).count();
        assert!(
            in_giant > 1_000,
            "a file with {in_giant} of the giant's pairs"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_edges(&dir.path().join("pairs"), &edges, parts);
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        let one = dir.path().join(format!("one-{policy}"));
        cluster(&pairs, &one, true, policy, 1, 3);
        for processes in [3, 4] {
            let case = format!("{processes} processes, {policy}");
            let out = dir.path().join(format!("p{processes}-{policy}"));
            let hosts = dir.path().join("hosts");
            run_processes(&pairs, &out, true, policy, [processes, 1, 3], &hosts);
            assert_oracles_agree(&out, &edges, &expected, policy, true, &case);
            assert!(
                data_files(&out) == data_files(&one),
                "{case}: other bytes than one process"
            );
        }
    }
}

/// A chain through `ids` in a shuffled order (by `seed`), so that the
/// order of priority and the order of the chain differ; every
/// `corpus_every`-th pair says its corpus side is in the corpus.
fn shuffled_chain(mut ids: Vec<i64>, seed: u64, corpus_every: usize) -> Vec<Edge> {
    let mut rng = SplitMix64::new(seed);
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.below(i as u64 + 1) as usize);
    }
    ids.windows(2)
        .enumerate()
        .map(|(i, w)| (w[0], w[1], i % corpus_every != 0))
        .collect()
}

#[test]
fn a_100k_page_chain() {
    let edges = shuffled_chain((0..100_001).collect(), 4, 5);
    check_against_oracle(&edges, "chain");
}

/// A chain too long for one slice of rows on its worker's threads (2^17
/// pages a thread), its drops chosen on a thread of their own while its
/// `clusters/` rows are written: the rows and drops of its later slices
/// start where the threads of the one before stopped, in the bytes one
/// worker writes.
#[test]
fn a_chain_of_several_slices_on_several_threads() {
    let edges = shuffled_chain((0..600_001).map(|i| i * 3 - 900_000).collect(), 11, 3);
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 3);
    let expected = oracle(&edges, true);
    let policy = DropPolicy::Direct;
    let one = dir.path().join("w1");
    cluster(&pairs, &one, true, policy, 1, 2);
    for workers in [2, 4] {
        let case = format!("{workers} workers");
        let out = dir.path().join(format!("w{workers}"));
        cluster(&pairs, &out, true, policy, workers, 2);
        let (clusters, drops) = assert_oracles_agree(&out, &edges, &expected, policy, true, &case);
        check_direct_invariants(&edges, &clusters, &drops, &case);
        assert!(
            data_files(&out) == data_files(&one),
            "{case}: other bytes than 1 worker"
        );
    }
}

#[test]
fn a_100k_leaf_star() {
    let edges: Vec<Edge> = (1..=100_000)
        .map(|leaf| (leaf * 7, 350_003, leaf % 2 == 0))
        .collect();
    check_against_oracle(&edges, "star");
}

#[test]
fn a_dense_1000_page_clique() {
    let mut edges: Vec<Edge> = Vec::new();
    for a in 0..1_000i64 {
        for b in a + 1..1_000 {
            edges.push((b * 3 + 1, a * 3 + 1, (a + b) % 4 != 0));
        }
    }
    check_against_oracle(&edges, "clique");
}

#[test]
fn short_chains_self_loops_and_repeated_edges() {
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
fn a_page_only_one_process_knows_is_in_the_corpus() {
    // One pair per file, file i read by worker i % 2, each worker a
    // process of its own: page 5 is a corpus page only by the pair in file
    // 1, yet process 0 holds it too; both must rank it first, before page
    // 3 (so 5 is kept, and 3, 20 and 30 drop for it; ranked by process 0
    // alone, 3 would be kept and 5 dropped).
    let edges = vec![(3, 5, true), (30, 5, false), (5, 20, true)];
    check_against_oracle(&edges, "corpus page seen as such by one worker");
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 3);
    let out = dir.path().join("out");
    let hosts = dir.path().join("hosts");
    run_processes(&pairs, &out, true, DropPolicy::Direct, [2, 1, 2], &hosts);
    let (clusters, drops) = read_output(&out);
    assert!(clusters
        .iter()
        .all(|&(_, keep, size)| keep == 5 && size == 4));
    let keeps: Vec<(i64, i64)> = drops.iter().map(|&(id, keep, _)| (id, keep)).collect();
    assert_eq!(keeps, vec![(3, 5), (20, 5), (30, 5)]);
}

#[test]
fn negative_and_extreme_ids() {
    let edges = vec![
        (i64::MIN, -5, false),
        (-5, 0, true),
        (i64::MAX, i64::MAX - 1, false),
        (-1, 1, true),
        (i64::MIN, i64::MAX, true),
    ];
    check_against_oracle(&edges, "extreme ids");
}

/// A random graph whose ids are spread over the whole i64 range, the two
/// ends included: page ids are hashes of URLs, so the id table's homes in
/// id order and the parts' ranges meet negative, extreme and far-apart ids
/// in every row group.
#[test]
fn a_random_graph_over_the_whole_id_range() {
    let mut rng = SplitMix64::new(11);
    let spread = |id: i64| match id {
        0 => i64::MIN,
        1 => i64::MAX,
        2 => -1,
        id => (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as i64,
    };
    let edges: Vec<Edge> = random_edges(&mut rng, 8_000, 6_000, 0)
        .into_iter()
        .chain([(0, 1, false), (1, 2, true), (2, 3, false), (0, 5, true)])
        .map(|(q, c, self_pair)| (spread(q), spread(c), self_pair))
        .collect();
    check_against_oracle(&edges, "ids over the whole range");
}

#[test]
fn keep_drop_policy_on_a_hand_made_graph() {
    // new pages: 2, 4, 5, 7, 20, 55; corpus pages: 9, 30, 40, 50, 60.
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
    cluster(&pairs, &out, true, DropPolicy::Component, 1, 1);
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
    let component: Vec<(i64, i64)> = drops.iter().map(|d| (d.0, d.1)).collect();
    assert_eq!(
        component,
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
    assert!(drops.iter().all(|d| d.2.is_none()));
    // Direct: 7 was paired only with 5, which drops for 9, so 7 is kept.
    let out = dir.path().join("direct");
    cluster(&pairs, &out, true, DropPolicy::Direct, 1, 1);
    let (_, drops) = read_output(&out);
    let direct: Vec<(i64, i64)> = drops.iter().map(|d| (d.0, d.1)).collect();
    assert_eq!(direct, vec![(4, 2), (5, 9), (20, 30), (55, 50), (60, 50)]);
    // Without --corpus-wins the smallest id is kept.
    let out = dir.path().join("smallest");
    cluster(&pairs, &out, false, DropPolicy::Component, 1, 1);
    let (clusters, _) = read_output(&out);
    let keep: BTreeMap<i64, i64> = clusters.iter().map(|&(id, k, _)| (id, k)).collect();
    assert_eq!((keep[&9], keep[&40], keep[&60]), (5, 20, 50));
}

/// Writes a pair file as another tool would: only the id columns and,
/// optionally, an INT32 `distance`.
fn write_foreign_pairs(path: &Path, edges: &[Edge], with_distance: bool) {
    use arrow_array::{ArrayRef, Int32Array, RecordBatch};
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        (
            "query_id",
            Arc::new(Int64Array::from_iter_values(edges.iter().map(|e| e.0))),
        ),
        (
            "corpus_id",
            Arc::new(Int64Array::from_iter_values(edges.iter().map(|e| e.1))),
        ),
    ];
    if with_distance {
        let d = Int32Array::from_iter_values(edges.iter().map(|e| distance(e.0, e.1) as i32));
        columns.push(("distance", Arc::new(d)));
    }
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None)
            .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// The error of a one-worker `direct` run that must refuse its input.
fn refusal(pairs: &str, out: &Path, corpus_wins: bool) -> String {
    run_cluster(&options(pairs, out, corpus_wins, DropPolicy::Direct, 1, 1))
        .unwrap_err()
        .to_string()
}

#[test]
fn pairs_made_elsewhere_are_clustered_but_not_with_corpus_wins() {
    let mut rng = SplitMix64::new(5);
    let edges = random_edges(&mut rng, 3_000, 2_000, 0);
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("join.parquet");
    write_foreign_pairs(&foreign, &edges, true);
    let pairs = foreign.display().to_string();
    let out = dir.path().join("direct");
    cluster(&pairs, &out, false, DropPolicy::Direct, 2, 2);
    let (clusters, drops) = read_output(&out);
    assert!(clusters == oracle(&edges, false));
    assert!(drops == greedy_oracle(&edges, false));

    let refused = refusal(&pairs, &dir.path().join("cw"), true);
    assert!(
        refused.contains("no column `self_pair`") && refused.contains("--corpus-wins"),
        "{refused}"
    );
    assert!(!dir.path().join("cw").exists());

    let bare = dir.path().join("bare.parquet");
    write_foreign_pairs(&bare, &edges, false);
    let bare = bare.display().to_string();
    let refused = refusal(&bare, &dir.path().join("d"), false);
    assert!(
        refused.contains("no column `distance`") && refused.contains("--drop-policy component"),
        "{refused}"
    );
    let out = dir.path().join("component");
    cluster(&bare, &out, false, DropPolicy::Component, 1, 1);
    assert!(read_output(&out).0 == oracle(&edges, false));
}

/// Corpus pages come first by default wherever something says which they
/// are: a match output's `self_pair` beside a pair file without it (named
/// in a warning), or `--corpus` without `--pages`; and `--corpus-wins`
/// with `--pages` is the default order.
#[test]
fn corpus_pages_come_first_by_default_wherever_something_says_which_they_are() {
    let dir = tempfile::tempdir().unwrap();
    // New page 1 pairs with corpus page 2, fetched later: `earliest` alone
    // would keep 1.
    let matched = write_edges(&dir.path().join("matched"), &[(1, 2, false)], 1);
    let join = dir.path().join("join.parquet");
    write_foreign_pairs(&join, &[(50, 51, false)], true);
    let join = join.display().to_string();
    let rows = [(1, 1), (2, 5), (50, 1), (51, 1)]
        .map(|(id, time)| url_row(id, Some(time), &format!("https://a.example/{id}")));
    let pages = write_pages(&dir.path().join("pages"), &rows, 1);
    let drops = |out: &Path| -> Vec<(i64, i64)> {
        let (_, drops) = read_output(out);
        drops.iter().map(|&(id, keep, _)| (id, keep)).collect()
    };

    let out = dir.path().join("mixed");
    let stderr = cluster_cli(&["--pairs", &matched, &join, "--pages", &pages], &out);
    assert!(
        stderr.contains("join.parquet: no column `self_pair`"),
        "{stderr}"
    );
    assert_eq!(drops(&out), vec![(1, 2), (51, 50)]);
    assert_eq!(kept_by(&out)[&1], "corpus");

    // Page 51 is in the corpus's shards; the join cannot say so.
    let corpus = write_pages(&dir.path().join("corpus"), &rows[3..], 1);
    let out = dir.path().join("corpus-alone");
    cluster_cli(&["--pairs", &join, "--corpus", &corpus], &out);
    assert_eq!(drops(&out), vec![(50, 51)]);
    assert_eq!(kept_by(&out)[&50], "corpus");

    let out = dir.path().join("corpus-wins");
    cluster_cli(
        &["--pairs", &matched, "--pages", &pages, "--corpus-wins"],
        &out,
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
    let default = KeepOrder::default_with_pages().to_string();
    let keys: Vec<&str> = default.split(',').collect();
    assert_eq!(summary["keep_by"], serde_json::json!(keys));
    let refused = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "cluster",
            "--pairs",
            &join,
            "--pages",
            &pages,
            "--corpus-wins",
            "--out",
        ])
        .arg(dir.path().join("refused"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("no column `self_pair`"), "{stderr}");
    assert!(!refused.status.success());
}

/// A pages table with a null id fails on one line whichever worker
/// reads it: no warning that no row names a page of the pairs (the rows
/// that do were not counted, their worker having failed).
#[test]
fn a_null_id_in_the_pages_table_gives_one_line_on_any_worker() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = dir.path().join("pairs.parquet");
    write_foreign_pairs(&pairs, &[(1, 2, false)], true);
    let pages = dir.path().join("pages.parquet");
    crate::common::write_batch(
        &pages,
        vec![
            (
                "id",
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None])),
            ),
            ("score", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ],
    );
    let pages = pages.display().to_string();
    let keys = ["--pages", &pages, "--keep-by", "column:score:desc"];
    // Four workers: the row group's reader is another than worker 0 in
    // most runs.
    for _ in 0..4 {
        let error = one_line_failure(&pairs, &[&keys[..], &["--workers", "4"]].concat());
        assert!(error.contains("null"), "{error}");
    }
}

/// `--keep-by rel-canonical` on tables without `canonical_url` ranks no
/// page by it, and says so; with the column, or under the default order
/// (a team's table may well lack it), nothing is said.
#[test]
fn rel_canonical_without_canonical_links_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = dir.path().join("pairs.parquet");
    write_foreign_pairs(&pairs, &[(1, 2, false)], true);
    let pairs = pairs.display().to_string();
    let rows = [1, 2].map(|id| url_row(id, Some(id), &format!("https://a.example/{id}")));
    let pages = write_pages(&dir.path().join("pages"), &rows, 1);
    let run = |name: &str, keys: &[&str]| {
        let args = [&["--pairs", &pairs, "--pages", &pages][..], keys].concat();
        cluster_cli(&args, &dir.path().join(name))
    };
    let stderr = run("asked", &["--keep-by", "rel-canonical,earliest"]);
    assert!(
        stderr.contains("no file of --pages or --corpus has a `canonical_url` column"),
        "{stderr}"
    );
    let stderr = run("default", &[]);
    assert!(!stderr.contains("canonical_url"), "{stderr}");
}

/// Ids of narrower integers (a join over INTEGER ids, as DuckDB and Spark
/// write it), in the pairs and the pages table, are the same pages as
/// INT64 ids: the same bytes out, their keys read alike.
#[test]
fn narrow_integer_ids_are_the_pages_of_their_values() {
    use arrow_array::{ArrayRef, Int32Array, UInt16Array};
    let dir = tempfile::tempdir().unwrap();
    let edges = [(1, 2), (2, 3), (-5, 7), (7, 9)];
    let scores = [(1, 4), (2, 9), (3, 1), (-5, 2), (7, 8), (9, 8)];
    let write = |name: &str, narrow: bool| {
        let ids = |values: Vec<i64>| -> ArrayRef {
            match narrow {
                true => Arc::new(Int32Array::from_iter_values(
                    values.iter().map(|&v| v as i32),
                )),
                false => Arc::new(Int64Array::from_iter_values(values)),
            }
        };
        let pairs = dir.path().join(format!("{name}-pairs.parquet"));
        crate::common::write_batch(
            &pairs,
            vec![
                ("query_id", ids(edges.iter().map(|e| e.0).collect())),
                ("corpus_id", ids(edges.iter().map(|e| e.1).collect())),
                ("distance", Arc::new(Int32Array::from(vec![1; edges.len()]))),
            ],
        );
        let pages = dir.path().join(format!("{name}-pages.parquet"));
        let score = UInt16Array::from_iter_values(scores.iter().map(|s| s.1));
        crate::common::write_batch(
            &pages,
            vec![
                ("id", ids(scores.iter().map(|s| s.0).collect())),
                ("score", Arc::new(score)),
            ],
        );
        let out = dir.path().join(name);
        let (pairs, pages) = (pairs.display().to_string(), pages.display().to_string());
        let keys = ["--keep-by", "column:score:desc"];
        cluster_cli(
            &[&["--pairs", &pairs, "--pages", &pages], &keys[..]].concat(),
            &out,
        );
        out
    };
    let (narrow, wide) = (write("narrow", true), write("wide", false));
    assert_eq!(data_files(&narrow), data_files(&wide));
    let (_, drops) = read_output(&narrow);
    let drops: Vec<(i64, i64)> = drops.iter().map(|&(id, keep, _)| (id, keep)).collect();
    assert_eq!(drops, vec![(-5, 7), (1, 2), (3, 2), (9, 7)]);
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
fn same_bytes_for_1_2_and_4_workers_and_2_and_3_processes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(3);
    let mut edges = random_edges(&mut rng, 5_000, 4_000, 0);
    edges.extend((0..2_000).map(|i| (100_000 + i, 100_001 + i, i % 3 == 0)));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 4);
    for (corpus_wins, policy) in [
        (true, DropPolicy::Direct),
        (true, DropPolicy::Component),
        (false, DropPolicy::Direct),
        (false, DropPolicy::Component),
    ] {
        let case = format!("{policy}, corpus_wins {corpus_wins}");
        let base = dir.path().join(format!("w1-{policy}-{corpus_wins}"));
        cluster(&pairs, &base, corpus_wins, policy, 1, 3);
        let expected = data_files(&base);
        for workers in [2, 4] {
            let out = dir
                .path()
                .join(format!("w{workers}-{policy}-{corpus_wins}"));
            cluster(&pairs, &out, corpus_wins, policy, workers, 3);
            assert!(data_files(&out) == expected, "{workers} workers, {case}");
        }
        // Three processes: a page's owner, and the bitmaps' ranges, fall
        // unevenly among them.
        let processes: &[usize] = if corpus_wins { &[2, 3] } else { &[3] };
        for &processes in processes {
            let out = dir
                .path()
                .join(format!("p{processes}-{policy}-{corpus_wins}"));
            run_processes(
                &pairs,
                &out,
                corpus_wins,
                policy,
                [processes, 2, 3],
                &dir.path().join("hosts"),
            );
            assert!(
                data_files(&out) == expected,
                "{processes} processes, {case}"
            );
        }
    }
}

/// A file of one large row group (as pyarrow or Spark write them) is cut
/// into pieces that every worker reads: the rows are each read once, and the
/// bytes are those of one worker reading it whole.
#[test]
fn one_large_row_group_is_shared_by_the_workers_with_the_bytes_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(8);
    let mut edges = random_edges(&mut rng, 150_000, 200_000, 0);
    edges.extend((1..=100_000).map(|leaf| (leaf * 5 + 1, -7, leaf % 2 == 0)));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let expected = oracle(&edges, true);
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        let base = dir.path().join(format!("w1-{policy}"));
        cluster(&pairs, &base, true, policy, 1, 2);
        assert_oracles_agree(&base, &edges, &expected, policy, true, &policy.to_string());
        for workers in [2, 4] {
            let out = dir.path().join(format!("w{workers}-{policy}"));
            cluster(&pairs, &out, true, policy, workers, 2);
            assert!(
                data_files(&out) == data_files(&base),
                "{workers} workers, {policy}"
            );
        }
    }
}

/// `neardup cluster` as `[processes, workers, parts]` on loopback ports.
fn run_processes(
    pairs: &str,
    out: &Path,
    corpus_wins: bool,
    policy: DropPolicy,
    shape: [usize; 3],
    hosts: &Path,
) {
    let extra: &[&str] = if corpus_wins { &["--corpus-wins"] } else { &[] };
    run_processes_with(pairs, out, extra, policy, shape, hosts);
}

/// [`run_processes`] with `extra` flags.
fn run_processes_with(
    pairs: &str,
    out: &Path,
    extra: &[&str],
    policy: DropPolicy,
    [processes, workers, parts]: [usize; 3],
    hosts: &Path,
) {
    let listeners: Vec<TcpListener> = (0..processes)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut file = File::create(hosts).unwrap();
    for l in &listeners {
        writeln!(file, "{}", l.local_addr().unwrap()).unwrap();
    }
    drop(listeners);
    let spawned: Vec<_> = (0..processes)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_neardup"))
                .args(["cluster", "--parts", &parts.to_string(), "--overwrite"])
                .args(extra)
                .args(["--drop-policy", &policy.to_string(), "--pairs", pairs])
                .arg("--out")
                .arg(out)
                .arg("--hostfile")
                .arg(hosts)
                .args(["--process", &i.to_string()])
                .args(["--workers", &workers.to_string()])
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
}

/// The wide distance a test gives a verified pair: 0 to 40, the same in
/// both directions, and independent of [`distance`], so that a page's
/// nearest kept partner over 256 bits is often not its nearest over 64.
fn wide_distance(a: i64, b: i64) -> u16 {
    let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
    let mixed = (hi.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ lo).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((mixed >> 32) % 41) as u16
}

/// `drop/` rows with both distances: `(id, keep_id, distance,
/// wide_distance)`, sorted by id.
fn read_drops_with_wide(out: &Path) -> Vec<(i64, i64, Option<u8>, Option<u16>)> {
    let mut drops = Vec::new();
    for batch in parquet_batches(&out.join("drop")) {
        assert_eq!(batch.schema().field(3).name(), "wide_distance");
        let (id, keep) = (int64s(&batch, 0), int64s(&batch, 1));
        let d = batch
            .column(2)
            .as_primitive::<arrow_array::types::Int8Type>();
        let w = batch
            .column(3)
            .as_primitive::<arrow_array::types::Int16Type>();
        drops.extend((0..batch.num_rows()).map(|r| {
            let wide = w.is_valid(r).then(|| w.value(r) as u16);
            (
                id[r],
                keep[r],
                d.is_valid(r).then(|| d.value(r) as u8),
                wide,
            )
        }));
    }
    drops.sort_unstable();
    drops
}

/// Pairs from `match --verify` carry a wide distance: under the direct
/// policy a page drops for its kept partner nearest by it (then by
/// distance, then first in priority order), and `drop/` gives both; on any
/// workers and processes, the same bytes. Pairs of both modes at once are
/// refused in one line, except under the component policy, which compares
/// no distances.
#[test]
fn verified_pairs_drop_a_page_for_its_partner_nearest_over_256_bits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = SplitMix64::new(74);
    let edges = random_edges(&mut rng, 3_000, 6_000, -1_500);
    let pairs_dir = d.join("pairs");
    let pairs = write_edges_as(&pairs_dir, &edges, 3, true);
    for corpus_wins in [false, true] {
        let in_corpus = corpus_pages(&edges);
        let rank = priority(corpus_wins, &in_corpus);
        let nearest = |a, b| (wide_distance(a, b), distance(a, b));
        let expected: Vec<_> = greedy_oracle_by(&edges, &rank, &nearest)
            .into_iter()
            .map(|(id, keep, near)| (id, keep, near.map(|n| n.1), near.map(|n| n.0)))
            .collect();
        // The test has teeth: over 64 bits alone, other partners are nearest.
        let by_distance = greedy_oracle_by(&edges, &rank, &distance);
        let differ = expected
            .iter()
            .zip(&by_distance)
            .filter(|(a, b)| (a.0, a.1) != (b.0, b.1))
            .count();
        assert!(differ > 100, "{differ} drops name another partner");

        let out = d.join(format!("direct-{corpus_wins}"));
        cluster(&pairs, &out, corpus_wins, DropPolicy::Direct, 2, 3);
        assert!(
            read_drops_with_wide(&out) == expected,
            "corpus_wins {corpus_wins}"
        );
        let one = d.join(format!("one-{corpus_wins}"));
        cluster(&pairs, &one, corpus_wins, DropPolicy::Direct, 1, 3);
        assert!(data_files(&one) == data_files(&out), "1 worker");
        let processes = d.join(format!("p2-{corpus_wins}"));
        let shape = [2, 2, 3];
        run_processes(
            &pairs,
            &processes,
            corpus_wins,
            DropPolicy::Direct,
            shape,
            &d.join("hosts"),
        );
        assert!(data_files(&processes) == data_files(&out), "2 processes");
    }

    // A night's pairs of the other mode beside them.
    write_part(&pairs_dir.join("part-99999.parquet"), &edges[..100], false);
    let out = d.join("mixed");
    let refused = refusal(&pairs, &out, false);
    assert_eq!(refused.trim_end().lines().count(), 1, "{refused}");
    for needle in [
        "part-99999.parquet: no column `wide_distance`",
        "part-00000.parquet",
    ] {
        assert!(refused.contains(needle), "`{needle}` not in {refused}");
    }
    cluster(&pairs, &out, false, DropPolicy::Component, 2, 3);
    let drops = read_drops_with_wide(&out);
    assert!(!drops.is_empty());
    assert!(drops.iter().all(|&(.., d, w)| d.is_none() && w.is_none()));
}

/// Runs `neardup cluster ARGS --out OUT`, which must succeed; its stderr.
fn cluster_cli(args: &[&str], out: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .arg("cluster")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    stderr
}

#[test]
fn oversized_clusters_are_warned_about_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut edges: Vec<Edge> = (0..40).map(|i| (i, i + 1, true)).collect();
    edges.extend((100..110).map(|i| (i, i + 1, true)));
    edges.push((200, 201, false));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let out = dir.path().join("out");
    let stderr = cluster_cli(&["--max-cluster-size", "5", "--pairs", &pairs], &out);
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
fn pairs_of_a_page_with_itself_are_passed_over_with_a_warning() {
    // A self-join that forgot `a.id != b.id`: every page paired with itself.
    let dir = tempfile::tempdir().unwrap();
    let mut edges: Vec<Edge> = (0..6).map(|i| (i, i, false)).collect();
    edges.extend([(0, 1, false), (4, 5, true)]);
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 2);
    let out = dir.path().join("out");
    let stderr = cluster_cli(&["--workers", "2", "--pairs", &pairs], &out);
    assert!(
        stderr.contains("6 pair(s) of a page with itself passed over"),
        "{stderr}"
    );
    let (clusters, drops) = read_output(&out);
    assert_eq!(clusters, vec![(0, 0, 2), (1, 0, 2), (4, 4, 2), (5, 4, 2)]);
    assert_eq!(
        drops,
        vec![(1, 0, Some(distance(0, 1))), (5, 4, Some(distance(4, 5)))]
    );
}

#[test]
fn input_that_is_not_match_output_gets_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("shard.parquet");
    crate::common::write_shard(&shard, &[(1, 2), (3, 4)]);
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

/// Runs `neardup cluster` on `pairs` and returns its stderr, checking that
/// it failed with one line and wrote nothing.
fn one_line_failure(pairs: &Path, extra: &[&str]) -> String {
    let out = pairs.parent().unwrap().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["cluster", "--pairs"])
        .arg(pairs)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!out.exists(), "{stderr}");
    stderr
}

#[test]
fn missing_columns_and_nulls_get_one_line() {
    use arrow_array::{ArrayRef, RecordBatch};
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, columns: Vec<(&str, ArrayRef)>| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        let file = path.join("part-00000.parquet");
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(
            File::create(&file).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        file
    };
    let ids = || Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef;
    let no_corpus = write("no-corpus", vec![("query_id", ids())]);
    let stderr = one_line_failure(&no_corpus, &["--drop-policy", "component"]);
    assert!(stderr.contains("no column `corpus_id`"), "{stderr}");
    let with_nulls = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef;
    let nulls = write(
        "nulls",
        vec![("query_id", ids()), ("corpus_id", with_nulls.clone())],
    );
    let stderr = one_line_failure(&nulls, &["--drop-policy", "component"]);
    assert!(
        stderr.contains("column `corpus_id` has 1 null values"),
        "{stderr}"
    );
    let far = Arc::new(Int64Array::from(vec![0, 65, 1])) as ArrayRef;
    let bad_distance = write(
        "far",
        vec![("query_id", ids()), ("corpus_id", ids()), ("distance", far)],
    );
    let stderr = one_line_failure(&bad_distance, &[]);
    assert!(stderr.contains("column `distance` holds 65"), "{stderr}");

    // Nulls in each of the other columns `cluster` reads, where it reads them.
    let null_query = write(
        "null-query",
        vec![("query_id", with_nulls.clone()), ("corpus_id", ids())],
    );
    let stderr = one_line_failure(&null_query, &["--drop-policy", "component"]);
    assert!(
        stderr.contains("column `query_id` has 1 null values"),
        "{stderr}"
    );
    let null_distance = Arc::new(Int8Array::from(vec![Some(1), Some(2), None])) as ArrayRef;
    let null_distance = write(
        "null-distance",
        vec![
            ("query_id", ids()),
            ("corpus_id", ids()),
            ("distance", null_distance),
        ],
    );
    let stderr = one_line_failure(&null_distance, &[]);
    assert!(
        stderr.contains("column `distance` has 1 null values"),
        "{stderr}"
    );
    let flags = Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])) as ArrayRef;
    let null_flag = write(
        "null-self-pair",
        vec![
            ("query_id", ids()),
            ("corpus_id", ids()),
            ("self_pair", flags),
        ],
    );
    let stderr = one_line_failure(&null_flag, &["--drop-policy", "component", "--corpus-wins"]);
    assert!(
        stderr.contains("column `self_pair` has null values"),
        "{stderr}"
    );

    // Pairs from a join elsewhere: `--corpus-wins` needs `self_pair`, and
    // the direct policy needs `distance`; each says so on one line.
    let joined = write("joined", vec![("query_id", ids()), ("corpus_id", ids())]);
    let stderr = one_line_failure(&joined, &["--drop-policy", "component", "--corpus-wins"]);
    assert!(
        stderr.contains("no column `self_pair`") && stderr.contains("--corpus-wins"),
        "{stderr}"
    );
    let stderr = one_line_failure(&joined, &[]);
    assert!(
        stderr.contains("no column `distance`") && stderr.contains("--drop-policy component"),
        "{stderr}"
    );
}

/// With no `--drop-policy`, `cluster` drops by direct evidence: every drop
/// row names a partner within k and its distance.
#[test]
fn the_direct_policy_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    // A chain 1-2-3: the component rule would drop 2 and 3 for 1; the
    // direct rule keeps 3, paired only with the dropped 2.
    let edges = vec![(1, 2, true), (2, 3, true)];
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let out = dir.path().join("out");
    crate::common::run_ok(&["cluster", "--pairs", &pairs, "--out", out.to_str().unwrap()]);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
    assert_eq!(summary["drop_policy"], "direct");
    let (_, drops) = read_output(&out);
    let keeps: Vec<(i64, i64)> = drops.iter().map(|&(id, keep, _)| (id, keep)).collect();
    assert_eq!(keeps, vec![(2, 1)]);
    assert_eq!(drops[0].2, Some(distance(2, 1)));
}

/// A page's attributes in a test's pages table.
#[derive(Clone, Debug)]
struct PageRow {
    id: i64,
    fetch_time: Option<i64>,
    url: Option<String>,
    n_chars: i32,
    quality: Option<f64>,
}

/// Writes `rows` as a pages table of `files` Parquet files (a TIMESTAMP
/// fetch time in microseconds, UTC).
fn write_pages(dir: &Path, rows: &[PageRow], files: usize) -> String {
    use arrow_array::{
        Float64Array, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    };
    std::fs::create_dir_all(dir).unwrap();
    for (i, chunk) in rows.chunks(rows.len().div_ceil(files).max(1)).enumerate() {
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.id)))
                    as arrow_array::ArrayRef,
            ),
            (
                "fetch_time",
                Arc::new(
                    TimestampMicrosecondArray::from_iter(chunk.iter().map(|r| r.fetch_time))
                        .with_timezone("UTC"),
                ),
            ),
            (
                "url",
                Arc::new(StringArray::from_iter(chunk.iter().map(|r| r.url.clone()))),
            ),
            (
                "n_chars",
                Arc::new(Int32Array::from_iter_values(
                    chunk.iter().map(|r| r.n_chars),
                )),
            ),
            (
                "quality",
                Arc::new(Float64Array::from_iter(chunk.iter().map(|r| r.quality))),
            ),
        ])
        .unwrap();
        let file = File::create(dir.join(format!("pages-{i}.parquet"))).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }
    dir.display().to_string()
}

/// Pages for the ids of `edges` but every seventh (no row); some with a
/// second row (the least keys win); times, URLs (https and http, with and
/// without a tracking query, of several depths and lengths), lengths and
/// scores drawn from few values, so that every key has ties to pass on.
fn random_pages(edges: &[Edge], rng: &mut SplitMix64) -> Vec<PageRow> {
    let mut ids: Vec<i64> = edges.iter().flat_map(|e| [e.0, e.1]).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut rows = Vec::new();
    for (n, &id) in ids.iter().enumerate() {
        if n % 7 == 3 {
            continue;
        }
        let copies = if n % 11 == 0 { 2 } else { 1 };
        for _ in 0..copies {
            let scheme = if rng.chance(0.5) { "https" } else { "http" };
            let depth = "d/".repeat(rng.below(3) as usize);
            let query = if rng.chance(0.3) { "?utm_source=x" } else { "" };
            let name = "p".repeat(1 + rng.below(3) as usize);
            rows.push(PageRow {
                id,
                fetch_time: (!rng.chance(0.1))
                    .then(|| 1_700_000_000_000_000 + rng.below(5) as i64 * 1_000_000 - 2_000_000),
                url: (!rng.chance(0.05))
                    .then(|| format!("{scheme}://site.example/{depth}{name}{query}")),
                n_chars: rng.below(4) as i32 * 100,
                quality: match rng.below(10) {
                    0 => None,
                    1 => Some(f64::NAN),
                    q => Some(q as f64 / 4.0 - 1.0),
                },
            });
        }
    }
    // Rows in no particular order, as a crawl writes them.
    for at in (1..rows.len()).rev() {
        rows.swap(at, rng.below(at as u64 + 1) as usize);
    }
    rows
}

/// The oracle's priority of a page under `keys`: a tuple that compares as
/// the documented order does (each key's missing value last, the id last),
/// computed from `rows` and the rows of `--corpus` if given (a page with
/// several rows takes the least), with the URL parsed by the `url` crate.
/// With `corpus` first and `--corpus` given (as `batches`, each a
/// committed directory), corpus pages rank among themselves by the time
/// of the first batch holding them, its latest fetch time (none: the
/// longest held), before the other keys.
fn keyed_rank<'a>(
    keys: &'a [&'a str],
    rows: &'a [PageRow],
    batches: Option<&'a [Vec<PageRow>]>,
    in_corpus: &'a HashSet<i64>,
) -> impl Fn(i64) -> KeyedRank + 'a {
    let corpus_first = keys.first() == Some(&"corpus");
    let held = batches.filter(|_| corpus_first);
    let canonical = |url: &str| -> i128 {
        let parsed = url::Url::parse(url).unwrap();
        let scheme = match parsed.scheme() {
            "https" => 0,
            "http" => 1,
            _ => 2,
        };
        let segments = parsed
            .path_segments()
            .map_or(0, |s| s.filter(|s| !s.is_empty()).count());
        let query = i128::from(url.contains('?'));
        // The only view these URLs name: a tracking query, after the rest.
        let tracked = parsed.query_pairs().any(|(key, _)| key.starts_with("utm_"));
        let before_segments = (i128::from(tracked) * 3 + scheme) * 2 + query;
        (before_segments * 1024 + segments as i128) * (1 << 19) + url.len() as i128
    };
    let of_row = move |row: &PageRow| -> Vec<(bool, i128)> {
        keys.iter()
            .filter(|&&key| key != "corpus")
            .map(|&key| {
                let value: Option<i128> = match key {
                    "earliest" => row.fetch_time.map(i128::from),
                    "latest" => row.fetch_time.map(|t| -i128::from(t)),
                    "longest" => Some(-i128::from(row.n_chars)),
                    "canonical-url" => row.url.as_deref().map(canonical),
                    // These rows name no canonical page: every row ties,
                    // before pages without one.
                    "rel-canonical" => Some(1),
                    "column:quality:desc" | "column:quality:asc" => {
                        row.quality.filter(|q| !q.is_nan()).map(|q| {
                            // f64's total order, as integers.
                            let bits = q.to_bits() as i64;
                            let ordered = i128::from(bits ^ (((bits >> 63) as u64) >> 1) as i64);
                            if key.ends_with("desc") {
                                -ordered
                            } else {
                                ordered
                            }
                        })
                    }
                    other => panic!("no oracle for {other}"),
                };
                (value.is_none(), value.unwrap_or(0))
            })
            .collect()
    };
    let complete = |batch: &[PageRow]| {
        let latest = batch.iter().filter_map(|row| row.fetch_time).max();
        (false, latest.map_or(i128::MIN, i128::from))
    };
    let night = rows.iter().map(|row| (row, (true, 0)));
    let corpus = batches.into_iter().flatten().flat_map(|batch| {
        let since = complete(batch);
        batch.iter().map(move |row| (row, since))
    });
    // A page with several rows takes its least keys, the time held first.
    let held_words = usize::from(held.is_some());
    let mut best: HashMap<i64, Vec<(bool, i128)>> = HashMap::new();
    for (row, since) in night.chain(corpus) {
        let mut key = Vec::new();
        key.extend(held.map(|_| since));
        key.extend(of_row(row));
        best.entry(row.id)
            .and_modify(|least| {
                if key < *least {
                    *least = key.clone();
                }
            })
            .or_insert(key);
    }
    // A page without a row has no value under any key.
    let missing = vec![(true, 0); keys.len() - usize::from(corpus_first) + held_words];
    move |id| {
        let mut rank = vec![(corpus_first && !in_corpus.contains(&id), 0)];
        rank.extend(best.get(&id).cloned().unwrap_or_else(|| missing.clone()));
        (rank, id)
    }
}

/// A page's priority under keys, as [`keyed_rank`] gives it: whether it
/// ranks later for the corpus, then the time it has been held if it is
/// ranked by it, then each other key's value, then its id.
type KeyedRank = (Vec<(bool, i128)>, i64);

/// The `kept_by` a page ranked `kept` should name over one ranked
/// `dropped`, under `keys`: the first key whose values differ, else `id`.
fn expected_kept_by<'a>(keys: &[&'a str], kept: &KeyedRank, dropped: &KeyedRank) -> &'a str {
    let named: Vec<&str> = keys.iter().copied().filter(|&k| k != "corpus").collect();
    // The corpus flag, and the time held when it is ranked by.
    let corpus_values = kept.0.len() - named.len();
    let differs = (0..kept.0.len()).find(|&at| kept.0[at] != dropped.0[at]);
    match differs {
        Some(at) if at < corpus_values => "corpus",
        Some(at) => named[at - corpus_values],
        None => "id",
    }
}

/// The URL `drop/` should name for a page: its first row's with one.
fn first_urls(rows: &[PageRow]) -> HashMap<i64, String> {
    let mut urls = HashMap::new();
    for row in rows {
        if let Some(url) = &row.url {
            urls.entry(row.id).or_insert_with(|| url.clone());
        }
    }
    urls
}

/// `drop/`'s `url` and `keep_url` by dropped id.
fn drop_urls(out: &Path) -> HashMap<i64, (Option<String>, Option<String>)> {
    let mut keep_urls = drop_strings(out, "keep_url");
    drop_strings(out, "url")
        .into_iter()
        .map(|(id, url)| (id, (url, keep_urls.remove(&id).flatten())))
        .collect()
}

/// The output in `out` of a run under `keys`, ranked by `rank`: its
/// clusters are `expected`, its drops the drop oracle's (pairs `distance`
/// apart), each drop names the first key its kept page wins by, and both
/// pages' URLs as `urls` has them.
#[allow(clippy::too_many_arguments)]
fn assert_keyed_output(
    out: &Path,
    edges: &[Edge],
    expected: &ClusterRows,
    keys: &[&str],
    rank: impl Fn(i64) -> KeyedRank,
    distance: &dyn Fn(i64, i64) -> u8,
    policy: DropPolicy,
    urls: &HashMap<i64, String>,
    case: &str,
) -> (ClusterRows, DropRows) {
    let (clusters, drops) = read_output(out);
    assert!(
        clusters == *expected,
        "{case}: clusters differ from the oracle"
    );
    let expected_drops = match policy {
        DropPolicy::Direct => greedy_oracle_by(edges, &rank, distance),
        DropPolicy::Component => drop_oracle(edges, expected, policy, false),
    };
    assert!(
        drops == expected_drops,
        "{case}: drops differ from the oracle"
    );
    let decided = kept_by(out);
    for &(id, keep, _) in &drops {
        let expected = expected_kept_by(keys, &rank(keep), &rank(id));
        assert_eq!(decided[&id], expected, "{case}: kept_by of {id} for {keep}");
    }
    let named = drop_urls(out);
    for &(id, keep, _) in &drops {
        let expected = (urls.get(&id).cloned(), urls.get(&keep).cloned());
        assert_eq!(named[&id], expected, "{case}: URLs of {id} and {keep}");
    }
    (clusters, drops)
}

#[test]
fn the_page_kept_follows_every_key_and_combination_of_keep_by() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(70);
    // Small random clusters, a chain and a star, some pairs with the corpus.
    let mut edges = random_edges(&mut rng, 3_000, 2_500, 0);
    edges.extend((0..300).map(|i| (10_000 + i, 10_001 + i, i % 4 != 0)));
    edges.extend((1..=200).map(|leaf| (20_000 + leaf, 20_000, leaf % 5 != 0)));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 3);
    let rows = random_pages(&edges, &mut rng);
    // A night's table holds every page fetched, most of them in no pair:
    // rows of other pages, with keys that would win any cluster, among the
    // rows and in a file of their own.
    let strangers: Vec<PageRow> = rows
        .iter()
        .map(|row| PageRow {
            id: row.id + 1_000_000_000,
            fetch_time: Some(0),
            url: Some("https://a.example/".to_string()),
            n_chars: 1_000_000,
            quality: Some(100.0),
        })
        .collect();
    let (among, alone) = strangers.split_at(strangers.len() / 2);
    let pages = write_pages(&dir.path().join("pages"), &[&rows, among].concat(), 3);
    write_pages(&dir.path().join("pages/others"), alone, 1);
    let in_corpus = corpus_pages(&edges);
    let urls = first_urls(&rows);
    let orders: [&[&str]; 8] = [
        &["corpus", "earliest", "canonical-url"],
        &["earliest"],
        &["latest"],
        &["canonical-url"],
        &["longest"],
        &["column:quality:desc"],
        &["corpus", "column:quality:asc", "longest", "latest"],
        &[
            "canonical-url",
            "longest",
            "earliest",
            "column:quality:desc",
        ],
    ];
    for keys in orders {
        let rank = keyed_rank(keys, &rows, None, &in_corpus);
        let expected = oracle_by(&edges, &rank);
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            let case = format!("--keep-by {} {policy}", keys.join(","));
            let out = dir.path().join(format!("out-{}-{policy}", keys.join("+")));
            let mut opts = options(&pairs, &out, false, policy, 2, 2);
            opts.keep_by = KeepOrder::parse(&keys.join(",")).unwrap();
            opts.pages = vec![pages.clone()];
            run_cluster(&opts).unwrap();
            let (clusters, drops) = assert_keyed_output(
                &out, &edges, &expected, keys, &rank, &distance, policy, &urls, &case,
            );
            if policy == DropPolicy::Direct {
                check_direct_invariants(&edges, &clusters, &drops, &case);
            }
            let summary: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
            assert_eq!(summary["keep_by"], serde_json::json!(keys), "{case}");
            assert_eq!(summary["drop_urls"], true, "{case}");
        }
    }
}

#[test]
fn keep_urls_of_pages_kept_from_the_corpus_come_from_the_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(73);
    let mut edges = random_edges(&mut rng, 3_000, 2_500, 0);
    edges.extend((1..=150).map(|leaf| (40_000 + leaf, 40_000, leaf % 4 == 0)));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 3);
    let in_corpus = corpus_pages(&edges);
    // The night's table has its own pages; the corpus the rest, among many
    // pages of no pair, in row groups most of which hold none of the drops.
    let (corpus_rows, night_rows): (Vec<PageRow>, Vec<PageRow>) = random_pages(&edges, &mut rng)
        .into_iter()
        .partition(|row| in_corpus.contains(&row.id));
    let pages = write_pages(&dir.path().join("pages"), &night_rows, 2);
    // The corpus also holds older copies of some of the night's pages under
    // other URLs, before its own rows: the night's table speaks for the
    // URLs of the pages it gives one.
    let with_url = night_rows.iter().filter(|row| row.url.is_some());
    let stale = with_url.step_by(7).map(|row| PageRow {
        url: Some(format!("https://stale.example/{}", row.id)),
        ..row.clone()
    });
    let corpus_table: Vec<PageRow> = stale.chain(corpus_rows.iter().cloned()).collect();
    // Three nights' batches, fetched a day apart (not in the order their
    // directories sort in), each ranked by its latest fetch time.
    let day = 86_400_000_000;
    let batches: Vec<Vec<PageRow>> = corpus_table
        .chunks(corpus_table.len().div_ceil(3))
        .zip([2, 0, 1])
        .map(|(rows, days)| {
            let later = |row: &PageRow| PageRow {
                fetch_time: row.fetch_time.map(|t| t + days * day),
                ..row.clone()
            };
            rows.iter().map(later).collect()
        })
        .collect();
    let corpus = dir.path().join("corpus");
    for (night, batch) in batches.iter().enumerate() {
        let night = corpus.join(format!("2026-12-0{}", night + 1));
        write_pages(&night, batch, 2);
        std::fs::write(night.join("_SUCCESS"), "").unwrap();
    }
    let corpus = corpus.display().to_string();
    let others: Vec<PageRow> = (0..40_000)
        .map(|i| PageRow {
            id: 1_000_000 + i,
            fetch_time: None,
            url: Some(format!("https://other.example/{i}")),
            n_chars: 0,
            quality: None,
        })
        .collect();
    let other = write_pages(&dir.path().join("other"), &others, 8);
    let mut urls = first_urls(&corpus_rows);
    urls.extend(first_urls(&night_rows));
    let default = KeepOrder::default_with_pages().to_string();
    let keys: Vec<&str> = default.split(',').collect();
    // A page of the corpus's shards is a corpus page, paired on a corpus
    // side or not (a page fetched again tonight), and its rows there are
    // keyed with the night's.
    let mut in_corpus = in_corpus;
    in_corpus.extend(corpus_table.iter().map(|row| row.id));
    let rank = keyed_rank(&keys, &night_rows, Some(&batches), &in_corpus);
    let expected = oracle_by(&edges, &rank);
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        let case = format!("--corpus, {policy}");
        let out = dir.path().join(format!("out-{policy}"));
        let mut opts = options(&pairs, &out, false, policy, 2, 2);
        opts.keep_by = KeepOrder::default_with_pages();
        opts.pages = vec![pages.clone()];
        opts.corpus = vec![other.clone(), corpus.clone()];
        run_cluster(&opts).unwrap();
        let (_, drops) = assert_keyed_output(
            &out, &edges, &expected, &keys, &rank, &distance, policy, &urls, &case,
        );
        let from_corpus = drops.iter().filter(|d| in_corpus.contains(&d.1)).count();
        assert!(
            from_corpus > 100,
            "{case}: {from_corpus} drops for corpus pages"
        );
        // Every process reads the corpus's times held: the same bytes.
        let processes = dir.path().join(format!("p2-{policy}"));
        let extra = ["--pages", &pages, "--corpus", &other, &corpus];
        run_processes_with(
            &pairs,
            &processes,
            &extra,
            policy,
            [2, 1, 2],
            &dir.path().join("hosts"),
        );
        assert!(
            data_files(&processes) == data_files(&out),
            "{case}, 2 processes"
        );
    }
}

/// A page's row with a fetch time and URL alone.
fn url_row(id: i64, fetch_time: Option<i64>, url: &str) -> PageRow {
    PageRow {
        id,
        fetch_time,
        url: Some(url.to_string()),
        n_chars: 100,
        quality: None,
    }
}

/// A crawl's second night: the page kept on the first is fetched again
/// (so it pairs with the copy dropped for it, now in the corpus, and not
/// with itself), and a new copy pairs with two corpus pages the night's
/// table has no row for. Both stay as the first night left them: a page
/// of the corpus's shards ranks as a corpus page, and is keyed by its
/// rows there.
#[test]
fn the_page_kept_last_night_is_kept_again_when_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let row = |id: i64, fetch_time: i64, url: &str| url_row(id, Some(fetch_time), url);
    let (kept, mirror) = (1, 2);
    let (new_copy, copy, original) = (10, 12, 13);
    let edges: Vec<Edge> = vec![
        (kept, mirror, true),
        (new_copy, copy, true),
        (new_copy, original, true),
    ];
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let night = vec![
        row(kept, 200, "https://site.example/a"),
        row(new_copy, 200, "http://scraper.example/2026/12/p"),
    ];
    let pages = write_pages(&dir.path().join("pages"), &night, 1);
    let corpus_rows = vec![
        row(kept, 100, "https://site.example/a"),
        row(mirror, 100, "http://mirror.example/copies/a"),
        row(copy, 100, "http://copy.example/x/y/p"),
        row(original, 100, "https://orig.example/p"),
    ];
    let corpus = write_pages(&dir.path().join("corpus"), &corpus_rows, 1);
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        for (keyed, workers) in [(true, 1), (true, 2), (false, 2)] {
            let case = format!("{policy}, keys {keyed}, {workers} workers");
            let out = dir.path().join(format!("out-{policy}-{keyed}-{workers}"));
            let mut opts = options(&pairs, &out, true, policy, workers, 1);
            if keyed {
                opts.keep_by = KeepOrder::default_with_pages();
                opts.pages = vec![pages.clone()];
            }
            opts.corpus = vec![corpus.clone()];
            run_cluster(&opts).unwrap();
            let (clusters, drops) = read_output(&out);
            let dropped: HashMap<i64, i64> = drops.iter().map(|d| (d.0, d.1)).collect();
            assert_eq!(dropped.get(&mirror), Some(&kept), "{case}: {drops:?}");
            assert!(!dropped.contains_key(&kept), "{case}: {drops:?}");
            if keyed {
                let cluster_of: HashMap<i64, i64> = clusters.iter().map(|c| (c.0, c.1)).collect();
                assert_eq!(cluster_of[&new_copy], original, "{case}: {clusters:?}");
                assert!(!dropped.contains_key(&original), "{case}: {drops:?}");
            }
        }
    }
}

/// Night 2 dropped the https copy for the mirror the corpus held since
/// night 1; night 3 kept the copy (an ad made it differ) and appended it;
/// on night 4 the ad is gone and the two pair as corpus pages. The mirror,
/// held longer, is kept again, though the copy's URL is the more
/// canonical. A page is held since its batch (a committed directory) was
/// complete, at its latest fetch, not since its own fetch: two pages of
/// one batch go by the next keys whatever minutes apart they were fetched,
/// a page of an earlier batch fetched late in it wins over one of a later
/// batch fetched before it, and a stray old page in a batch changes
/// nothing.
#[test]
fn the_page_held_longest_is_kept_when_two_corpus_pages_meet() {
    let dir = tempfile::tempdir().unwrap();
    let (mirror, copy) = (1, 2);
    let (older, newer) = (11, 12);
    let (twin_a, twin_b) = (21, 22);
    let (late_in_first, early_in_second) = (31, 32);
    let edges: Vec<Edge> = vec![
        (copy, mirror, true),
        (newer, older, true),
        (twin_a, twin_b, true),
        (late_in_first, early_in_second, true),
    ];
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 1);
    let night = vec![
        url_row(copy, Some(400), "https://site.example/a"),
        url_row(newer, Some(400), "https://news.example/b"),
    ];
    let pages = write_pages(&dir.path().join("pages"), &night, 1);
    let batches = [
        // A corpus shard from before fetch times: held the longest.
        (
            "archive",
            vec![url_row(older, None, "http://old.example/copies/b")],
        ),
        (
            "2026-12-01",
            vec![
                url_row(mirror, Some(100), "http://mirror.example/copies/a"),
                url_row(twin_a, Some(200), "http://twin.example/a/b/c"),
                url_row(twin_b, Some(260), "https://twin.example/c"),
                url_row(late_in_first, Some(150), "http://late.example/a/b/c"),
            ],
        ),
        (
            "2026-12-02",
            vec![
                url_row(newer, Some(300), "https://news.example/b"),
                url_row(early_in_second, Some(120), "https://early.example/c"),
                url_row(41, Some(10), "https://stray.example/old"),
            ],
        ),
        (
            "2026-12-03",
            vec![url_row(copy, Some(350), "https://site.example/a")],
        ),
        // A crawler's clock set wrong: its batch is held the shortest.
        (
            "clock-wrong",
            vec![url_row(
                51,
                Some(4_102_444_800_000_000),
                "https://x.example/",
            )],
        ),
    ];
    let corpus = dir.path().join("corpus");
    for (batch, rows) in &batches {
        write_pages(&corpus.join(batch), rows, 2);
        std::fs::write(corpus.join(batch).join("_SUCCESS"), "").unwrap();
    }
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        for workers in [1, 2] {
            let case = format!("{policy}, {workers} workers");
            let out = dir.path().join(format!("out-{policy}-{workers}"));
            let mut opts = options(&pairs, &out, false, policy, workers, 2);
            opts.keep_by = KeepOrder::default_with_pages();
            opts.pages = vec![pages.clone()];
            opts.corpus = vec![corpus.display().to_string()];
            run_cluster(&opts).unwrap();
            let (_, drops) = read_output(&out);
            let dropped: HashMap<i64, i64> = drops.iter().map(|d| (d.0, d.1)).collect();
            let expected = HashMap::from([
                (copy, mirror),
                (newer, older),
                (twin_a, twin_b),
                (early_in_second, late_in_first),
            ]);
            assert_eq!(dropped, expected, "{case}");
            let by = kept_by(&out);
            assert_eq!(by[&copy], "corpus", "{case}");
            assert_eq!(by[&newer], "corpus", "{case}");
            assert_eq!(by[&twin_a], "canonical-url", "{case}");
            assert_eq!(by[&early_in_second], "corpus", "{case}");
            // `_summary.json` lists the batches in the order they rank.
            let summary: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
            let listed: Vec<(String, u64, Option<&str>, bool)> = summary["corpus_batches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    let batch = b["batch"].as_str().unwrap();
                    let name = batch
                        .strip_prefix(&format!("{}/", corpus.display()))
                        .unwrap();
                    let time = b["latest_fetch_time"].as_str();
                    let groups = b["row_groups"].as_u64().unwrap();
                    (name.to_string(), groups, time, b["after_now"] == true)
                })
                .collect();
            let expected = [
                ("archive", 1, None, false),
                ("2026-12-01", 2, Some("1970-01-01T00:00:00.000260Z"), false),
                ("2026-12-02", 2, Some("1970-01-01T00:00:00.000300Z"), false),
                ("2026-12-03", 1, Some("1970-01-01T00:00:00.000350Z"), false),
                ("clock-wrong", 1, Some("2100-01-01T00:00:00Z"), true),
            ]
            .map(|(name, groups, time, after)| (name.to_string(), groups, time, after));
            assert_eq!(listed, expected, "{case}");
            assert_eq!(summary["corpus_rows"], 10, "{case}");
        }
    }
}

/// A committed output is one batch however its files are given: whole,
/// file by file from its partitions (a Spark output's `date=` folders), or
/// by a glob, however spelt, and a file named twice counts once. Given file by file, a partition's file was a
/// batch of its own, timed by its own latest fetch, and the page of the
/// batch completed later was kept.
#[test]
fn a_committed_output_is_one_batch_however_its_files_are_given() {
    let dir = tempfile::tempdir().unwrap();
    let (in_x, in_y) = (1, 2);
    let pairs = write_edges(&dir.path().join("pairs"), &[(in_x, in_y, true)], 1);
    let night = [
        url_row(in_x, Some(400), "https://x.example/a"),
        url_row(in_y, Some(400), "https://y.example/b"),
    ];
    let pages = write_pages(&dir.path().join("pages"), &night, 1);
    // X's first partition was fetched before Y, its second after: X was
    // complete after Y.
    let corpus = dir.path().join("corpus");
    let x1 = [url_row(in_x, Some(100), "https://x.example/a")];
    write_pages(&corpus.join("x/date=1"), &x1, 1);
    let x2 = [url_row(3, Some(300), "https://x.example/c")];
    write_pages(&corpus.join("x/date=2"), &x2, 1);
    let y = [url_row(in_y, Some(200), "https://y.example/b")];
    write_pages(&corpus.join("y"), &y, 1);
    for batch in ["x", "y"] {
        std::fs::write(corpus.join(batch).join("_SUCCESS"), "").unwrap();
    }
    let at = |path: &str| format!("{}/{path}", corpus.display());
    let ways = [
        vec![at("x"), at("y")],
        vec![
            at("x/date=1/pages-0.parquet"),
            at("x/date=2/pages-0.parquet"),
            at("y/pages-0.parquet"),
        ],
        vec![at("./x/*/*.parquet"), at("y/")],
        // Each file named twice is read once.
        vec![at("x"), at("y"), at("x/date=1/pages-0.parquet"), at("y/")],
    ];
    for (way, corpus_paths) in ways.into_iter().enumerate() {
        let out = dir.path().join(format!("out-{way}"));
        let mut opts = options(&pairs, &out, false, DropPolicy::Direct, 2, 1);
        opts.keep_by = KeepOrder::default_with_pages();
        opts.pages = vec![pages.clone()];
        opts.corpus = corpus_paths;
        run_cluster(&opts).unwrap();
        let (_, drops) = read_output(&out);
        let dropped: Vec<(i64, i64)> = drops.iter().map(|d| (d.0, d.1)).collect();
        assert_eq!(dropped, [(in_x, in_y)], "way {way}");
        assert_eq!(kept_by(&out)[&in_x], "corpus", "way {way}");
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("_summary.json")).unwrap()).unwrap();
        let batches: Vec<&str> = summary["corpus_batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["batch"].as_str().unwrap())
            .collect();
        assert_eq!(batches, [at("y"), at("x")], "way {way}");
        let row_groups: Vec<u64> = summary["corpus_batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["row_groups"].as_u64().unwrap())
            .collect();
        assert_eq!(row_groups, [1, 2], "way {way}");
        assert_eq!(summary["corpus_rows"], 3, "way {way}");
    }
    // A batch whose fetch_time is epoch seconds cannot rank beside
    // timestamps: one line names both files, and nothing is written.
    let seconds = corpus.join("z/pages-0.parquet");
    std::fs::create_dir_all(seconds.parent().unwrap()).unwrap();
    crate::common::write_batch(
        &seconds,
        vec![
            ("id", Arc::new(Int64Array::from(vec![4]))),
            (
                "fetch_time",
                Arc::new(Int64Array::from(vec![1_764_000_000])),
            ),
        ],
    );
    let out = dir.path().join("out-mixed");
    let shown = out.display().to_string();
    let (x, z) = (at("x"), at("z"));
    let args = [
        "cluster", "--pairs", &pairs, "--out", &shown, "--pages", &pages, "--corpus", &x, &z,
    ];
    let output = crate::common::neardup(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    let expected = format!(
        "{}: column `fetch_time` holds integers (Int64), but in ",
        seconds.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("it holds times or dates"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!out.exists());
}

/// Two pages of one corpus batch (the archive has no score), scored by
/// the night's table on the nights that crawl them again: a corpus page
/// ranks by its corpus rows, so the same page is kept on a night that
/// crawls both and on one that crawls only the lower-scored one. Ranked
/// by the night's rows, the score would keep one the first night and the
/// other the next, and acting on both drop lists would drop both.
#[test]
fn corpus_pages_rank_by_their_corpus_rows_alike_every_night() {
    let dir = tempfile::tempdir().unwrap();
    let (short, scored) = (1, 2);
    let pairs = write_edges(&dir.path().join("pairs"), &[(short, scored, true)], 1);
    let corpus = dir.path().join("corpus").join("archive");
    let archive = [
        url_row(short, Some(100), "https://site.example/a"),
        url_row(scored, Some(200), "https://site.example/a/b/c"),
    ];
    write_pages(&corpus, &archive, 1);
    std::fs::write(corpus.join("_SUCCESS"), "").unwrap();
    let score = |row: PageRow, quality: f64| PageRow {
        quality: Some(quality),
        ..row
    };
    let both = vec![
        score(url_row(short, Some(500), "https://site.example/a"), 0.1),
        score(
            url_row(scored, Some(500), "https://site.example/a/b/c"),
            0.9,
        ),
    ];
    let one = vec![both[0].clone()];
    for (night, rows) in [("both", both), ("one", one)] {
        let pages = write_pages(&dir.path().join(night), &rows, 1);
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            let case = format!("{night}, {policy}");
            let out = dir.path().join(format!("out-{night}-{policy}"));
            let mut opts = options(&pairs, &out, false, policy, 2, 1);
            opts.keep_by = KeepOrder::parse("corpus,column:quality:desc,canonical-url").unwrap();
            opts.pages = vec![pages.clone()];
            opts.corpus = vec![corpus.display().to_string()];
            run_cluster(&opts).unwrap();
            let (_, drops) = read_output(&out);
            let dropped: HashMap<i64, i64> = drops.iter().map(|d| (d.0, d.1)).collect();
            assert_eq!(dropped, HashMap::from([(scored, short)]), "{case}");
            assert_eq!(kept_by(&out)[&scored], "canonical-url", "{case}");
        }
    }
}

/// Writes pages with canonical links, `(id, url, canonical_url)`, as one
/// committed batch (or a night's table) in `dir`.
fn write_linked_pages(dir: &Path, rows: &[(i64, &str, Option<&str>)]) -> String {
    use arrow_array::{RecordBatch, StringArray, TimestampMicrosecondArray};
    std::fs::create_dir_all(dir).unwrap();
    let column = |values: Vec<Option<&str>>| Arc::new(StringArray::from(values));
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0)))
                as arrow_array::ArrayRef,
        ),
        ("url", column(rows.iter().map(|r| Some(r.1)).collect())),
        ("canonical_url", column(rows.iter().map(|r| r.2).collect())),
        (
            "fetch_time",
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.0))
                    .with_timezone("UTC"),
            ),
        ),
    ])
    .unwrap();
    let file = File::create(dir.join("part-00000.parquet")).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    std::fs::write(dir.join("_SUCCESS"), "").unwrap();
    dir.display().to_string()
}

/// An archive (one batch, never deduplicated) holds an article and its
/// alias, whose link names it, and a site's AMP view and a syndicated
/// copy that both name a page the corpus does not hold. Whichever of them
/// a night crawls again, or none (a new copy pairs with them), or the
/// page the view names (new tonight, so it ranks after corpus pages), the
/// same page is kept: the article, which the corpus holds though the
/// night's table does not list it, and the AMP view, whose link a page
/// crawled tonight alone does not make a link to another (it would lose
/// to the syndicated copy on that night only). A page kept one night and
/// dropped the next would leave acting on both drop lists with neither.
#[test]
fn a_canonical_link_to_a_corpus_page_ranks_alike_whichever_pages_a_night_crawls() {
    let dir = tempfile::tempdir().unwrap();
    let (article, alias, amp, copy, new, other_new, named) = (1, 2, 3, 4, 9, 8, 5);
    let article_url = "https://site.example/docs/a.html";
    let rows = [
        (article, article_url, Some(article_url)),
        (alias, "https://site.example/a", Some(article_url)),
        (
            amp,
            "https://amp.site.example/b",
            Some("https://site.example/b"),
        ),
        (
            copy,
            "https://news.example/b",
            Some("https://site.example/b"),
        ),
        (new, "https://copy.example/x", None),
        (other_new, "https://copy.example/y", None),
        (
            named,
            "https://site.example/b",
            Some("https://site.example/b"),
        ),
    ];
    let corpus = write_linked_pages(&dir.path().join("corpus/archive"), &rows[..4]);
    // Each night: the rows crawled again, the pairs, and the pages the
    // direct policy drops (component drops every page paired but the two).
    let nights = [
        ("alias", vec![1], vec![(alias, article, false)], vec![alias]),
        (
            "both",
            vec![0, 1],
            vec![(alias, article, true)],
            vec![alias],
        ),
        ("amp", vec![2], vec![(amp, copy, false)], vec![copy]),
        (
            "named",
            vec![6],
            vec![(named, amp, false), (named, copy, false)],
            vec![named],
        ),
        (
            "none",
            vec![4, 5],
            vec![
                (new, article, false),
                (new, alias, false),
                (other_new, amp, false),
                (other_new, copy, false),
            ],
            vec![new, other_new],
        ),
    ];
    for (night, crawled, edges, direct_drops) in nights {
        let crawled: Vec<_> = crawled.iter().map(|&at| rows[at]).collect();
        let pages = write_linked_pages(&dir.path().join(night).join("pages"), &crawled);
        let pairs = write_edges(&dir.path().join(night).join("pairs"), &edges, 1);
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            let case = format!("{night}, {policy}");
            let out = dir.path().join(night).join(format!("out-{policy}"));
            let mut opts = options(&pairs, &out, false, policy, 2, 1);
            opts.keep_by = KeepOrder::default_with_pages();
            opts.pages = vec![pages.clone()];
            opts.corpus = vec![corpus.clone()];
            run_cluster(&opts).unwrap();
            let (_, drops) = read_output(&out);
            let mut dropped: Vec<i64> = drops.iter().map(|d| d.0).collect();
            dropped.sort_unstable();
            let mut expected = match policy {
                DropPolicy::Direct => direct_drops.clone(),
                DropPolicy::Component => {
                    let mut paired: Vec<i64> = edges.iter().flat_map(|e| [e.0, e.1]).collect();
                    paired.retain(|&id| id != article && id != amp);
                    paired.dedup();
                    paired
                }
            };
            expected.sort_unstable();
            expected.dedup();
            assert_eq!(dropped, expected, "{case}: {drops:?}");
            if night == "none" {
                let processes = dir.path().join(night).join(format!("p2-{policy}"));
                let extra = ["--pages", &pages, "--corpus", &corpus];
                let hosts = dir.path().join("hosts");
                run_processes_with(&pairs, &processes, &extra, policy, [2, 1, 1], &hosts);
                assert!(
                    data_files(&processes) == data_files(&out),
                    "{case}: 2 processes"
                );
            }
        }
    }
}

/// Spark writes INT96 times, whose statistics Parquet readers do not
/// order: the output it committed is held since its latest time (9999,
/// page 4's), read from the column. So a page of a batch complete in 5000
/// is held longer than its page 3, fetched in 2026.
#[test]
fn a_batch_spark_wrote_is_held_since_its_latest_int96_time() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    let spark = corpus.join("2026-11-01");
    std::fs::create_dir_all(&spark).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spark");
    std::fs::copy(
        fixture.join("pages-int96.parquet"),
        spark.join("part-00000.parquet"),
    )
    .unwrap();
    let in_5000 = 95_617_584_000_000_000;
    let other = corpus.join("2026-12-01");
    write_pages(
        &other,
        &[url_row(7, Some(in_5000), "https://b.example/7")],
        1,
    );
    for batch in [&spark, &other] {
        std::fs::write(batch.join("_SUCCESS"), "").unwrap();
    }
    let pairs = write_edges(&dir.path().join("pairs"), &[(7, 3, true)], 1);
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        let out = dir.path().join(format!("out-{policy}"));
        let mut opts = options(&pairs, &out, false, policy, 2, 1);
        opts.keep_by = KeepOrder::parse("corpus").unwrap();
        opts.corpus = vec![corpus.display().to_string()];
        run_cluster(&opts).unwrap();
        let (_, drops) = read_output(&out);
        let dropped: HashMap<i64, i64> = drops.iter().map(|d| (d.0, d.1)).collect();
        assert_eq!(dropped, HashMap::from([(3, 7)]), "{policy}");
    }
}

#[test]
fn keep_by_gives_the_same_bytes_on_any_workers_and_processes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(71);
    let mut edges = random_edges(&mut rng, 4_000, 3_500, 0);
    edges.extend((0..1_500).map(|i| (50_000 + i, 50_001 + i, i % 3 == 0)));
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 4);
    let rows = random_pages(&edges, &mut rng);
    let pages = write_pages(&dir.path().join("pages"), &rows, 2);
    for policy in [DropPolicy::Direct, DropPolicy::Component] {
        let run = |workers: usize, name: &str| {
            let out = dir.path().join(format!("{name}-{policy}"));
            let mut opts = options(&pairs, &out, false, policy, workers, 3);
            opts.keep_by = KeepOrder::default_with_pages();
            opts.pages = vec![pages.clone()];
            run_cluster(&opts).unwrap();
            out
        };
        let expected = data_files(&run(1, "w1"));
        for workers in [2, 4] {
            let out = run(workers, &format!("w{workers}"));
            assert!(data_files(&out) == expected, "{workers} workers, {policy}");
        }
        let out = dir.path().join(format!("p2-{policy}"));
        run_processes_with(
            &pairs,
            &out,
            &["--pages", &pages],
            policy,
            [2, 2, 3],
            &dir.path().join("hosts"),
        );
        assert!(data_files(&out) == expected, "2 processes, {policy}");
    }
}

/// A pages table none of whose rows is a page of the pairs (another
/// night's, say) ranks nothing: the run says so, naming the table, and
/// still writes what the ids alone decide. One row that is a page is
/// enough to say nothing.
#[test]
fn a_pages_table_of_other_pages_is_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let pairs_dir = dir.path().join("pairs");
    write_edges(&pairs_dir, &[(1, 2, true), (2, 3, false)], 1);
    let pairs = pairs_dir.to_str().unwrap().to_string();
    let table = |name: &str, ids: &[i64]| {
        let rows: Vec<PageRow> = ids
            .iter()
            .map(|&id| PageRow {
                id,
                fetch_time: Some(id),
                url: Some(format!("https://a/{id}")),
                n_chars: 5,
                quality: None,
            })
            .collect();
        write_pages(&dir.path().join(name), &rows, 1)
    };
    let run = |pages: &str, name: &str| {
        let out = dir.path().join(name);
        let args = ["cluster", "--pairs", &pairs, "--pages", pages, "--out"];
        let output = crate::common::neardup(&[&args[..], &[out.to_str().unwrap()]].concat());
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stderr).unwrap()
    };
    let other = table("other-night", &[10, 20, 30]);
    let said = run(&other, "other");
    assert!(
        said.contains(&format!(
            "--pages {other}: no row's id is a page of the pairs"
        )),
        "{said}"
    );
    let one = table("one-page", &[10, 3]);
    let said = run(&one, "one");
    assert!(!said.contains("no row's id"), "{said}");
}

#[test]
fn bad_keep_by_input_gets_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let edges: Vec<Edge> = vec![(1, 2, true), (2, 3, false)];
    let pairs_dir = dir.path().join("pairs");
    write_edges(&pairs_dir, &edges, 1);
    let pairs = pairs_dir.join("part-00000.parquet");
    let rows: Vec<PageRow> = (1..=3)
        .map(|id| PageRow {
            id,
            fetch_time: Some(id),
            url: Some(format!("https://a/{id}")),
            n_chars: 5,
            quality: Some(1.0),
        })
        .collect();
    let pages = write_pages(&dir.path().join("pages"), &rows, 1);
    let pages_file = format!("{pages}/pages-0.parquet");
    // A table of ids and URLs: no fetch_time for the default's `earliest`.
    let urls_only = dir.path().join("urls.parquet");
    crate::common::write_batch(
        &urls_only,
        vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2]))),
            (
                "url",
                Arc::new(arrow_array::StringArray::from(vec![
                    "https://a/1",
                    "https://a/2",
                ])),
            ),
        ],
    );
    let urls_only = urls_only.display().to_string();
    for (extra, said) in [
        (
            vec!["--pages", &urls_only],
            "urls.parquet: no column `fetch_time` (columns: id, url), which --keep-by corpus,rel-canonical,canonical-url,earliest reads (the default with --pages",
        ),
        (
            vec!["--pages", &pages, "--keep-by", "column:score:desc"],
            "no column `score`",
        ),
        (
            vec!["--pages", &pages, "--keep-by", "column:url:asc"],
            "column `url` has type Utf8",
        ),
        (
            vec!["--pages", &pages, "--keep-by", "newest"],
            "unknown key `newest`",
        ),
        (vec!["--keep-by", "earliest"], "give it with --pages"),
        (
            vec!["--pages", &pages, "--keep-by", "earliest,corpus"],
            "corpus can only be the first key",
        ),
        (
            vec!["--pages", &pages, "--corpus-wins", "--keep-by", "earliest"],
            "give one or the other",
        ),
    ] {
        let error = one_line_failure(&pairs, &extra);
        assert!(error.contains(said), "{extra:?}: {error}");
        if said.starts_with("no column") || said.contains("has type") {
            assert!(
                error.contains(&pages_file),
                "{extra:?} names the file: {error}"
            );
        }
    }
    // Pairs made elsewhere have no `self_pair`: the corpus key, asked
    // for, cannot work (the default order leaves it out: tests/it/spark.rs).
    let bare = dir.path().join("bare").join("pairs.parquet");
    std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
    write_foreign_pairs(&bare, &edges, true);
    let error = one_line_failure(&bare, &["--pages", &pages, "--keep-by", "corpus,earliest"]);
    assert!(
        error.contains("no column `self_pair`") && error.contains("--keep-by corpus"),
        "{error}"
    );
    let error = one_line_failure(&bare, &["--keep-by", "corpus"]);
    assert!(error.contains("no column `self_pair`"), "{error}");

    // A column read only if there, of another type: refused, not passed
    // over (the key never applied, or drop/ lost its URLs, unsaid).
    let typed = |name: &str, column: &str| {
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        let path = dir.path().join(format!("{name}.parquet"));
        let mut columns = vec![("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef)];
        if column != "url" {
            let urls = StringArray::from(vec!["https://a/1", "https://a/2", "https://a/3"]);
            columns.push(("url", Arc::new(urls)));
        }
        columns.push((column, Arc::new(Int64Array::from(vec![7, 8, 9]))));
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let file = File::create(&path).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        path.to_string_lossy().into_owned()
    };
    let int_url = typed("int-url", "url");
    let int_canonical = typed("int-canonical", "canonical_url");
    for (extra, file, column) in [
        (
            vec!["--pages", &int_url, "--keep-by", "corpus"],
            &int_url,
            "url",
        ),
        (
            vec!["--pages", &int_canonical, "--keep-by", "rel-canonical"],
            &int_canonical,
            "canonical_url",
        ),
        (vec!["--corpus", &int_url], &int_url, "url"),
    ] {
        let error = one_line_failure(&pairs, &extra);
        let said = format!("{file}: column `{column}` has type Int64, expected a string");
        assert!(error.contains(&said), "{extra:?}: {error}");
    }
}

/// Reads a directory of Parquet files whole.
fn read_table(dir: &Path) -> Vec<arrow_array::RecordBatch> {
    let mut batches = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "parquet") {
            let file = File::open(&path).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
            batches.extend(reader.map(|b| b.unwrap()));
        }
    }
    batches
}

/// Writes `warc_writer.py MODE`'s crawl into `d/crawl`, its fingerprints
/// into `d/fp` and their pairs (`match --self`) into `d/pairs`.
fn warcio_crawl_and_pairs(d: &Path, mode: &str) {
    let crawl = d.join("crawl");
    crate::common::write_warcio_crawl(mode, &crawl);
    let (fp, pairs) = (d.join("fp"), d.join("pairs"));
    let (fp, pairs) = (fp.to_str().unwrap(), pairs.to_str().unwrap());
    crate::common::run_ok(&[
        "fingerprint",
        "--input",
        crawl.to_str().unwrap(),
        "--out",
        fp,
    ]);
    crate::common::run_ok(&["match", "--queries", fp, "--self", "--out", pairs]);
}

/// A warcio crawl in which each original page is the one its sites name
/// canonical (in the head, or in an HTTP `Link` header), and every copy has
/// a URL and fetch time the other keys prefer: the default keys keep the
/// originals, the keys without `rel-canonical` do not. A page whose head's
/// links name two pages names none.
#[test]
fn the_default_keys_keep_the_page_its_copies_name_canonical() {
    use arrow_array::cast::AsArray;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    warcio_crawl_and_pairs(d, "canonical");
    let (fp, pairs) = (d.join("fp"), d.join("pairs"));
    let (fp, pairs) = (fp.to_str().unwrap(), pairs.to_str().unwrap());

    let mut url_of = HashMap::new();
    let mut originals = HashSet::new();
    for batch in read_table(Path::new(fp)) {
        let ids = int64s(&batch, 0);
        let urls = batch.column_by_name("url").unwrap().as_string::<i32>();
        let canonicals = batch.column_by_name("canonical_url").unwrap();
        let canonicals = canonicals.as_string::<i32>();
        for (r, &id) in ids.iter().enumerate() {
            let url = urls.value(r);
            let names = ["apache-2.0", "gpl-3", "mpl-2.0", "lgpl-2.1"];
            let name = url.split('/').find(|part| names.contains(part)).unwrap();
            let original = format!("http://publisher.example/articles/2024/{name}/full-story.html");
            let named = url == original
                || url.starts_with("https://publisher.example/amp/")
                || url.starts_with("https://news.example/");
            let canonical = canonicals.is_valid(r).then(|| canonicals.value(r));
            assert_eq!(canonical, named.then_some(original.as_str()), "{url}");
            if url == original {
                originals.insert(id);
            }
            url_of.insert(id, url.to_string());
        }
    }
    assert_eq!((url_of.len(), originals.len()), (20, 4));
    // Each dropped page and the key its kept page won by.
    let dropped = |keep_by: &str| -> HashMap<i64, String> {
        let out = d.join(format!("clusters-{keep_by}"));
        crate::common::run_ok(&[
            "cluster",
            "--pairs",
            pairs,
            "--pages",
            fp,
            "--keep-by",
            keep_by,
            "--out",
            out.to_str().unwrap(),
        ]);
        kept_by(&out)
    };
    // Every copy is dropped for its original, which wins by naming itself
    // canonical where the copy names it or nothing.
    let copies: HashMap<i64, String> = url_of
        .keys()
        .filter(|id| !originals.contains(id))
        .map(|&id| (id, "rel-canonical".to_string()))
        .collect();
    assert_eq!(
        dropped(&KeepOrder::default_with_pages().to_string()),
        copies
    );
    let without = dropped("corpus,canonical-url,earliest");
    assert!(
        originals.iter().all(|id| without.contains_key(id)),
        "the https copies win without rel-canonical"
    );
    for (id, key) in &without {
        assert!(
            key == "canonical-url" || key == "earliest",
            "{}: kept by {key}",
            url_of[id]
        );
    }
}

/// The same crawl without the originals: the pages the links name were
/// never crawled. The site's own page naming one (its AMP view) ranks as
/// if it named itself, and is kept; another site's naming it (a
/// syndicated copy) ranks next, before copies that name nothing and have
/// the shorter URL (the key once ranked those first, and then ranked the
/// syndicated copy with the site's own, keeping it by URL). The same bytes
/// on 1 and 2 workers and 2 processes, each of which lists every page of
/// the table.
#[test]
fn a_page_naming_a_page_never_crawled_wins_over_copies_naming_none() {
    use arrow_array::cast::AsArray;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    warcio_crawl_and_pairs(d, "canonical-uncrawled");
    let (fp, pairs) = (d.join("fp"), d.join("pairs"));
    let mut url_of = HashMap::new();
    for batch in read_table(&fp) {
        let urls = batch.column_by_name("url").unwrap().as_string::<i32>();
        for (&id, url) in int64s(&batch, 0).iter().zip(urls.iter()) {
            url_of.insert(id, url.unwrap().to_string());
        }
    }
    assert_eq!(url_of.len(), 16);
    let outs = ["1", "2"].map(|workers| {
        let out = d.join(format!("clusters-{workers}"));
        crate::common::run_ok(&[
            "cluster",
            "--pairs",
            pairs.to_str().unwrap(),
            "--pages",
            fp.to_str().unwrap(),
            "--workers",
            workers,
            "--out",
            out.to_str().unwrap(),
        ]);
        out
    });
    let (_, drops) = read_output(&outs[0]);
    let by = kept_by(&outs[0]);
    assert_eq!(drops.len(), 12, "each of 4 clusters keeps one page");
    for &(id, keep_id, ..) in &drops {
        let (url, kept) = (&url_of[&id], &url_of[&keep_id]);
        assert!(
            kept.starts_with("https://publisher.example/amp/"),
            "{url} dropped for {kept}"
        );
        assert_eq!(by[&id], "rel-canonical", "{url} dropped for {kept}");
    }

    assert_eq!(data_files(&outs[0]), data_files(&outs[1]), "2 workers");
    let processes = d.join("clusters-p2");
    let pages = ["--pages", fp.to_str().unwrap()];
    let shape = [2, 1, 1];
    run_processes_with(
        pairs.to_str().unwrap(),
        &processes,
        &pages,
        DropPolicy::Direct,
        shape,
        &d.join("hosts"),
    );
    assert_eq!(data_files(&outs[0]), data_files(&processes), "2 processes");
}

/// Real pages that name their site's copy canonical (Node.js's API docs and
/// Underscore's home, as Debian ships them), each at a mirror as it is, at
/// a shorter URL with its link cut out (a scraper's copy, fetched first),
/// and every other one also at the URL its link names. The default keys
/// keep the page named where it was crawled, else the mirror: never the
/// copy, which the key ranked first when the page named was not crawled.
#[test]
fn real_pages_keep_the_page_their_canonical_links_name_else_their_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let crawl = d.join("crawl");
    let pages = "pages with canonical links (Debian's nodejs docs)";
    if !crate::common::write_warcio_crawl_of_real_pages("canonical-docs", &crawl, pages) {
        return;
    }
    let path = |name: &str| d.join(name).to_str().unwrap().to_string();
    let warc = crawl.join("docs.warc.gz");
    let fp = path("fp");
    let run = |args: &[&str]| crate::common::run_ok(args);
    run(&[
        "fingerprint",
        "--input",
        warc.to_str().unwrap(),
        "--out",
        &fp,
    ]);
    run(&["match", "--queries", &fp, "--self", "--out", &path("pairs")]);
    let out = path("clusters");
    run(&[
        "cluster",
        "--pairs",
        &path("pairs"),
        "--pages",
        &fp,
        "--out",
        &out,
    ]);

    let manifest = std::fs::read_to_string(crawl.join("manifest.json")).unwrap();
    let manifest: Vec<serde_json::Value> = serde_json::from_str(&manifest).unwrap();
    let mut page_of = HashMap::new();
    for batch in read_table(Path::new(&fp)) {
        let urls = batch.column_by_name("url").unwrap().as_string::<i32>();
        for (&id, url) in int64s(&batch, 0).iter().zip(urls.iter()) {
            let record = manifest.iter().find(|r| r["url"] == url.unwrap()).unwrap();
            let field = |name: &str| record[name].as_str().unwrap().to_string();
            page_of.insert(id, (field("page"), field("role")));
        }
    }
    let (clusters, drops) = read_output(Path::new(&out));
    let dropped: HashMap<i64, i64> = drops.iter().map(|&(id, keep, _)| (id, keep)).collect();
    let mut kept_of: HashMap<&str, Vec<&str>> = HashMap::new();
    for &(id, ..) in &clusters {
        let (page, role) = &page_of[&id];
        match dropped.get(&id) {
            Some(keep) => assert_eq!(&page_of[keep].0, page, "{role} dropped for another page"),
            None => kept_of
                .entry(page.as_str())
                .or_default()
                .push(role.as_str()),
        }
    }
    let with_original: HashSet<&str> = page_of
        .values()
        .filter(|(_, role)| role == "original")
        .map(|(page, _)| page.as_str())
        .collect();
    assert!(kept_of.len() >= 60, "{} pages paired", kept_of.len());
    for (page, kept) in &kept_of {
        let expected = match with_original.contains(page) {
            true => "original",
            false => "mirror",
        };
        assert_eq!(kept, &[expected], "{page}");
    }
}

#[test]
fn a_warcio_crawl_of_copies_keeps_the_page_each_key_asks_for() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, TimestampMicrosecondType};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    warcio_crawl_and_pairs(d, "copies");
    let (fingerprints, pairs) = (d.join("fp"), d.join("pairs"));
    let fp = fingerprints.to_str().unwrap();

    let mut rows = Vec::new();
    for batch in read_table(&fingerprints) {
        let ids = int64s(&batch, 0);
        let urls = batch.column_by_name("url").unwrap().as_string::<i32>();
        let times = batch
            .column_by_name("fetch_time")
            .unwrap()
            .as_primitive::<TimestampMicrosecondType>();
        let chars = batch
            .column_by_name("n_chars")
            .unwrap()
            .as_primitive::<Int32Type>();
        for (r, &id) in ids.iter().enumerate() {
            rows.push(PageRow {
                id,
                fetch_time: times.is_valid(r).then(|| times.value(r)),
                url: Some(urls.value(r).to_string()),
                n_chars: chars.value(r),
                quality: None,
            });
        }
    }
    assert_eq!(rows.len(), 35);
    assert!(
        rows.iter().all(|r| r.fetch_time.is_some()),
        "every page has its WARC-Date"
    );
    let mut edges = Vec::new();
    let mut distances = HashMap::new();
    for batch in read_table(&pairs) {
        let (q, c) = (int64s(&batch, 0), int64s(&batch, 1));
        let d = batch
            .column_by_name("distance")
            .unwrap()
            .as_primitive::<arrow_array::types::Int8Type>();
        let own = batch.column_by_name("self_pair").unwrap().as_boolean();
        for r in 0..batch.num_rows() {
            edges.push((q[r], c[r], own.value(r)));
            distances.insert((q[r].min(c[r]), q[r].max(c[r])), d.value(r) as u8);
        }
    }
    let distance_of = |a: i64, b: i64| distances[&(a.min(b), a.max(b))];
    // The copies of each text are near-duplicates (some copies with a line
    // more or less are too far), so clusters of several copies form.
    assert!(edges.len() >= 40, "{} pairs", edges.len());
    let url_of: HashMap<i64, String> = rows
        .iter()
        .map(|r| (r.id, r.url.clone().unwrap()))
        .collect();
    let in_corpus = HashSet::new();
    for keys in [
        &["corpus", "earliest", "canonical-url"][..],
        &["earliest"],
        &["latest"],
        &["canonical-url"],
        &["longest", "canonical-url"],
        &["latest", "longest"],
    ] {
        let rank = keyed_rank(keys, &rows, None, &in_corpus);
        let expected = oracle_by(&edges, &rank);
        for policy in [DropPolicy::Direct, DropPolicy::Component] {
            let case = format!("--keep-by {} {policy}", keys.join(","));
            let out = d.join(format!("out-{}-{policy}", keys.join("+")));
            crate::common::run_ok(&[
                "cluster",
                "--pairs",
                pairs.to_str().unwrap(),
                "--pages",
                fp,
                "--keep-by",
                &keys.join(","),
                "--drop-policy",
                &policy.to_string(),
                "--out",
                out.to_str().unwrap(),
            ]);
            let (clusters, _) = assert_keyed_output(
                &out,
                &edges,
                &expected,
                keys,
                &rank,
                &distance_of,
                policy,
                &url_of,
                &case,
            );
            // What a crawl engineer reads off the list: the kept copy is the
            // canonical one, or the first crawled.
            let kept: HashSet<&str> = clusters.iter().map(|c| url_of[&c.1].as_str()).collect();
            assert!(kept.len() >= 5, "{case}: {kept:?}");
            match keys[0] {
                "canonical-url" => {
                    assert!(
                        kept.iter()
                            .all(|u| u.starts_with("https://licences.example.org/")
                                && !u.contains('?')),
                        "{case}: {kept:?}"
                    )
                }
                "corpus" | "earliest" => assert!(
                    kept.iter().all(|u| u.contains("licences.example.org/")),
                    "{case}: {kept:?}"
                ),
                _ => {}
            }
        }
    }
}

/// The default keys keep the page a crawl engineer would keep when each
/// copy was fetched before its original: the https page, not its mobile,
/// AMP, print, tracking or `index.html` view; and one pair (1 drop) in a
/// part of its own finishes (its id table once had no empty slot).
#[test]
fn the_default_keys_keep_the_original_over_a_view_fetched_earlier() {
    let dir = tempfile::tempdir().unwrap();
    let originals_and_views = [
        (
            "https://news.example/2026/story",
            "http://news.example/2026/story",
        ),
        (
            "https://news.example/story",
            "https://news.example/story?utm_source=feed",
        ),
        (
            "https://www.news.example/story",
            "https://m.news.example/story",
        ),
        (
            "https://news.example/story",
            "https://news.example/amp/story",
        ),
        (
            "https://news.example/story",
            "https://news.example/story/print",
        ),
        (
            "https://news.example/guide/",
            "https://news.example/guide/index.html",
        ),
        (
            "https://news.example/p?id=7",
            "https://news.example/p?id=7&print=1",
        ),
        (
            "https://news.example/faq",
            "https://news.example/faq#shipping",
        ),
    ];
    let mut rows = Vec::new();
    let mut edges = Vec::new();
    for (i, (original, view)) in originals_and_views.iter().enumerate() {
        let (o, v) = (100 + 2 * i as i64, 101 + 2 * i as i64);
        edges.push((o, v, true));
        let row = |id, url: &str, fetched: i64| PageRow {
            id,
            fetch_time: Some(1_700_000_000_000_000 + fetched),
            url: Some(url.to_string()),
            n_chars: 1000,
            quality: None,
        };
        rows.push(row(o, original, 5_000_000));
        rows.push(row(v, view, 1_000_000));
    }
    let pairs = write_edges(&dir.path().join("pairs"), &edges, 2);
    let pages = write_pages(&dir.path().join("pages"), &rows, 2);
    for parts in [1, 16] {
        let out = dir.path().join(format!("out-{parts}"));
        let mut opts = options(&pairs, &out, false, DropPolicy::Direct, 2, parts);
        opts.pages = vec![pages.clone()];
        opts.keep_by = KeepOrder::default_with_pages();
        run_cluster(&opts).unwrap();
        let (_, drops) = read_output(&out);
        let dropped: HashSet<i64> = drops.iter().map(|d| d.0).collect();
        let views: HashSet<i64> = (0..originals_and_views.len() as i64)
            .map(|i| 101 + 2 * i)
            .collect();
        assert_eq!(
            dropped, views,
            "{parts} parts: every view dropped, no original"
        );
    }
}

/// An unsigned count under `:desc` (inlinks, 0 and 1 for most pages) keeps
/// the page with the greater count, and names the key; so does a signed
/// column's least value under `:desc`.
#[test]
fn an_unsigned_count_under_desc_keeps_the_greater_count() {
    use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
    let dir = tempfile::tempdir().unwrap();
    let pairs_dir = dir.path().join("pairs");
    write_edges(&pairs_dir, &[(1, 2, true)], 1);
    let columns: [(&str, ArrayRef); 2] = [
        ("inlinks", Arc::new(UInt32Array::from(vec![0, 1]))),
        (
            "rank",
            Arc::new(Int64Array::from(vec![i64::MIN, i64::MIN + 1])),
        ),
    ];
    for (name, values) in columns {
        let pages = dir.path().join(format!("pages-{name}.parquet"));
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let batch = RecordBatch::try_from_iter([("id", ids), (name, values)]).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(
            std::fs::File::create(&pages).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let key = format!("column:{name}:desc");
        crate::common::run_ok(&[
            "cluster",
            "--pairs",
            pairs_dir.to_str().unwrap(),
            "--pages",
            pages.to_str().unwrap(),
            "--keep-by",
            &key,
            "--out",
            out.to_str().unwrap(),
        ]);
        let (_, drops) = read_output(&out);
        let dropped: Vec<(i64, i64)> = drops.iter().map(|d| (d.0, d.1)).collect();
        assert_eq!(dropped, [(1, 2)], "{key}");
        assert_eq!(kept_by(&out)[&1], key);
    }
}
