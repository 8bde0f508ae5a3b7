//! Parquet in and out.

pub(crate) mod columns;
pub mod input;
pub mod output;
pub(crate) mod pages;
pub(crate) mod rewrite;
pub(crate) mod schemes;

/// The Parquet key-value metadata key that holds a fingerprint shard's
/// scheme.
pub(crate) const METADATA_KEY: &str = "neardup.scheme";

/// A page's sketch: 192 more simhash bits (bit `64 j + i` is bit `i` of
/// word `j`). A shard holds it in column [`SKETCH_COLUMN`], a
/// FIXED_LEN_BYTE_ARRAY of [`SKETCH_BYTES`]: the words in order, each
/// little-endian.
pub type Sketch = [u64; 3];

/// The column of a shard's sketches.
pub(crate) const SKETCH_COLUMN: &str = "sketch";

/// Bytes of a sketch in a shard.
pub(crate) const SKETCH_BYTES: usize = std::mem::size_of::<Sketch>();

/// A sketch's bytes as a shard holds them.
pub(crate) fn sketch_bytes(sketch: &Sketch) -> [u8; SKETCH_BYTES] {
    let mut bytes = [0; SKETCH_BYTES];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(sketch) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// The column of a pair's [`crate::io::pairs::Pair::wide_distance`].
pub(crate) const WIDE_DISTANCE: &str = "wide_distance";

/// Bits a wide distance counts: the fingerprint's 64 and the sketch's.
pub(crate) const WIDE_BITS: u32 = 64 + 8 * SKETCH_BYTES as u32;

/// Bits apart of two pages over all [`WIDE_BITS`] bits: the fingerprints'
/// 64 and the sketches' 192 (what `match --verify` compares).
pub fn wide_distance(simhashes: (u64, u64), sketches: (&Sketch, &Sketch)) -> u32 {
    let sketch: u32 = (sketches.0.iter().zip(sketches.1))
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    (simhashes.0 ^ simhashes.1).count_ones() + sketch
}

/// A sketch from its bytes in a shard.
pub(crate) fn sketch_of_bytes(bytes: &[u8]) -> Sketch {
    std::array::from_fn(|j| u64::from_le_bytes(bytes[8 * j..8 * j + 8].try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_distance_counts_all_256_bits() {
        assert_eq!(wide_distance((5, 5), (&[7, 0, 0], &[7, 0, 0])), 0);
        assert_eq!(
            wide_distance((0, 1), (&[0, 0, 0], &[u64::MAX, 1, 0])),
            1 + 64 + 1
        );
        let all = [u64::MAX; 3];
        assert_eq!(wide_distance((0, u64::MAX), (&[0; 3], &all)), 256);
    }
}
