//! The pigeonhole table design (Manku, Jain, Das Sarma 2007, section 3).
//!
//! Split the 64 bits into `m > k` contiguous blocks. Two fingerprints within
//! Hamming distance `k` differ in at most `k` blocks, so they agree exactly on
//! at least `m - k` of them. One table per choice of `m - k` blocks therefore
//! covers every pair, and a probe of a table only has to look at the stored
//! fingerprints that agree with the probe on that table's blocks (its *key*).
//!
//! Tables never store permuted fingerprints: they store the original bits,
//! grouped into buckets by a prefix of the key. A candidate's distance is the
//! popcount of the XOR of two original fingerprints, so no permutation is ever
//! applied or undone on the hot path.
//!
//! How `m` is chosen ([`plan`]): more blocks mean fewer candidates a probe
//! but more tables, so the planner estimates what each design's probes cost
//! a corpus row ([`ProbeCost::row_ns`]): per table, a visit that grows
//! dearer as the table outgrows the caches, plus its candidates at the
//! kernel's price ([`crate::matching::kernel::Kernel::probe_cost`]). A wide
//! kernel checks a vector of candidates at a time, so few tables of
//! hundreds of candidates can beat many of none; filter words pay a miss
//! for each. It takes the smallest design within 10% of the cheapest that
//! fits the memory budget (`--table-memory-mib`, 8 GiB by default). So for
//! |B| = 1M and k = 3 the design is 4 tables of one 16-bit block each
//! (about 15 candidates a probe, 51 MB) with a wide kernel, and the
//! paper's 10 tables (blocks of 13, 13, 13, 13 and 12 bits, keys of 25-26
//! bits, 246 MB) with filter words. The constants are fitted on
//! `scripts/bench_plan.sh`, which times each design of a grid of |B| and k
//! beside its estimate.
//!
//! Every design finds the same pairs: a pair is emitted only by its
//! *owner*, the first table whose key bits all agree ([`Design::owner`]),
//! so exactly once.

use anyhow::{bail, Result};
use serde::Serialize;

use crate::exec::progress::human_bytes;

/// Bits in a fingerprint.
pub(crate) const BITS: u32 = 64;
/// Largest supported distance threshold.
pub(crate) const MAX_K: u32 = 10;
/// Never index a bucket directory on more bits than this (2^26 u32 offsets = 256 MiB).
const MAX_INDEX_BITS: u32 = 26;
/// Default ceiling for the tables' memory, in bytes.
pub const DEFAULT_TABLE_MEMORY: u64 = 8 << 30;
/// Bytes a stored fingerprint costs in one table: its two 32-bit halves (the
/// residue the kernels compare, and the rest) and its group number.
const ENTRY_BYTES: u64 = 8 + 4;
/// Bytes a bucket costs in one table: its directory offset and its filter word.
const BUCKET_BYTES: u64 = 4 + 8;
/// Key bits after the bucket index that select a bit of the bucket's filter
/// word: a `u64` has 2^6 bits.
pub(crate) const FILTER_BITS: u32 = 6;
/// A probe key is at most `MAX_INDEX_BITS + FILTER_BITS` bits, so it fits in
/// the `u32`s the kernel computes keys into.
const _: () = assert!(MAX_INDEX_BITS + FILTER_BITS <= 32);

/// A contiguous run of bits, counted from the most significant bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Block {
    /// Position of the block's first (most significant) bit; 0 is the top bit.
    pub(crate) start: u32,
    /// Number of bits in the block.
    pub(crate) len: u32,
}

impl Block {
    /// The block's bits as a mask over the fingerprint.
    pub(crate) fn mask(self) -> u64 {
        if self.len == 0 {
            return 0;
        }
        (u64::MAX >> (BITS - self.len)) << (BITS - self.start - self.len)
    }
}

/// One piece of a table's bucket index: `(x >> shift) & mask`, placed at `out_shift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    shift: u32,
    mask: u64,
    out_shift: u32,
}

impl Segment {
    #[inline(always)]
    fn take(self, fingerprint: u64) -> u64 {
        ((fingerprint >> self.shift) & self.mask) << self.out_shift
    }
}

/// One pigeonhole table: the blocks it requires to match exactly.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TableSpec {
    /// Indices of the exact blocks, ascending.
    pub(crate) blocks: Vec<usize>,
    /// Number of key bits (the sum of the exact blocks' lengths).
    pub(crate) key_bits: u32,
    /// Mask of the key bits over the original fingerprint.
    #[serde(skip)]
    pub(crate) key_mask: u64,
    /// Leading key bits used to number the buckets.
    pub(crate) index_bits: u32,
    /// Key bits after those that pick the bit of the bucket's filter word
    /// (fewer than [`FILTER_BITS`] only when the key is that short).
    pub(crate) filter_bits: u32,
    /// Gather the first `index_bits + filter_bits` key bits (the *probe key*).
    #[serde(skip)]
    segments: Vec<Segment>,
}

impl TableSpec {
    fn new(blocks: &[Block], chosen: Vec<usize>, index_bits: u32) -> TableSpec {
        let key_bits = chosen.iter().map(|&b| blocks[b].len).sum::<u32>();
        let key_mask = chosen.iter().fold(0, |m, &b| m | blocks[b].mask());
        let index_bits = index_bits.min(key_bits);
        let filter_bits = FILTER_BITS.min(key_bits - index_bits);
        let segments = index_segments(blocks, &chosen, index_bits + filter_bits);
        TableSpec {
            blocks: chosen,
            key_bits,
            key_mask,
            index_bits,
            filter_bits,
            segments,
        }
    }

    /// The first `index_bits + filter_bits` bits of a fingerprint's key.
    #[inline(always)]
    pub(crate) fn probe_key(&self, fingerprint: u64) -> u64 {
        let mut key = 0u64;
        for s in &self.segments {
            key |= s.take(fingerprint);
        }
        key
    }

    /// The bucket of a probe key: its first `index_bits` bits.
    #[inline(always)]
    pub(crate) fn bucket_of(&self, probe_key: u64) -> usize {
        (probe_key >> self.filter_bits) as usize
    }

    /// The bit of the bucket's filter word a probe key stands for.
    #[inline(always)]
    pub(crate) fn filter_bit(&self, probe_key: u64) -> u64 {
        1 << (probe_key & ((1 << self.filter_bits) - 1))
    }

    /// The bucket a fingerprint falls in: the first `index_bits` bits of its key.
    #[inline(always)]
    pub(crate) fn bucket(&self, fingerprint: u64) -> usize {
        self.bucket_of(self.probe_key(fingerprint))
    }

    /// Writes the probe key of every fingerprint to `keys`, in order: the
    /// same keys as [`TableSpec::probe_key`], in a loop with no other work in
    /// it, so that the compiler computes several keys per vector instruction.
    #[inline(always)]
    pub(crate) fn probe_keys(&self, fingerprints: &[u64], keys: &mut [u32]) {
        let pairs = fingerprints.iter().zip(keys.iter_mut());
        match *self.segments.as_slice() {
            [a] => pairs.for_each(|(&f, key)| *key = a.take(f) as u32),
            [a, b] => pairs.for_each(|(&f, key)| *key = (a.take(f) | b.take(f)) as u32),
            _ => pairs.for_each(|(&f, key)| *key = self.probe_key(f) as u32),
        }
    }

    /// Number of buckets in the table's directory.
    pub(crate) fn buckets(&self) -> usize {
        1usize << self.index_bits
    }
}

/// Shift-and-mask pieces that gather the first `bits` bits of the key,
/// merging adjacent blocks into one piece so a key made of neighbouring blocks
/// costs a single shift.
fn index_segments(blocks: &[Block], chosen: &[usize], bits: u32) -> Vec<Segment> {
    let mut runs: Vec<(u32, u32)> = Vec::new(); // (start, len) in fingerprint bits
    let mut remaining = bits;
    for &b in chosen {
        if remaining == 0 {
            break;
        }
        let take = blocks[b].len.min(remaining);
        remaining -= take;
        match runs.last_mut() {
            Some((start, len)) if *start + *len == blocks[b].start => *len += take,
            _ => runs.push((blocks[b].start, take)),
        }
    }
    let mut out_shift = bits;
    runs.into_iter()
        .map(|(start, len)| {
            out_shift -= len;
            Segment {
                shift: BITS - start - len,
                mask: (1u64 << len) - 1,
                out_shift,
            }
        })
        .collect()
}

/// A complete table design for one `(n, k, m)`.
#[derive(Clone, Debug, Serialize)]
pub struct Design {
    /// The distance threshold.
    pub(crate) k: u32,
    /// The blocks the 64 bits are split into.
    pub(crate) blocks: Vec<Block>,
    /// The tables, in the order that decides which table owns a pair.
    pub(crate) tables: Vec<TableSpec>,
    /// Distinct fingerprints the tables hold.
    pub(crate) stored: u64,
    /// Expected candidates a probe of one table returns on uniform data
    /// (averaged over the tables): `stored / 2^key_bits`.
    pub(crate) expected_candidates: f64,
    /// Estimated bytes of all tables.
    pub(crate) memory_bytes: u64,
}

impl Design {
    /// Builds the design with `m` blocks for `stored` distinct fingerprints.
    pub(crate) fn new(stored: u64, k: u32, m: u32) -> Design {
        assert!(
            k <= MAX_K && m > k && m <= BITS,
            "invalid design k={k} m={m}"
        );
        let blocks = split_bits(m);
        let index_bits = index_bits_for(stored);
        let tables: Vec<TableSpec> = combinations(m as usize, (m - k) as usize)
            .into_iter()
            .map(|chosen| TableSpec::new(&blocks, chosen, index_bits))
            .collect();
        let expected_candidates = tables
            .iter()
            .map(|t| stored as f64 / 2f64.powi(t.key_bits as i32))
            .sum::<f64>()
            / tables.len() as f64;
        let memory_bytes = tables
            .iter()
            .map(|t| stored * ENTRY_BYTES + BUCKET_BYTES * (t.buckets() as u64 + 1))
            .sum();
        Design {
            k,
            blocks,
            tables,
            stored,
            expected_candidates,
            memory_bytes,
        }
    }

    /// Number of blocks.
    /// The tables' memory in whole MiB, rounded up: the least
    /// `--table-memory-mib` that fits them.
    pub(crate) fn memory_mib(&self) -> u64 {
        self.memory_bytes.div_ceil(1 << 20)
    }

    pub(crate) fn m(&self) -> u32 {
        self.blocks.len() as u32
    }

    /// The table that owns a pair whose fingerprints differ in `xor`: the first
    /// table whose key bits all agree. Every pair within `k` has one, and
    /// emitting a pair only from its owner emits it exactly once.
    #[inline]
    pub(crate) fn owner(&self, xor: u64) -> Option<usize> {
        self.tables.iter().position(|t| xor & t.key_mask == 0)
    }

    /// A one-line description, e.g. `m=5 blocks [13,13,13,13,12], 10 tables, key 25-26 bits`.
    pub fn describe(&self) -> String {
        let sizes: Vec<String> = self.blocks.iter().map(|b| b.len.to_string()).collect();
        let (lo, hi) = self.key_bit_range();
        let key = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}-{hi}")
        };
        format!(
            "m={} blocks [{}], {} tables, key {} bits",
            self.m(),
            sizes.join(","),
            self.tables.len(),
            key
        )
    }

    /// Smallest and largest key width over the tables.
    pub(crate) fn key_bit_range(&self) -> (u32, u32) {
        let bits = self.tables.iter().map(|t| t.key_bits);
        (bits.clone().min().unwrap_or(0), bits.max().unwrap_or(0))
    }
}

/// What a probe kernel spends on one corpus row, for comparing designs
/// ([`plan`]): each table costs a visit to its bucket, dearer as the table
/// outgrows the caches, and a check of each candidate the bucket holds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ProbeCost {
    /// Nanoseconds the kernel spends checking one candidate.
    pub(crate) candidate_ns: f64,
}

/// A table visit's nanoseconds: a base, one more per [`VISIT_MIB_PER_NS`]
/// MiB of the table (its cache and TLB misses), and no more than
/// [`MAX_VISIT_NS`] (a miss to memory, overlapped with the rows around it).
const BASE_VISIT_NS: f64 = 2.5;
const VISIT_MIB_PER_NS: f64 = 9.0;
const MAX_VISIT_NS: f64 = 60.0;

impl ProbeCost {
    /// A kernel that checks one candidate in `candidate_ns` nanoseconds.
    pub(crate) const fn new(candidate_ns: f64) -> ProbeCost {
        ProbeCost { candidate_ns }
    }

    /// Estimated nanoseconds `design`'s tables cost a corpus row.
    pub(crate) fn row_ns(self, design: &Design) -> f64 {
        let tables = design.tables.len() as f64;
        let table_mib = design.memory_bytes as f64 / tables / f64::from(1u32 << 20);
        let visit_ns = (BASE_VISIT_NS + table_mib / VISIT_MIB_PER_NS).min(MAX_VISIT_NS);
        tables * (visit_ns + self.candidate_ns * design.expected_candidates)
    }
}

/// Designs estimated within this factor of the cheapest count as cheap.
const NEAR_ENOUGH: f64 = 1.1;

/// Why a design was or was not chosen.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Considered {
    pub(crate) m: u32,
    pub(crate) tables: usize,
    pub(crate) expected_candidates: f64,
    pub(crate) memory_bytes: u64,
    /// [`ProbeCost::row_ns`]: the estimated probe time of a corpus row.
    pub(crate) row_ns: f64,
    pub(crate) verdict: &'static str,
}

/// The chosen design and the alternatives weighed against it.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub design: Design,
    pub(crate) considered: Vec<Considered>,
    /// The memory budget, if the design needs more: no design fits it.
    over_budget: Option<u64>,
}

impl Plan {
    /// Refuses a design whose tables need more than the memory budget:
    /// `match` would take that memory (tens of GB at a billion queries)
    /// where `--table-memory-mib` promised less.
    pub(crate) fn refuse_over_budget(&self) -> Result<()> {
        match self.over_budget {
            Some(budget) => bail!("{}", self.over_budget_line(budget)),
            None => Ok(()),
        }
    }

    fn over_budget_line(&self, budget: u64) -> String {
        let d = &self.design;
        let needed = d.memory_mib();
        format!(
            "no table design fits --table-memory-mib {}: the smallest, {} tables (m = {}), needs {needed} MiB; give --table-memory-mib {needed} or more, or match B in smaller batches",
            budget >> 20,
            d.tables.len(),
            d.m(),
        )
    }

    /// What `neardup plan` prints for this plan over `stored` fingerprints
    /// at `k`, the kernel's line `kernel_line` among the figures.
    pub fn report(&self, stored: u64, k: u32, kernel_line: &str) -> String {
        let d = &self.design;
        let mut out = format!("{stored} distinct query fingerprints, k = {k}\n");
        out += &format!("design: {}\n", d.describe());
        out += &format!(
            "expected candidates per probe: {:.4}\n",
            d.expected_candidates
        );
        out += &format!("{kernel_line}\n");
        let memory = human_bytes(d.memory_bytes);
        out += &format!("table memory: {} bytes ({memory})\n", d.memory_bytes);
        if let Some(budget) = self.over_budget {
            out += &format!("match refuses this: {}\n", self.over_budget_line(budget));
        }
        out += "tables (exact blocks -> key bits, bucket index bits):\n";
        for (i, t) in d.tables.iter().enumerate() {
            out += &format!(
                "  {i:>4}: blocks {:?} -> {} key bits, {} index bits\n",
                t.blocks, t.key_bits, t.index_bits
            );
        }
        out += "alternatives:\n";
        for c in &self.considered {
            out += &format!(
                "  m={:<3} {:>5} tables  {:>12.4} candidates/probe  {:>10}  {:>8.1} ns/row  {}\n",
                c.m,
                c.tables,
                c.expected_candidates,
                human_bytes(c.memory_bytes),
                c.row_ns,
                c.verdict
            );
        }
        out
    }
}

/// Chooses `m` for `stored` distinct fingerprints and threshold `k`.
///
/// More blocks mean longer keys and so fewer candidates per probe, but
/// `C(m, k)` tables. The rule: of the designs whose tables fit in
/// `memory_budget`, the smallest whose probes `cost` estimates within
/// [`NEAR_ENOUGH`] of the cheapest a corpus row ([`ProbeCost::row_ns`]),
/// since the estimate cannot tell nearer designs apart and memory is
/// dear too; when none fits, `m = k + 1` (the fewest tables possible),
/// marked over the budget. `forced_m` overrides the choice.
pub fn plan(
    stored: u64,
    k: u32,
    memory_budget: u64,
    forced_m: Option<u32>,
    cost: ProbeCost,
) -> Plan {
    let last_m = (k + 1 + 6).min(BITS);
    let designs: Vec<Design> = ((k + 1)..=last_m)
        .take_while(|&m| tables_for(m, k) <= 4096)
        .map(|m| Design::new(stored, k, m))
        .collect();
    let fits = |d: &Design| d.memory_bytes <= memory_budget;
    let least_ns = designs
        .iter()
        .filter(|d| fits(d))
        .map(|d| cost.row_ns(d))
        .min_by(f64::total_cmp);
    let cheap = |d: &Design| least_ns.is_some_and(|ns| cost.row_ns(d) <= ns * NEAR_ENOUGH);
    let smallest_cheap = designs
        .iter()
        .filter(|d| fits(d) && cheap(d))
        .min_by_key(|d| d.memory_bytes)
        .map(Design::m);
    let chosen_m = forced_m.or(smallest_cheap).unwrap_or(k + 1);
    let verdict = |d: &Design| match (d.m() == chosen_m, forced_m.is_some()) {
        (true, _) if !fits(d) => "chosen, over the memory budget",
        (true, true) => "chosen (--blocks)",
        (true, false) => "chosen",
        (false, true) => "not requested (--blocks)",
        (false, false) if !fits(d) => "over the memory budget",
        (false, false) if cheap(d) => "about as fast, in more memory",
        (false, false) => "slower",
    };
    let consider = |d: &Design| Considered {
        m: d.m(),
        tables: d.tables.len(),
        expected_candidates: d.expected_candidates,
        memory_bytes: d.memory_bytes,
        row_ns: cost.row_ns(d),
        verdict: verdict(d),
    };
    let mut considered: Vec<Considered> = designs.iter().map(consider).collect();
    let design = match designs.iter().find(|d| d.m() == chosen_m) {
        Some(design) => design.clone(),
        None => {
            let design = Design::new(stored, k, chosen_m);
            considered.push(consider(&design));
            design
        }
    };
    let over_budget = (!fits(&design)).then_some(memory_budget);
    Plan {
        design,
        considered,
        over_budget,
    }
}

/// The most tables `--blocks` may ask for: the planner never considers more
/// than 4096, and each table costs a probe of every corpus row.
const MAX_TABLES: u64 = 1 << 16;

/// Refuses `--blocks m` when its tables' entries alone exceed the memory
/// budget: `C(m, k)` grows fast (64 blocks at k = 5 make 7.6M tables), and
/// building such a design would exhaust the machine before any error.
pub(crate) fn check_blocks(stored: u64, k: u32, forced_m: Option<u32>, budget: u64) -> Result<()> {
    let Some(m) = forced_m else {
        return Ok(());
    };
    let tables = tables_for(m, k);
    if tables > MAX_TABLES {
        bail!(
            "--blocks {m}: {tables} tables at k = {k}, more than {MAX_TABLES}; give fewer blocks"
        );
    }
    let needed = Design::new(stored, k, m).memory_mib();
    if needed > budget >> 20 {
        let fewer = if m > k + 1 { " or fewer blocks" } else { "" };
        bail!(
            "--blocks {m}: {tables} tables of {stored} fingerprints need {needed} MiB, more than --table-memory-mib {}; give --table-memory-mib {needed}{fewer}",
            budget >> 20
        );
    }
    Ok(())
}

/// Refuses a table memory budget of nothing (`--table-memory-mib 0`),
/// which no design could keep to.
pub(crate) fn check_table_memory(budget: u64) -> Result<()> {
    if budget == 0 {
        bail!("--table-memory-mib 0 leaves no memory for the tables: give at least 1");
    }
    Ok(())
}

/// Refuses a `--blocks` no design at threshold `k` can have: each table
/// needs more blocks than `k`, and a block at least a bit.
pub(crate) fn check_blocks_range(k: u32, blocks: Option<u32>) -> Result<()> {
    match blocks {
        Some(m) if m <= k || m > BITS => {
            bail!("--blocks {m} is out of range: it must be more than k ({k}) and at most {BITS}")
        }
        _ => Ok(()),
    }
}

/// Number of tables for `m` blocks and threshold `k`: `C(m, k)`.
pub(crate) fn tables_for(m: u32, k: u32) -> u64 {
    let k = k.min(m - k) as u64;
    (0..k).fold(1u64, |acc, i| acc * (m as u64 - i) / (i + 1))
}

/// Buckets are numbered by about log2(stored) key bits, so a bucket holds about
/// one fingerprint and its filter word has about one bit set.
fn index_bits_for(stored: u64) -> u32 {
    (BITS - stored.saturating_sub(1).leading_zeros()).min(MAX_INDEX_BITS)
}

/// Splits 64 bits into `m` contiguous blocks, the longer blocks first.
fn split_bits(m: u32) -> Vec<Block> {
    let base = BITS / m;
    let extra = BITS % m;
    let mut start = 0;
    (0..m)
        .map(|i| {
            let len = base + u32::from(i < extra);
            let block = Block { start, len };
            start += len;
            block
        })
        .collect()
}

/// All `r`-element subsets of `0..n` in lexicographic order.
fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..r).collect();
    if r > n {
        return out;
    }
    loop {
        out.push(current.clone());
        let Some(i) = (0..r).rev().find(|&i| current[i] != i + n - r) else {
            return out;
        };
        current[i] += 1;
        for j in i + 1..r {
            current[j] = current[j - 1] + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::kernel::Kernel;

    #[test]
    fn blocks_cover_all_bits_once() {
        for m in 1..=20 {
            let blocks = split_bits(m);
            let all = blocks.iter().fold(0u64, |acc, b| {
                assert_eq!(acc & b.mask(), 0, "m={m} blocks overlap");
                acc | b.mask()
            });
            assert_eq!(all, u64::MAX, "m={m}");
        }
    }

    #[test]
    fn combinations_count_matches_binomial() {
        assert_eq!(combinations(5, 2).len(), 10);
        assert_eq!(combinations(6, 3).len(), 20);
        assert_eq!(combinations(4, 4), vec![vec![0, 1, 2, 3]]);
        assert_eq!(tables_for(5, 3), 10);
        assert_eq!(tables_for(11, 10), 11);
    }

    #[test]
    fn paper_example_designs() {
        let d = Design::new(1 << 34, 3, 5);
        assert_eq!(d.tables.len(), 10);
        assert_eq!(d.key_bit_range(), (25, 26));
        let d = Design::new(1 << 34, 3, 6);
        assert_eq!(d.tables.len(), 20);
        assert_eq!(d.key_bit_range(), (31, 33));
    }

    #[test]
    fn bucket_takes_leading_key_bits_in_block_order() {
        let d = Design::new(1 << 20, 3, 4); // blocks of 16; each table keys on one block
        for (t, table) in d.tables.iter().enumerate() {
            let x: u64 = 0x0123_4567_89ab_cdef;
            let block = d.blocks[table.blocks[0]];
            let key = (x & block.mask()) >> (BITS - block.start - block.len);
            assert_eq!(
                table.bucket(x) as u64,
                key >> (16 - table.index_bits),
                "table {t}"
            );
        }
    }

    #[test]
    fn every_pair_within_k_has_an_owner_sharing_its_bucket() {
        let mut rng = crate::random::SplitMix64::new(7);
        let mut next = || rng.next_u64();
        for k in 0..=MAX_K {
            let plan = plan(
                1 << 20,
                k,
                DEFAULT_TABLE_MEMORY,
                None,
                Kernel::Portable.probe_cost(),
            );
            let design = plan.design;
            for _ in 0..2000 {
                let a = next();
                let mut b = a;
                for _ in 0..(next() % (k as u64 + 1)) {
                    b ^= 1 << (next() % 64);
                }
                let owner = design.owner(a ^ b).expect("a pair within k has an owner");
                let table = &design.tables[owner];
                assert_eq!(
                    table.bucket(a),
                    table.bucket(b),
                    "k={k} owner shares the bucket"
                );
            }
        }
    }

    #[test]
    fn plan_weighs_tables_against_candidates() {
        let m = |stored: u64, k: u32, cost: ProbeCost| {
            plan(stored, k, DEFAULT_TABLE_MEMORY, None, cost).design.m()
        };
        // Filter words check a candidate after a second miss: the paper's
        // 10 tables for |B| = 2^20, 4 for a thousand queries.
        assert_eq!(m(1 << 20, 3, Kernel::Portable.probe_cost()), 5);
        assert_eq!(m(1000, 3, Kernel::Portable.probe_cost()), 4);
        // A wide kernel keeps 4 tables at k = 3 far past a line of
        // candidates a bucket, but not 6 of 651 at k = 5 against 21 of 3.
        for wide in [Kernel::Avx2.probe_cost(), Kernel::Avx512.probe_cost()] {
            assert_eq!(m(1 << 20, 3, wide), 4);
            assert_eq!(m(16 << 20, 3, wide), 4);
            assert_eq!(m(1 << 20, 5, wide), 7);
        }
        // k = 4, 1M queries: AVX2's candidates cost enough for 15 tables
        // to pay; AVX-512's 5 tables are about as fast, in a sixth of the
        // memory.
        assert_eq!(m(1 << 20, 4, Kernel::Avx2.probe_cost()), 6);
        assert_eq!(m(1 << 20, 4, Kernel::Avx512.probe_cost()), 5);
        let six = plan(
            1 << 20,
            4,
            DEFAULT_TABLE_MEMORY,
            None,
            Kernel::Avx512.probe_cost(),
        )
        .considered[1]
            .clone();
        assert_eq!((six.m, six.verdict), (6, "about as fast, in more memory"));
        let forced = plan(
            1 << 20,
            3,
            DEFAULT_TABLE_MEMORY,
            Some(7),
            Kernel::Avx512.probe_cost(),
        );
        assert_eq!(forced.design.m(), 7);
        assert_eq!(forced.design.tables.len(), 35);
        let verdicts: Vec<_> = forced.considered.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts
                .iter()
                .filter(|&&v| v == "chosen (--blocks)")
                .count(),
            1,
            "{verdicts:?}"
        );
    }

    #[test]
    fn probe_keys_match_probe_key_for_every_segment_count() {
        let fingerprints: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 40))
            .collect();
        let mut segment_counts = std::collections::BTreeSet::new();
        for (stored, k, m) in [
            (1 << 20, 3, 5),
            (1 << 20, 3, 4),
            (1000, 7, 10),
            (1 << 24, 10, 16),
        ] {
            let design = Design::new(stored, k, m);
            for spec in &design.tables {
                segment_counts.insert(spec.segments.len());
                let mut keys = vec![0u32; fingerprints.len()];
                spec.probe_keys(&fingerprints, &mut keys);
                for (&f, &key) in fingerprints.iter().zip(&keys) {
                    assert_eq!(
                        u64::from(key),
                        spec.probe_key(f),
                        "k={k} m={m} {:?}",
                        spec.blocks
                    );
                }
            }
        }
        assert!(
            segment_counts.len() >= 3,
            "segment counts covered: {segment_counts:?}"
        );
    }

    #[test]
    fn plan_respects_memory_budget() {
        let p = plan(1 << 20, 3, 60 << 20, None, Kernel::Portable.probe_cost());
        assert!(
            p.design.memory_bytes <= 60 << 20,
            "{}",
            p.design.memory_bytes
        );
        assert_eq!(p.design.m(), 4);
        assert!(p.refuse_over_budget().is_ok());
    }

    /// The memory a refused `--blocks` names is enough, and a MiB less is
    /// not: the figure is the design's, not a lower bound.
    #[test]
    fn the_memory_a_refused_blocks_names_is_enough() {
        let cost = Kernel::Portable.probe_cost();
        for (stored, k, m) in [(1_000_000, 3, 4), (300_000, 3, 6), (5, 2, 3)] {
            let needed = Design::new(stored, k, m).memory_mib();
            let said = check_blocks(stored, k, Some(m), 0).unwrap_err().to_string();
            assert!(
                said.contains(&format!("give --table-memory-mib {needed}")),
                "{said}"
            );
            assert!(check_blocks(stored, k, Some(m), (needed - 1) << 20).is_err() || needed == 1);
            assert!(check_blocks(stored, k, Some(m), needed << 20).is_ok());
            let p = plan(stored, k, needed << 20, Some(m), cost);
            assert!(p.refuse_over_budget().is_ok(), "{stored} {k} {m}");
        }
    }

    /// A budget no design fits is not passed over in silence: the plan
    /// says so, and match refuses it naming the memory that would do.
    #[test]
    fn a_budget_no_design_fits_is_refused_with_the_memory_needed() {
        let p = plan(1 << 20, 3, 1 << 20, None, Kernel::Portable.probe_cost());
        assert_eq!(p.design.m(), 4);
        let needed = p.design.memory_mib();
        assert!(needed > 1, "{needed}");
        let error = p.refuse_over_budget().unwrap_err().to_string();
        let said = format!("no table design fits --table-memory-mib 1: the smallest, 4 tables (m = 4), needs {needed} MiB; give --table-memory-mib {needed} or more");
        assert!(error.starts_with(&said), "{error}");
        let report = p.report(1 << 20, 3, "kernel");
        assert!(
            report.contains(&format!("match refuses this: {said}")),
            "{report}"
        );
        assert!(
            report.contains("chosen, over the memory budget"),
            "{report}"
        );
    }
}
