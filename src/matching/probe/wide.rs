//! The kernel of x86-64 with AVX-512 or AVX2, for every design, and the one
//! that makes fewer, wider tables pay (for |B| = 1M and k = 3, 4 tables of
//! 16-bit keys and about 16 entries a bucket, against 10 tables of one): no
//! filter word, every bucket's residues compared with the row's a vector at
//! a time (XOR, population count, compare; 16 to an AVX-512 vector, 8 to an
//! AVX2 one), the first few vectors of every bucket unconditionally under a
//! length mask, so that no branch depends on a bucket's length.

use std::arch::x86_64::*;

use super::{keep_if_owned, probe_partitioned, Match, Scratch, KEY_CHUNK, LINE_RESIDUES};
use crate::exec::parallel::prefetch;
use crate::matching::kernel::Simd;
use crate::matching::tables::{Index, RESIDUE_PADDING};

/// How many rows ahead the lines of a bucket's first vectors are prefetched.
const PREFETCH_ROWS: usize = 16;

/// How many rows ahead a bucket's directory entry is prefetched, so that
/// the prefetch of its lines `PREFETCH_ROWS` ahead reads it from the cache:
/// a directory larger than L2 otherwise stalls the loop on that read.
const PREFETCH_DIRECTORY_ROWS: usize = 2 * PREFETCH_ROWS;

/// How many buckets with entries near ahead the first such entry's whole
/// fingerprint is prefetched, when they are checked after the loop.
const PREFETCH_NEAR: usize = 8;

/// Up to 64 entries of a bucket, from `first`, that are within k of a
/// probe's row on their residue: bit `i` of `found` for entry `first + i`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NearBucket {
    /// The row's place in the probed slice.
    row: u32,
    first: u32,
    found: u64,
}

impl NearBucket {
    fn new(row: usize, first: usize, found: u64) -> NearBucket {
        NearBucket {
            row: row as u32,
            first: first as u32,
            found,
        }
    }
}

impl Simd {
    /// Residues one vector compares: 16 with AVX-512, 8 with AVX2.
    pub(super) fn lanes(self) -> usize {
        match self {
            Simd::Avx512 => Avx512::LANES,
            Simd::Avx2 => Avx2::<ANY_K>::LANES,
        }
    }

    /// The most vectors compared for every bucket unconditionally: a
    /// bucket's first 64 entries.
    pub(super) fn max_vectors(self) -> usize {
        64 / self.lanes()
    }

    /// Vectors compared for every bucket before its length is looked
    /// at: the mean bucket plus two standard deviations (Poisson), so
    /// that about 2% of buckets need more.
    fn vectors_for(self, expected_candidates: f64) -> usize {
        let c = expected_candidates.max(0.0);
        let vectors = ((c + 2.0 * c.sqrt()) / self.lanes() as f64).ceil() as usize;
        vectors.clamp(1, self.max_vectors())
    }
}

/// [`super::probe`] with the vector instructions `simd`.
///
/// # Safety
/// The CPU must have them (`simd` from [`Simd::detect`], or below it).
pub(crate) unsafe fn probe(
    simd: Simd,
    index: &Index,
    corpus: &[u64],
    scratch: &mut Scratch,
    out: &mut Vec<Match>,
) {
    let vectors = simd.vectors_for(index.design.expected_candidates);
    // SAFETY: as for this function.
    unsafe { probe_with(simd, index, corpus, scratch, out, vectors) }
}

/// [`probe`] comparing `vectors` vectors of every bucket unconditionally
/// (1 to [`Simd::max_vectors`]).
///
/// # Safety
/// As for [`probe`].
pub(super) unsafe fn probe_with(
    simd: Simd,
    index: &Index,
    corpus: &[u64],
    scratch: &mut Scratch,
    out: &mut Vec<Match>,
    vectors: usize,
) {
    let slice: Slice = match (simd, vectors) {
        (Simd::Avx512, 1) => probe_slice_avx512::<1>,
        (Simd::Avx512, 2) => probe_slice_avx512::<2>,
        (Simd::Avx512, 3) => probe_slice_avx512::<3>,
        (Simd::Avx512, _) => probe_slice_avx512::<4>,
        (Simd::Avx2, _) => match index.design.k {
            0 => avx2_slice::<0>(vectors),
            1 => avx2_slice::<1>(vectors),
            2 => avx2_slice::<2>(vectors),
            3 => avx2_slice::<3>(vectors),
            _ => avx2_slice::<ANY_K>(vectors),
        },
    };
    let mut near_buckets = std::mem::take(&mut scratch.near_buckets);
    probe_partitioned(index, corpus, scratch, out, |index, t, f, rows, _, out| {
        // SAFETY: as for this function.
        unsafe { slice(index, t, f, rows, &mut near_buckets, out) }
    });
    scratch.near_buckets = near_buckets;
}

/// A table's probe loop, compiled for one instruction set.
type Slice = unsafe fn(&Index, usize, &[u64], &[u32], &mut Vec<NearBucket>, &mut Vec<Match>);

/// [`probe_slice`] compiled for AVX-512.
#[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,bmi1,bmi2,lzcnt")]
unsafe fn probe_slice_avx512<const VECTORS: usize>(
    index: &Index,
    t: usize,
    fingerprints: &[u64],
    rows: &[u32],
    near_buckets: &mut Vec<NearBucket>,
    out: &mut Vec<Match>,
) {
    // SAFETY: this function's features are the ones `Avx512` needs.
    unsafe { probe_slice::<Avx512, VECTORS>(index, t, fingerprints, rows, near_buckets, out) }
}

/// [`probe_slice_avx2`] for `K` (see [`Avx2`]) and `vectors`.
fn avx2_slice<const K: u32>(vectors: usize) -> Slice {
    match vectors {
        1 => probe_slice_avx2::<K, 1>,
        2 => probe_slice_avx2::<K, 2>,
        3 => probe_slice_avx2::<K, 3>,
        4 => probe_slice_avx2::<K, 4>,
        5 => probe_slice_avx2::<K, 5>,
        6 => probe_slice_avx2::<K, 6>,
        7 => probe_slice_avx2::<K, 7>,
        _ => probe_slice_avx2::<K, 8>,
    }
}

/// [`probe_slice`] compiled for AVX2.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
unsafe fn probe_slice_avx2<const K: u32, const VECTORS: usize>(
    index: &Index,
    t: usize,
    fingerprints: &[u64],
    rows: &[u32],
    near_buckets: &mut Vec<NearBucket>,
    out: &mut Vec<Match>,
) {
    // SAFETY: this function's features are the ones `Avx2` needs.
    unsafe { probe_slice::<Avx2<K>, VECTORS>(index, t, fingerprints, rows, near_buckets, out) }
}

/// Compares each row with every entry of its bucket of table `t`: first
/// the residues (32 bits of each, a vector at a time), then the whole
/// fingerprint of those within k on their residue.
///
/// A partition's slice of the table is in L2, or the lines the row's vectors
/// read are prefetched, so what the loop costs is its own instructions and
/// the rows that pass: the table's arrays and rotation are read once into
/// locals (stores to the output made the compiler read them from the table
/// again for every row), the vectors' length masks come from one `bzhi`, and
/// a bucket with no entry near (nearly all of them) costs one test. Buckets
/// with entries near are only noted: their rows and whole fingerprints,
/// which miss the cache, are read after the loop, where those misses overlap
/// instead of each stalling it. The directory is read unchecked, each bucket
/// number masked to the directory's size (bounds checks, and the values they
/// kept live, were a large share of the loop's instructions), and the keys
/// are computed a prefetch distance past each chunk, so that every row
/// prefetches with no test.
///
/// # Safety
/// Inlined into a function compiled with the features `C` needs.
#[inline(always)]
unsafe fn probe_slice<C: NearLanes, const VECTORS: usize>(
    index: &Index,
    t: usize,
    fingerprints: &[u64],
    rows: &[u32],
    near_buckets: &mut Vec<NearBucket>,
    out: &mut Vec<Match>,
) {
    let spec = &index.design.tables[t];
    let table = &index.tables[t];
    let (offsets, residues) = table.directory();
    // Every bucket number below is masked by `buckets - 1`, so that
    // `b` and `b + 1` index `offsets` unchecked (see the SAFETY notes).
    let buckets = spec.buckets();
    assert_eq!(offsets.len(), buckets + 1, "a directory entry per bucket");
    assert!(
        offsets[buckets] as usize + RESIDUE_PADDING <= residues.len(),
        "buckets and their padding inside the table"
    );
    debug_assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "buckets in order");
    let (shift, residue_of) = (spec.filter_bits, table.residue_rule());
    // SAFETY: the caller's features are the ones `C` needs.
    let bound = unsafe { C::splat(index.design.k + 1) };
    near_buckets.clear();
    // Keys of a chunk's rows and of the next `PREFETCH_DIRECTORY_ROWS`
    // (zero past the end), so that every row prefetches with no test.
    let mut keys = [0u32; KEY_CHUNK + PREFETCH_DIRECTORY_ROWS];
    for (c, chunk) in fingerprints.chunks(KEY_CHUNK).enumerate() {
        let from = c * KEY_CHUNK;
        let ahead = &fingerprints[from..fingerprints.len().min(from + keys.len())];
        spec.probe_keys(ahead, &mut keys[..ahead.len()]);
        keys[ahead.len()..].fill(0);
        for (j, &f) in chunk.iter().enumerate() {
            let bucket_of = |key: u32| (key >> shift) as usize & (buckets - 1);
            // SAFETY: `bucket_of` is below `buckets` and `offsets` has
            // `buckets + 1` entries.
            prefetch(unsafe {
                offsets.get_unchecked(bucket_of(keys[j + PREFETCH_DIRECTORY_ROWS]))
            });
            // SAFETY: as above.
            let ahead = unsafe { *offsets.get_unchecked(bucket_of(keys[j + PREFETCH_ROWS])) };
            prefetch_lines(residues, ahead as usize, C::LANES * VECTORS);
            let b = bucket_of(keys[j]);
            // SAFETY: as above, `b + 1 <= buckets`.
            let (start, end) = unsafe {
                (
                    *offsets.get_unchecked(b) as usize,
                    *offsets.get_unchecked(b + 1) as usize,
                )
            };
            let len = end - start;
            // SAFETY: the caller's features are the ones `C` needs.
            let row = unsafe { C::splat(residue_of(f)) };
            let lanes = C::LANES;
            // SAFETY: vector v reads entries up to start + 64, inside the
            // residues' padding (asserted above); the caller's features.
            let masks: [C::Mask; VECTORS] = std::array::from_fn(|v| unsafe {
                C::near(residues, start + lanes * v, row, bound)
            });
            // SAFETY: as above, the caller's features.
            let near_any = masks
                .iter()
                .skip(1)
                .fold(masks[0], |any, &m| unsafe { C::either(any, m) });
            // SAFETY: as above.
            if unsafe { !C::none(near_any) } {
                let found = masks.iter().enumerate().fold(0u64, |found, (v, &mask)| {
                    // SAFETY: as above.
                    found | unsafe { C::bits(mask) } << (lanes * v)
                });
                // SAFETY: as above.
                let found = found & unsafe { lanes_present(len) };
                if found != 0 {
                    note(near_buckets, NearBucket::new(from + j, start, found));
                }
            }
            let mut v = VECTORS;
            while lanes * v < len {
                let at = lanes * v;
                // SAFETY: the vector starts inside the bucket, so it ends
                // inside the residues' padding; the caller's features.
                let found = unsafe {
                    C::bits(C::near(residues, start + at, row, bound)) & lanes_present(len - at)
                };
                if found != 0 {
                    note(near_buckets, NearBucket::new(from + j, start + at, found));
                }
                v += 1;
            }
        }
    }
    for (i, near) in near_buckets.iter().enumerate() {
        if let Some(ahead) = near_buckets.get(i + PREFETCH_NEAR) {
            table
                .prefetch_fingerprint(ahead.first as usize + ahead.found.trailing_zeros() as usize);
        }
        let row = near.row as usize;
        keep_found(
            index,
            t,
            near.first as usize,
            near.found,
            fingerprints[row],
            rows[row],
            out,
        );
    }
}

/// Prefetches every cache line of `residues[from..from + entries]`: a
/// bucket starts anywhere in a line, so its first vectors read two or
/// three, and a line left to the loop stalls it.
#[inline(always)]
fn prefetch_lines(residues: &[u32], from: usize, entries: usize) {
    let first = residues.as_ptr().wrapping_add(from);
    let mut at = 0;
    // A loop over constants, which the compiler unrolls (an iterator
    // chain it left as a loop).
    while at < entries {
        // SAFETY: a prefetch never faults, whatever the address (and the
        // x86-64 baseline has SSE).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(at).cast()) };
        at += LINE_RESIDUES;
    }
    // SAFETY: as above.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(entries - 1).cast()) };
}

/// Notes a bucket with entries near, out of the hot loop: growing the
/// list calls the allocator, which would make the loop keep its values
/// on the stack around the call.
#[cold]
#[inline(never)]
fn note(near_buckets: &mut Vec<NearBucket>, near: NearBucket) {
    near_buckets.push(near);
}

/// Bit `i` set for each `i < entries`, up to 64: which of the lanes
/// from a bucket's entry on hold entries. (`bzhi` reads only the low 8
/// bits of its count, so a hot bucket's length is capped first.)
#[inline]
#[target_feature(enable = "bmi2")]
fn lanes_present(entries: usize) -> u64 {
    _bzhi_u64(u64::MAX, entries.min(64) as u32)
}

/// The comparison of a vector of residues with a row's, in one
/// instruction set. Each function is inlined into [`probe_slice`],
/// compiled for that set. The functions that call intrinsics carry the
/// features themselves: without them, whether LLVM inlined the intrinsics
/// depended on how the crate was split into codegen units, and the AVX2
/// kernel, left calling each intrinsic, ran about ten times slower.
trait NearLanes {
    /// Residues a vector holds.
    const LANES: usize;
    /// A value broadcast to every lane.
    type Splat: Copy;
    /// Which lanes are near, as the set holds it.
    type Mask: Copy;

    /// `value` in every lane: a row's residue, or the bound k + 1.
    ///
    /// # Safety
    /// The CPU must have the set's features.
    unsafe fn splat(value: u32) -> Self::Splat;

    /// Of the residues `from..from + LANES`, those at a distance below
    /// `bound` (k + 1) from `row`. Every lane is read: the lanes past a
    /// bucket (the next buckets' residues, or padding) are dropped by the
    /// caller, by the bucket's length, in the rare bucket with a lane near.
    ///
    /// # Safety
    /// As for [`NearLanes::splat`], and `from + LANES <= residues.len()`.
    unsafe fn near(
        residues: &[u32],
        from: usize,
        row: Self::Splat,
        bound: Self::Splat,
    ) -> Self::Mask;

    /// The lanes near in `a` or in `b`.
    ///
    /// # Safety
    /// As for [`NearLanes::splat`].
    unsafe fn either(a: Self::Mask, b: Self::Mask) -> Self::Mask;

    /// Whether no lane is near: the test nearly every bucket ends with.
    ///
    /// # Safety
    /// As for [`NearLanes::splat`].
    unsafe fn none(mask: Self::Mask) -> bool;

    /// Bit `i` for lane `i` near.
    ///
    /// # Safety
    /// As for [`NearLanes::splat`].
    unsafe fn bits(mask: Self::Mask) -> u64;
}

/// XOR, VPOPCNTD and an unsigned compare, 16 lanes at once, into a mask
/// register.
struct Avx512;

impl NearLanes for Avx512 {
    const LANES: usize = 16;
    type Splat = __m512i;
    type Mask = u16;

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn splat(value: u32) -> __m512i {
        _mm512_set1_epi32(value as i32)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    unsafe fn near(residues: &[u32], from: usize, row: __m512i, bound: __m512i) -> u16 {
        let at = residues.as_ptr().wrapping_add(from);
        // SAFETY: the 16 lanes are inside `residues` (the caller's promise).
        unsafe {
            let residues = _mm512_loadu_si512(at.cast());
            let distance = _mm512_popcnt_epi32(_mm512_xor_si512(residues, row));
            _mm512_cmplt_epu32_mask(distance, bound)
        }
    }

    #[inline(always)]
    unsafe fn either(a: u16, b: u16) -> u16 {
        a | b
    }

    #[inline(always)]
    unsafe fn none(mask: u16) -> bool {
        mask == 0
    }

    #[inline(always)]
    unsafe fn bits(mask: u16) -> u64 {
        mask.into()
    }
}

/// 8 lanes a vector, for k = `K` when it is at most [`MAX_CLEARED`], else
/// for any k ([`ANY_K`]). AVX2 has no population count. For a small k, a
/// lane is near when clearing its lowest set bit k times (`x & (x - 1)`)
/// leaves nothing: 2k + 1 instructions. For any k, each byte's count is the
/// sum of its nibbles' from a 16-entry table (`vpshufb`), and a lane's the
/// sum of its bytes' (`vpmaddubsw`, then `vpmaddwd`), compared with k + 1.
///
/// A mask is what is left of each lane, zero when the lane is near: the
/// vectors of a row are joined by one unsigned minimum each and tested by
/// one compare with zero and one `vptest`, not a compare, a mask and an OR
/// for each vector.
struct Avx2<const K: u32>;

/// The most bits [`Avx2`] clears for a small k.
const MAX_CLEARED: u32 = 3;

/// [`Avx2`] for any k.
const ANY_K: u32 = u32::MAX;

impl<const K: u32> NearLanes for Avx2<K> {
    const LANES: usize = 8;
    type Splat = __m256i;
    type Mask = __m256i;

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn splat(value: u32) -> __m256i {
        _mm256_set1_epi32(value as i32)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn near(residues: &[u32], from: usize, row: __m256i, bound: __m256i) -> __m256i {
        let at = residues.as_ptr().wrapping_add(from);
        // SAFETY: the 8 lanes are inside `residues` (the caller's promise).
        let x = _mm256_xor_si256(unsafe { _mm256_loadu_si256(at.cast()) }, row);
        if K <= MAX_CLEARED {
            let mut rest = x;
            for _ in 0..K {
                rest = _mm256_and_si256(rest, _mm256_add_epi32(rest, _mm256_set1_epi32(-1)));
            }
            return rest;
        }
        let nibbles = _mm256_set1_epi8(0x0f);
        let counts = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let low = _mm256_shuffle_epi8(counts, _mm256_and_si256(x, nibbles));
        let high =
            _mm256_shuffle_epi8(counts, _mm256_and_si256(_mm256_srli_epi16::<4>(x), nibbles));
        let bytes = _mm256_add_epi8(low, high);
        let pairs = _mm256_maddubs_epi16(bytes, _mm256_set1_epi8(1));
        let distance = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
        // Zero where near: all ones where the distance is below the bound, flipped.
        _mm256_xor_si256(_mm256_cmpgt_epi32(bound, distance), _mm256_set1_epi32(-1))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn either(a: __m256i, b: __m256i) -> __m256i {
        _mm256_min_epu32(a, b)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn none(mask: __m256i) -> bool {
        let near = _mm256_cmpeq_epi32(mask, _mm256_setzero_si256());
        _mm256_testz_si256(near, near) != 0
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn bits(mask: __m256i) -> u64 {
        let near = _mm256_cmpeq_epi32(mask, _mm256_setzero_si256());
        _mm256_movemask_ps(_mm256_castsi256_ps(near)) as u32 as u64
    }
}

/// Keeps the entries `first + i` for each bit `i` of `found` that are
/// within k on their whole fingerprint.
#[cold]
fn keep_found(
    index: &Index,
    t: usize,
    first: usize,
    mut found: u64,
    f: u64,
    row: u32,
    out: &mut Vec<Match>,
) {
    while found != 0 {
        let e = first + found.trailing_zeros() as usize;
        keep_if_owned(index, t, e, f, row, out);
        found &= found - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`NearLanes::near`] of `C` on `residues` as bits, compiled with
    /// `C`'s features by the callers below.
    #[inline(always)]
    unsafe fn near_bits<C: NearLanes>(residues: &[u32], row: u32, bound: u32) -> u64 {
        // SAFETY: the caller's features; `residues` holds a vector.
        unsafe { C::bits(C::near(residues, 0, C::splat(row), C::splat(bound))) }
    }

    #[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,bmi2")]
    unsafe fn near_bits_avx512(residues: &[u32], row: u32, bound: u32) -> u64 {
        // SAFETY: this function's features are `Avx512`'s.
        unsafe { near_bits::<Avx512>(residues, row, bound) }
    }

    #[target_feature(enable = "avx2,bmi2")]
    unsafe fn near_bits_avx2<const K: u32>(residues: &[u32], row: u32, bound: u32) -> u64 {
        // SAFETY: this function's features are `Avx2`'s.
        unsafe { near_bits::<Avx2<K>>(residues, row, bound) }
    }

    /// The lanes near by every AVX2 compare that takes `bound`: the one
    /// for any k, and the one for k = `bound - 1` if that is small; each
    /// also through [`NearLanes::either`] with a vector near nowhere.
    #[target_feature(enable = "avx2,bmi2")]
    unsafe fn near_bits_avx2_each(residues: &[u32], row: u32, bound: u32) -> Vec<u64> {
        // SAFETY: this function's features are `Avx2`'s.
        unsafe {
            let small = match bound {
                1 => Some(near_bits_avx2::<0>(residues, row, bound)),
                2 => Some(near_bits_avx2::<1>(residues, row, bound)),
                3 => Some(near_bits_avx2::<2>(residues, row, bound)),
                4 => Some(near_bits_avx2::<3>(residues, row, bound)),
                _ => None,
            };
            let far = Avx2::<ANY_K>::near(
                &[!row; 8],
                0,
                Avx2::<ANY_K>::splat(row),
                Avx2::<ANY_K>::splat(bound.min(32)),
            );
            let near = Avx2::<ANY_K>::near(
                residues,
                0,
                Avx2::<ANY_K>::splat(row),
                Avx2::<ANY_K>::splat(bound),
            );
            let joined = Avx2::<ANY_K>::bits(Avx2::<ANY_K>::either(near, far));
            let none = Avx2::<ANY_K>::none(near);
            let from_none = if none { 0 } else { u64::MAX };
            std::iter::once(near_bits_avx2::<ANY_K>(residues, row, bound))
                .chain(small)
                .chain([joined, from_none & joined])
                .collect()
        }
    }

    #[test]
    fn a_lane_is_near_when_its_distance_is_below_the_bound() {
        let row = 0x9e37_79b9u32;
        let mut checked = 0;
        for simd in Simd::all_available() {
            let lanes = simd.lanes();
            for shift in 0..33 {
                // Lane i at distance (5i + shift) mod 33: every distance
                // from 0 to 32 in some lane and round.
                let distances: Vec<u32> = (0..lanes as u32).map(|i| (5 * i + shift) % 33).collect();
                let residues: Vec<u32> = distances
                    .iter()
                    .map(|&d| row ^ u32::MAX.checked_shr(32 - d).unwrap_or(0))
                    .collect();
                for bound in 0..=33 {
                    let expected = (0..lanes)
                        .filter(|&i| distances[i] < bound)
                        .fold(0u64, |bits, i| bits | 1 << i);
                    // SAFETY: `all_available` lists what this CPU has.
                    let got = unsafe {
                        match simd {
                            Simd::Avx512 => vec![near_bits_avx512(&residues, row, bound)],
                            Simd::Avx2 => near_bits_avx2_each(&residues, row, bound),
                        }
                    };
                    for got in got {
                        assert_eq!(got, expected, "{simd:?} shift {shift} bound {bound}");
                        checked += 1;
                    }
                }
            }
        }
        // Every x86-64 CPU this project runs on has AVX2.
        assert!(checked > 0 || Simd::detect().is_none());
    }
}
