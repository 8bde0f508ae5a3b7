//! `match` finds every pair within k and no other, checked against a
//! brute-force oracle on real Parquet files, pyarrow's among them (every
//! codec, and dictionary-encoded columns, which every command reads).

use crate::common::*;
use std::collections::HashMap;
use std::path::Path;

use neardup::io::pairs::Pair;
use neardup::io::parquet::output::write_fingerprints;
use neardup::io::parquet::Sketch;
use neardup::matching::kernel::Kernel;
use neardup::matching::verify::Threshold;
use neardup::matching::{run_match, MatchOptions};
use neardup::random::SplitMix64;

fn check(
    name: &str,
    queries: &Rows,
    corpus: Option<&Rows>,
    k: u32,
    self_join: bool,
    workers: usize,
) {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        queries,
        corpus.map(|c| c.as_slice()),
        k,
        self_join,
        workers,
        3,
    );
    let found = read_pairs(&out);
    let expected = oracle(
        queries,
        corpus.map(|c| c.as_slice()).unwrap_or(&[]),
        k,
        self_join,
    );
    assert!(
        found.windows(2).all(|w| w[0] < w[1]),
        "{name}: output not strictly sorted"
    );
    if found != expected {
        let missing: Vec<_> = expected
            .iter()
            .filter(|p| !found.contains(p))
            .take(5)
            .collect();
        let extra: Vec<_> = found
            .iter()
            .filter(|p| !expected.contains(p))
            .take(5)
            .collect();
        panic!(
            "{name} k={k}: {} found, {} expected; missing {missing:?}; extra {extra:?}",
            found.len(),
            expected.len()
        );
    }
}

#[test]
fn random_data_with_pairs_planted_at_every_distance_up_to_k_plus_2() {
    for (i, k) in [0u32, 1, 3, 5, 7].into_iter().enumerate() {
        let mut rng = SplitMix64::new(100 + k as u64);
        let queries = random_rows(&mut rng, 400, 0);
        let corpus = planted_corpus(&mut rng, &queries, 40, k + 2, 2000, 10_000);
        let expected = oracle(&queries, &corpus, k, false);
        assert!(
            expected.len() >= 40 * (k as usize + 1),
            "the planted pairs are in the oracle"
        );
        check("planted", &queries, Some(&corpus), k, false, 1 + i % 3);
    }
}

#[test]
fn skewed_data_where_most_fingerprints_share_blocks() {
    let mut rng = SplitMix64::new(7);
    // Top 40 bits shared by everything: every table keyed on the top blocks
    // puts all rows in one bucket.
    let skew = |rng: &mut SplitMix64| 0xabcd_ef01_2300_0000u64 | (rng.next_u64() >> 40);
    let queries: Rows = (0..300).map(|i| (i, skew(&mut rng))).collect();
    let corpus: Rows = (0..1500)
        .map(|i| {
            (
                1000 + i,
                if i % 3 == 0 {
                    rng.next_u64()
                } else {
                    skew(&mut rng)
                },
            )
        })
        .collect();
    for k in [1, 3, 5] {
        check("skewed", &queries, Some(&corpus), k, false, 2);
    }
    check("skewed self", &queries, Some(&corpus), 3, true, 3);
}

#[test]
fn duplicate_fingerprints_expand_to_every_id_pair() {
    let mut rng = SplitMix64::new(9);
    let shared = rng.next_u64();
    let mut queries: Rows = (0..60).map(|i| (i, shared)).collect();
    queries.extend(random_rows(&mut rng, 100, 100));
    let mut corpus: Rows = (0..30).map(|i| (1000 + i, shared)).collect();
    corpus.extend((0..30).map(|i| (2000 + i, shared ^ 0b101)));
    corpus.extend(random_rows(&mut rng, 300, 5000));
    check("duplicates", &queries, Some(&corpus), 3, false, 2);
    check("duplicates self", &queries, Some(&corpus), 3, true, 2);
}

#[test]
fn repeated_corpus_rows_across_shards_are_reported_once() {
    let mut rng = SplitMix64::new(11);
    let queries = random_rows(&mut rng, 200, 0);
    let once = planted_corpus(&mut rng, &queries, 20, 4, 200, 10_000);
    let mut twice = once.clone();
    twice.extend(once.iter().copied());
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &queries, Some(&twice), 3, false, 2, 2);
    let found = read_pairs(&out);
    assert_eq!(found, oracle(&queries, &once, 3, false));
}

#[test]
fn the_same_id_in_b_and_f_is_not_a_pair() {
    let queries: Rows = vec![(1, 42), (2, 43)];
    let corpus: Rows = vec![(1, 42), (3, 42)];
    let dir = tempfile::tempdir().unwrap();
    let found = read_pairs(&run(dir.path(), &queries, Some(&corpus), 3, false, 1, 1));
    let ids: Vec<(i64, i64)> = found.iter().map(|p| (p.query_id, p.corpus_id)).collect();
    assert_eq!(ids, vec![(1, 3), (2, 1), (2, 3)]);
}

#[test]
fn empty_queries_or_empty_corpus_give_empty_parts() {
    let mut rng = SplitMix64::new(13);
    let rows = random_rows(&mut rng, 50, 0);
    for (queries, corpus) in [(Vec::new(), rows.clone()), (rows.clone(), Vec::new())] {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), &queries, Some(&corpus), 3, false, 2, 2);
        assert_eq!(part_files(&out).len(), 2);
        assert!(read_pairs(&out).is_empty());
    }
}

#[test]
fn self_join_with_and_without_corpus() {
    let mut rng = SplitMix64::new(17);
    let mut queries = random_rows(&mut rng, 300, 0);
    let copies = planted_corpus(&mut rng, &queries, 15, 5, 0, 300);
    queries.extend(copies);
    queries.push((2000, queries[0].1)); // an exact copy
    let corpus = planted_corpus(&mut rng, &queries, 20, 5, 500, 10_000);
    for k in [0, 3, 4] {
        check("self only", &queries, None, k, true, 2);
        check("self and corpus", &queries, Some(&corpus), k, true, 3);
    }
}

/// A crawl fetches most pages again: the corpus holds older versions of
/// B's pages under their ids (unchanged, edited a little, rewritten), and
/// it and B hold copies of those versions. With `--self`, B's row is a page's newest: its corpus
/// rows pair with nothing, so no pair rests on a version since replaced,
/// and no two pages pair twice. Without `--self`, they still pair.
#[test]
fn with_self_a_page_fetched_again_pairs_through_its_newest_row() {
    let mut rng = SplitMix64::new(29);
    let mut queries = random_rows(&mut rng, 400, 0);
    let mut corpus = planted_corpus(&mut rng, &queries, 60, 3, 5_000, 10_000);
    for at in (0..400).step_by(3) {
        let (id, f) = queries[at];
        let bits = [0, 2, 30][at % 9 / 3];
        let older = rng.flip_bits(f, bits);
        corpus.push((id, older));
        // Copies of the older version: one held, one new tonight.
        corpus.push((20_000 + id, rng.flip_bits(older, 1)));
        queries.push((30_000 + id, rng.flip_bits(older, 1)));
    }
    for k in [0, 3, 4] {
        check("fetched again, self", &queries, Some(&corpus), k, true, 2);
        check(
            "fetched again, no self",
            &queries,
            Some(&corpus),
            k,
            false,
            3,
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let in_b: std::collections::HashSet<i64> = queries.iter().map(|q| q.0).collect();
    let through_old = |self_join: bool| {
        let out = run(dir.path(), &queries, Some(&corpus), 3, self_join, 2, 1);
        let pairs = read_pairs(&out);
        let old = |p: &&Pair| !p.self_pair && in_b.contains(&p.corpus_id);
        pairs.iter().filter(old).count()
    };
    assert_eq!(through_old(true), 0);
    assert!(through_old(false) > 100);
}

#[test]
fn parts_are_byte_identical_for_1_2_and_4_workers() {
    let mut rng = SplitMix64::new(19);
    let queries = random_rows(&mut rng, 500, 0);
    let corpus = planted_corpus(&mut rng, &queries, 100, 5, 3000, 10_000);
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for workers in [1, 2, 4] {
        let out = run(dir.path(), &queries, Some(&corpus), 3, true, workers, 3);
        let bytes = part_bytes(&out);
        assert_eq!(bytes.len(), 3);
        outputs.push(bytes);
    }
    assert!(!read_pairs(&dir.path().join("out-k3-w1-p3-strue")).is_empty());
    assert_eq!(outputs[0], outputs[1], "1 vs 2 workers");
    assert_eq!(outputs[0], outputs[2], "1 vs 4 workers");
}

#[test]
fn parts_cover_increasing_query_id_ranges() {
    let mut rng = SplitMix64::new(23);
    let queries = random_rows(&mut rng, 400, 0);
    let corpus = planted_corpus(&mut rng, &queries, 80, 3, 100, 10_000);
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &queries, Some(&corpus), 3, false, 2, 4);
    let mut last_max = i64::MIN;
    for part in part_files(&out) {
        let single = tempfile::tempdir().unwrap();
        std::fs::copy(&part, single.path().join("part-00000.parquet")).unwrap();
        let pairs = read_pairs(single.path());
        assert!(!pairs.is_empty());
        assert!(pairs[0].query_id > last_max, "parts overlap");
        last_max = pairs.last().unwrap().query_id;
    }
}

/// A corpus shard of one row group larger than a probe batch (old pyarrow
/// wrote 64Mi rows to a group, Spark cuts them at 128 MB) is read in
/// pieces: still every pair, on 1 and 2 workers, with the same bytes; and
/// under `--verify` every candidate's sketch is read from its own row.
#[test]
fn a_corpus_row_group_larger_than_a_batch_is_read_in_pieces() {
    let mut rng = SplitMix64::new(29);
    let queries = random_rows(&mut rng, 300, 0);
    let mut corpus = planted_corpus(&mut rng, &queries, 60, 4, 1_150_000, 10_000_000);
    // The planted rows spread over both pieces.
    for i in (1..corpus.len()).rev() {
        corpus.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let dir = tempfile::tempdir().unwrap();
    let q = write_shards(&dir.path().join("queries"), &queries, 1);
    let shard = dir.path().join("corpus").join("one-group.parquet");
    std::fs::create_dir_all(shard.parent().unwrap()).unwrap();
    let ids: Vec<i64> = corpus.iter().map(|r| r.0).collect();
    let fps: Vec<u64> = corpus.iter().map(|r| r.1).collect();
    write_fingerprints(&shard, &ids, &fps, corpus.len()).unwrap();
    let expected = oracle(&queries, &corpus, 3, false);
    assert!(!expected.is_empty());
    let mut outputs = Vec::new();
    for workers in [1, 2] {
        let out = dir.path().join(format!("out-w{workers}"));
        let mut opts = MatchOptions::new(q.clone(), vec![shard.display().to_string()], out.clone());
        opts.k = 3;
        opts.runtime.workers = workers;
        opts.parts = 2;
        opts.overwrite = true;
        run_match(&opts).unwrap();
        assert!(
            read_pairs(&out) == expected,
            "{workers} workers: not the oracle's pairs"
        );
        let bytes = part_bytes(&out);
        outputs.push(bytes);
    }
    assert!(outputs[0] == outputs[1], "1 vs 2 workers");

    // Under --verify, each candidate's sketch is read from its piece of the
    // row group by its row there: random sketches give every pair its own
    // wide distance, so a row read from the wrong place shows.
    let sketch = |rng: &mut SplitMix64| std::array::from_fn(|_| rng.next_u64());
    let sketched = |rows: &Rows, rng: &mut SplitMix64| -> SketchedRows {
        rows.iter().map(|&(id, f)| (id, f, sketch(rng))).collect()
    };
    let (queries, corpus) = (sketched(&queries, &mut rng), sketched(&corpus, &mut rng));
    let q = write_sketched_shards(&dir.path().join("sketched-queries"), &queries, 1, 97);
    let c = write_sketched_shards(
        &dir.path().join("sketched-corpus"),
        &corpus,
        1,
        corpus.len(),
    );
    let out = dir.path().join("verified");
    let mut opts = MatchOptions::new(q, c, out.clone());
    (opts.k, opts.verify_threshold, opts.runtime.workers) = (3, Some(Threshold::Given(256)), 2);
    run_match(&opts).unwrap();
    assert!(read_pairs(&out) == verified_oracle(&queries, &corpus, 3, false, 256));
}

#[test]
fn pairs_beyond_the_memory_budget_are_spilled_and_give_the_same_bytes() {
    // One fingerprint hot in B (250 of its ids in part 0) and 200 corpus
    // rows near it, the corpus listed twice: part 0 is sighted as more than
    // 100,000 pairs (4 MB), about four times a budget of 1 MiB.
    let mut rng = SplitMix64::new(23);
    let hot = rng.next_u64();
    let mut queries: Rows = (0..300).map(|i| (i, hot)).collect();
    queries.extend(random_rows(&mut rng, 200, 300));
    let mut corpus: Rows = (0..200)
        .map(|i| (10_000 + i, rng.flip_bits(hot, (i % 4) as u32)))
        .collect();
    corpus.extend(random_rows(&mut rng, 2000, 20_000));
    let expected = oracle(&queries, &corpus, 3, false);
    let part_0 = expected.iter().filter(|p| p.query_id < 250).count();
    assert!(2 * part_0 * std::mem::size_of::<neardup::io::pairs::Pair>() > 3 << 20);
    let dir = tempfile::tempdir().unwrap();
    let q = write_shards(&dir.path().join("queries"), &queries, 2);
    let mut c = write_shards(&dir.path().join("corpus-a"), &corpus, 3);
    c.extend(write_shards(&dir.path().join("corpus-b"), &corpus, 2));
    let mut outputs = Vec::new();
    for (name, mib, workers) in [("held", 256, 2), ("spilled", 1, 2), ("spilled-1", 1, 1)] {
        let out = dir.path().join(name);
        let mut opts = MatchOptions::new(q.clone(), c.clone(), out.clone());
        opts.pair_memory = mib << 20;
        opts.runtime.workers = workers;
        opts.parts = 2;
        let summary = run_match(&opts).unwrap();
        assert_eq!(read_pairs(&out), expected, "{name}");
        assert_eq!(summary.pairs_spilled > 0, mib == 1, "{name}");
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("_spill"))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?} left behind");
        let bytes = part_bytes(&out);
        outputs.push(bytes);
    }
    assert_eq!(
        outputs[0], outputs[1],
        "a budget that spills changed the bytes"
    );
    assert_eq!(
        outputs[0], outputs[2],
        "1 worker spilling changed the bytes"
    );
}

/// `match --kernel`: every kernel this CPU runs, forced in turn, gives the
/// oracle's pairs and the same bytes, on designs of many candidates per
/// probe and of almost none at k = 3, and of many at k = 5 and 7; a kernel this CPU
/// cannot run is refused in one line. In process, so that it runs under
/// qemu-user too (`scripts/test_aarch64.sh`).
#[test]
fn every_kernel_this_cpu_runs_gives_the_oracles_pairs_and_the_same_bytes() {
    let all = [Kernel::Avx512, Kernel::Avx2, Kernel::Portable];
    let (runs, refused): (Vec<Kernel>, Vec<Kernel>) = all
        .into_iter()
        .partition(|&kernel| Kernel::choose(Some(kernel)).is_ok());
    assert!(runs.contains(&Kernel::Portable));
    for kernel in refused {
        let error = Kernel::choose(Some(kernel)).unwrap_err().to_string();
        let line = format!("--kernel {}: this CPU cannot run it", kernel.flag());
        assert!(error.starts_with(&line) && !error.contains('\n'), "{error}");
        eprintln!("skipped: {line}");
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (3u32, 4u32, 120_000usize),
        (3, 6, 20_000),
        (5, 6, 8_000),
        (7, 8, 2_000),
    ];
    for (k, blocks, queries) in cases {
        let mut rng = SplitMix64::new(300 + u64::from(k));
        let queries = random_rows(&mut rng, queries, 0);
        let corpus = planted_corpus(&mut rng, &queries, 40, k + 2, 4_000, 1_000_000);
        let expected = oracle(&queries, &corpus, k, false);
        let q = write_shards(&dir.path().join(format!("q{k}-{blocks}")), &queries, 2);
        let c = write_shards(&dir.path().join(format!("c{k}-{blocks}")), &corpus, 2);
        let mut first: Option<Vec<Vec<u8>>> = None;
        for &kernel in &runs {
            let out = dir
                .path()
                .join(format!("out-{k}-{blocks}-{}", kernel.flag()));
            let mut opts = MatchOptions::new(q.clone(), c.clone(), out.clone());
            (opts.k, opts.blocks, opts.kernel) = (k, Some(blocks), Some(kernel));
            (opts.runtime.workers, opts.parts) = (2, 2);
            let summary = serde_json::to_value(run_match(&opts).unwrap()).unwrap();
            let case = format!("k = {k}, m = {blocks}, --kernel {}", kernel.flag());
            assert_eq!(summary["kernel"], kernel.runs(), "{case}");
            assert_eq!(read_pairs(&out), expected, "{case}");
            let bytes = part_bytes(&out);
            match &first {
                None => first = Some(bytes),
                Some(first) => assert!(*first == bytes, "{case}: other bytes"),
            }
        }
    }
}

/// Rows with their sketches: `(id, simhash, sketch)`.
type SketchedRows = Vec<(i64, u64, Sketch)>;

/// Rows of B with random sketches, and rows of F: copies of B's rows with
/// `d <= max_d` bits of the fingerprint and up to `2 * spread` bits of the
/// sketch flipped (so that the threshold keeps some and drops others),
/// and unrelated rows.
fn sketched_rows(rng: &mut SplitMix64, max_d: u32, spread: u32) -> (SketchedRows, SketchedRows) {
    let sketch = |rng: &mut SplitMix64| std::array::from_fn(|_| rng.next_u64());
    let mut queries: SketchedRows = (0..300)
        .map(|id| (id, rng.next_u64(), sketch(rng)))
        .collect();
    // Some pages of B share a fingerprint and not a sketch: a group of
    // several ids, each with its own.
    for id in (2..300).step_by(3) {
        queries[id].1 = queries[id - 1].1;
        queries[id - 1].1 = queries[id - 2].1;
    }
    let mut corpus = Vec::new();
    for id in 10_000..10_600 {
        let (_, f, mut s) = queries[rng.below(queries.len() as u64) as usize];
        let d = rng.below(u64::from(max_d) + 1) as u32;
        for _ in 0..rng.below(2 * u64::from(spread) + 1) {
            let bit = rng.below(64 * s.len() as u64) as usize;
            s[bit / 64] ^= 1 << (bit % 64);
        }
        corpus.push((id, rng.flip_bits(f, d), s));
    }
    corpus.extend((20_000..22_000).map(|id| (id, rng.next_u64(), sketch(rng))));
    (queries, corpus)
}

/// The oracle's pairs that `--verify` keeps at `threshold`, with their
/// wide distances (ids are unique across B and F here).
fn verified_oracle(
    queries: &[(i64, u64, Sketch)],
    corpus: &[(i64, u64, Sketch)],
    k: u32,
    self_join: bool,
    threshold: u32,
) -> Vec<Pair> {
    let plain = |rows: &[(i64, u64, Sketch)]| -> Rows { rows.iter().map(|r| (r.0, r.1)).collect() };
    let sketches: HashMap<i64, Sketch> = queries
        .iter()
        .chain(corpus)
        .map(|&(id, _, s)| (id, s))
        .collect();
    let mut kept: Vec<Pair> = oracle(&plain(queries), &plain(corpus), k, self_join)
        .into_iter()
        .filter_map(|pair| {
            let (q, c) = (&sketches[&pair.query_id], &sketches[&pair.corpus_id]);
            let sketch_bits: u32 = q.iter().zip(c).map(|(a, b)| (a ^ b).count_ones()).sum();
            let wide = u32::from(pair.distance) + sketch_bits;
            (wide <= threshold).then_some(Pair {
                wide_distance: Some(wide as u16),
                ..pair
            })
        })
        .collect();
    kept.sort();
    kept
}

/// `--verify` keeps exactly the pairs within k whose fingerprints and
/// sketches together lie within the threshold, at several k, thresholds
/// and worker counts, with and without `--self`; its sketches of F are read
/// by row selections across row groups of 97 rows and several shards.
#[test]
fn verify_keeps_exactly_the_pairs_within_the_wide_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes_by_case: HashMap<(u32, u32, bool), Vec<Vec<u8>>> = HashMap::new();
    for (case, (k, threshold, self_join, workers)) in [
        (3, 0, false, 1),
        (6, 40, true, 2),
        (8, 20, false, 4),
        (6, 40, true, 3),
        (5, 256, false, 2),
    ]
    .into_iter()
    .enumerate()
    {
        let mut rng = SplitMix64::new(7 + u64::from(k) + u64::from(threshold));
        let (queries, corpus) = sketched_rows(&mut rng, k + 1, threshold.min(60));
        let name = format!("k{k}-t{threshold}-s{self_join}-w{workers}");
        let q = write_sketched_shards(&dir.path().join(&name).join("b"), &queries, 2, 97);
        let c = write_sketched_shards(&dir.path().join(&name).join("f"), &corpus, 3, 97);
        let out = dir.path().join(&name).join("out");
        let mut opts = MatchOptions::new(q, c, out.clone());
        (opts.k, opts.self_join, opts.verify_threshold) =
            (k, self_join, Some(Threshold::Given(threshold)));
        (opts.runtime.workers, opts.parts) = (workers, 3);
        let summary = serde_json::to_value(run_match(&opts).unwrap()).unwrap();
        let found = read_pairs(&out);
        let expected = verified_oracle(&queries, &corpus, k, self_join, threshold);
        let within_k = oracle(
            &queries.iter().map(|r| (r.0, r.1)).collect::<Rows>(),
            &corpus.iter().map(|r| (r.0, r.1)).collect::<Rows>(),
            k,
            self_join,
        );
        if threshold < 256 {
            assert!(
                !expected.is_empty() && expected.len() < within_k.len(),
                "{name}: the threshold keeps some pairs within k and drops others"
            );
        }
        assert_eq!(found.len(), expected.len(), "{name}");
        assert!(found == expected, "{name}: pairs or wide distances differ");
        assert_eq!(summary["pairs"], expected.len(), "{case}");
        assert_eq!(summary["candidates"], within_k.len(), "{case}");
        assert_eq!(summary["verify_threshold"], threshold, "{case}");
        let bytes = part_bytes(&out);
        let earlier = bytes_by_case
            .entry((k, threshold, self_join))
            .or_insert(bytes.clone());
        assert!(
            *earlier == bytes,
            "{name}: other bytes than on other workers"
        );
    }
}

/// pyarrow's Parquet in each codec it writes, GZIP and BROTLI among them:
/// `match` reads them all and finds the oracle's pairs.
#[test]
fn match_reads_pyarrows_parquet_in_every_codec() {
    use parquet::basic::Compression;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    let mut rng = SplitMix64::new(31);
    let queries = random_rows(&mut rng, 500, 0);
    let corpus = planted_corpus(&mut rng, &queries, 80, 3, 5000, 1_000_000);
    let expected = oracle(&queries, &corpus, 3, false);
    assert!(!expected.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let rows =
        |rows: &Rows| -> Vec<(i64, i64)> { rows.iter().map(|&(i, f)| (i, f as i64)).collect() };
    let json = serde_json::json!({"queries": rows(&queries), "corpus": rows(&corpus)});
    std::fs::write(dir.path().join("rows.json"), json.to_string()).unwrap();
    let codecs = ["gzip", "brotli", "zstd", "snappy", "lz4", "none"];
    let write = "import json, sys, pyarrow as pa, pyarrow.parquet as pq\n\
                 rows = json.load(open(sys.argv[1]))\n\
                 for codec in sys.argv[3:]:\n\
                 \x20   for side in ('queries', 'corpus'):\n\
                 \x20       ids, fps = zip(*rows[side])\n\
                 \x20       table = pa.table({'id': pa.array(ids, pa.int64()), 'simhash': pa.array(fps, pa.int64())})\n\
                 \x20       pq.write_table(table, f'{sys.argv[2]}/{side}-{codec}.parquet', compression=codec)\n";
    let status = std::process::Command::new(python_with("pyarrow"))
        .args(["-c", write])
        .arg(dir.path().join("rows.json"))
        .arg(dir.path())
        .args(codecs)
        .status()
        .unwrap();
    assert!(status.success());
    for codec in codecs {
        let file = |side: &str| dir.path().join(format!("{side}-{codec}.parquet"));
        let reader =
            SerializedFileReader::new(std::fs::File::open(file("corpus")).unwrap()).unwrap();
        let written = reader.metadata().row_group(0).column(1).compression();
        let named = match written {
            Compression::UNCOMPRESSED => "none",
            Compression::GZIP(_) => "gzip",
            Compression::BROTLI(_) => "brotli",
            Compression::ZSTD(_) => "zstd",
            Compression::SNAPPY => "snappy",
            Compression::LZ4 | Compression::LZ4_RAW => "lz4",
            other => panic!("{codec}: {other:?}"),
        };
        assert_eq!(named, codec, "pyarrow wrote {written:?}");
        let out = dir.path().join(format!("pairs-{codec}"));
        run_ok(&[
            "match",
            "--queries",
            file("queries").to_str().unwrap(),
            "--corpus",
            file("corpus").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            read_pairs(&out) == expected,
            "{codec}: not the oracle's pairs"
        );
    }
}

/// Writes, with pyarrow, `dir/plain/` and `dir/dict/`: the same tables,
/// every column dictionary-encoded in the second (a `DictionaryArray`, as
/// pyarrow keeps it in the file's Arrow schema). The tables: `queries` and
/// `corpus` (`id`, `simhash`), `pairs` (`query_id`, `corpus_id`,
/// `distance`, `self_pair`), `pages` of the pairs' ids (`url`,
/// `fetch_time`) and `docs` (`id`, `url`, `text`, `ts`).
fn write_plain_and_dictionary_tables(dir: &Path, queries: &Rows, corpus: &Rows, pairs: &[Pair]) {
    let signed =
        |rows: &Rows| -> Vec<(i64, i64)> { rows.iter().map(|&(i, f)| (i, f as i64)).collect() };
    let pairs: Vec<(i64, i64, u8)> = pairs
        .iter()
        .map(|p| (p.query_id, p.corpus_id, p.distance))
        .collect();
    let json =
        serde_json::json!({"queries": signed(queries), "corpus": signed(corpus), "pairs": pairs});
    std::fs::write(dir.join("rows.json"), json.to_string()).unwrap();
    for mode in ["plain", "dict"] {
        std::fs::create_dir_all(dir.join(mode)).unwrap();
    }
    let write = r#"
import json, sys, pyarrow as pa, pyarrow.parquet as pq
rows = json.load(open(sys.argv[1]))
def write(name, columns, encoded):
    table = pa.table({k: v.dictionary_encode() if encoded else v for k, v in columns.items()})
    pq.write_table(table, f"{sys.argv[2]}/{'dict' if encoded else 'plain'}/{name}.parquet")
def url(i):
    return f"{'https' if i % 3 else 'http'}://site{i % 5}.example/{i % 11}" + ("?q=1" if i % 4 == 0 else "")
ids = sorted({i for pair in rows["pairs"] for i in pair[:2]})
for encoded in (False, True):
    for side in ("queries", "corpus"):
        i, f = zip(*rows[side])
        write(side, {"id": pa.array(i, pa.int64()), "simhash": pa.array(f, pa.int64())}, encoded)
    q, c, d = zip(*rows["pairs"])
    write("pairs", {"query_id": pa.array(q, pa.int64()), "corpus_id": pa.array(c, pa.int64()),
                    "distance": pa.array(d, pa.int8()), "self_pair": pa.array([False] * len(q))}, encoded)
    write("pages", {"id": pa.array(ids, pa.int64()), "url": pa.array([url(i) for i in ids]),
                    "fetch_time": pa.array([i * 7919 % 100 for i in ids], pa.timestamp("us", tz="UTC"))}, encoded)
    docs = list(range(60))
    write("docs", {"id": pa.array(docs, pa.int64()), "url": pa.array([url(i) for i in docs]),
                   "text": pa.array([f"page {i % 7} of a site about cats, dogs and mats" for i in docs]),
                   "ts": pa.array([i % 9 for i in docs], pa.timestamp("ms", tz="UTC"))}, encoded)
"#;
    let status = std::process::Command::new(python_with("pyarrow"))
        .args(["-c", write])
        .arg(dir.join("rows.json"))
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A column pyarrow wrote from a `DictionaryArray` (arrow-rs reads it as
/// `Dictionary(Int32, Int64)`, or of strings or timestamps) is read as its
/// values: `match`, `cluster` (pairs and pages) and `fingerprint` (a text
/// table) give what they give on the same table written plain.
#[test]
fn pyarrows_dictionary_encoded_columns_read_as_their_values() {
    let mut rng = SplitMix64::new(37);
    let queries = random_rows(&mut rng, 300, 0);
    let corpus = planted_corpus(&mut rng, &queries, 40, 3, 2000, 1_000_000);
    let expected = oracle(&queries, &corpus, 3, false);
    assert!(!expected.is_empty());
    let dir = tempfile::tempdir().unwrap();
    write_plain_and_dictionary_tables(dir.path(), &queries, &corpus, &expected);
    let mut outputs = Vec::new();
    for mode in ["plain", "dict"] {
        let at = dir.path().join(mode);
        let path = |name: &str| at.join(name).display().to_string();
        let pairs = at.join("pairs-out");
        run_ok(&[
            "match",
            "--queries",
            &path("queries.parquet"),
            "--corpus",
            &path("corpus.parquet"),
            "--out",
            &path("pairs-out"),
        ]);
        assert!(
            read_pairs(&pairs) == expected,
            "{mode}: not the oracle's pairs"
        );
        run_ok(&[
            "cluster",
            "--pairs",
            &path("pairs.parquet"),
            "--pages",
            &path("pages.parquet"),
            "--out",
            &path("clusters"),
        ]);
        // Run in the table's directory: the shards' `source` is the path given.
        let fingerprinted = std::process::Command::new(env!("CARGO_BIN_EXE_neardup"))
            .current_dir(&at)
            .args([
                "fingerprint",
                "--input",
                "docs.parquet",
                "--time-field",
                "ts",
            ])
            .args(["--out", "fingerprints"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&fingerprinted.stderr);
        assert!(fingerprinted.status.success(), "{mode}: {stderr}");
        outputs.push(
            ["clusters/clusters", "clusters/drop", "fingerprints"]
                .map(|out| part_bytes(&at.join(out))),
        );
    }
    assert!(outputs[0].iter().all(|parts| !parts.is_empty()));
    assert!(
        outputs[0] == outputs[1],
        "other bytes from dictionary columns"
    );
}
