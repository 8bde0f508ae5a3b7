//! Parquet in and out.

pub mod input;
pub mod output;
pub(crate) mod pages;
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

/// A sketch from its bytes in a shard.
pub(crate) fn sketch_of_bytes(bytes: &[u8]) -> Sketch {
    std::array::from_fn(|j| u64::from_le_bytes(bytes[8 * j..8 * j + 8].try_into().unwrap()))
}
