//! The process's union-find alone, with no Parquet and no dataflow:
//! `cargo bench --bench union_find -- [million pairs] [chain]` (default 10).
//! With `chain`, the pairs make one chain of pages instead (each pair's
//! second page is the next pair's first), as `scripts/bench_cluster.sh`'s
//! `chain` graph does.
//!
//! The graph is shaped like `scripts/bench_cluster.sh`'s `hashed` one, not
//! the same pairs: blocks of five pages (here each paired with its block's
//! first), 1% of the pairs joining random pages, ids scattered over the i64
//! range as URL hashes are. For 1 and 2 workers it
//! times the three things `cluster` does with a pair before the shares:
//! interning new ids (each a random slot of the id table, and a new page),
//! looking up ids already interned (the same pairs added again: no new
//! page, no link), and splitting the finished forest. The gap between the
//! first two is what a new page costs beyond its lookup.
//!
//! Each runs on the pairs in two orders: as generated (a cluster's pairs
//! together, the ids at random places in the table) and sorted by query id,
//! as `match` writes them (the query side walks the table in order: its
//! homes are placed in id order, see `Placement` in `src/cluster/components/intern.rs`).

use std::time::Instant;

use neardup::cluster::components::{mix, PageEstimate, SharedGraph};

/// Pairs added per call, as `cluster` adds a row group.
const BATCH: usize = 1 << 20;

fn main() {
    let millions: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10);
    let chain = std::env::args().any(|a| a == "chain");
    let generated = match chain {
        true => chain_pairs(millions * 1_000_000),
        false => hashed_pairs(millions * 1_000_000),
    };
    let mut by_query = generated.clone();
    by_query.sort_unstable();
    println!(
        "{} pairs, {} ids; per worker: ns per id added",
        generated.len(),
        2 * generated.len()
    );
    for (order, pairs) in [("generated", &generated), ("by query id", &by_query)] {
        for workers in [1, 2] {
            for round in 0..2 {
                let (first, again, split) = run(pairs, workers);
                let ids = 2.0 * pairs.len() as f64 / workers as f64;
                println!(
                    "{order}, {workers} worker(s), round {round}: new {:.3} s ({:.1} ns an id), again {:.3} s ({:.1} ns an id), split {:.3} s",
                    first,
                    first * 1e9 / ids,
                    again,
                    again * 1e9 / ids,
                    split
                );
            }
        }
    }
}

/// `(first pass, second pass, split)` seconds, the slowest worker's.
fn run(pairs: &[(i64, i64, bool)], workers: usize) -> (f64, f64, f64) {
    let graph = SharedGraph::new(false, workers, 0);
    let estimate = PageEstimate::exact(pairs.len() * 5 / 4);
    let times: Vec<(f64, f64, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let graph = &graph;
                scope.spawn(move || {
                    let mine = || pairs.chunks(BATCH).skip(w).step_by(workers);
                    // As `cluster` does: the range of the first batch's ids.
                    let first = mine().next().unwrap_or_default();
                    let ids = first.iter().flat_map(|&(a, b, _)| [a, b]);
                    graph.prepare(w, estimate, ids.clone().min().zip(ids.max()));
                    let mut writer = graph.writer();
                    let mut ends = Vec::new();
                    let mut seconds = [0.0; 2];
                    for pass in &mut seconds {
                        let started = Instant::now();
                        for batch in mine() {
                            writer.add_pairs(batch.iter().copied(), &mut ends);
                        }
                        *pass = started.elapsed().as_secs_f64();
                    }
                    drop(writer);
                    let started = Instant::now();
                    let share = graph.split(w, None);
                    std::hint::black_box(share.by_id.len());
                    (seconds[0], seconds[1], started.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker panicked"))
            .collect()
    });
    times.iter().fold((0.0, 0.0, 0.0), |acc, t| {
        (acc.0.max(t.0), acc.1.max(t.1), acc.2.max(t.2))
    })
}

/// `n` pairs making one chain of `n + 1` pages, ids hashed.
fn chain_pairs(n: usize) -> Vec<(i64, i64, bool)> {
    (0..n as i64)
        .map(|e| (mix(e) as i64, mix(e + 1) as i64, false))
        .collect()
}

/// `n` pairs in blocks of five pages (each page paired with the block's
/// first), every hundredth pair joining two random pages; ids hashed.
fn hashed_pairs(n: usize) -> Vec<(i64, i64, bool)> {
    let pages = (n as u64) * 5 / 4;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % pages
    };
    (0..n as u64)
        .map(|i| {
            let (a, b) = match i % 100 {
                99 => (random(), random()),
                _ => {
                    let block = i / 4;
                    (block * 5, block * 5 + 1 + i % 4)
                }
            };
            (mix(a as i64) as i64, mix(b as i64) as i64, false)
        })
        .collect()
}
