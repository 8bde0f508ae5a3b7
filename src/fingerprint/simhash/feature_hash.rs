//! Step 4 of the algorithm: xxh3-64 (seed 0) of a feature's UTF-8 bytes,
//! with the case of 4 to 8 bytes (a character 5-gram of ASCII text, the
//! default scheme's feature on most pages) computed inline.
//!
//! xxh3 hashes 4 to 8 bytes from two overlapping 32-bit reads, one at each
//! end, and two multiplications. Through `xxh3_64` each gram also paid the
//! dispatch on its length; inline, the grams of a text are one loop of
//! loads and multiplications. The bits are xxh3's: a unit test compares
//! both on every length.

use xxhash_rust::xxh3::xxh3_64;

/// xxh3's default secret, bytes 8..16 xor bytes 16..24 (read little
/// endian): the key of its 4-8 byte case at seed 0.
const KEY_4_TO_8: u64 = 0x1cad_21f7_2c81_017c ^ 0xdb97_9083_e96d_d4de;

/// xxh3-64 of `bytes`, seed 0.
#[inline]
pub(super) fn feature_hash(bytes: &[u8]) -> u64 {
    match bytes.len() {
        len @ 4..=8 => hash_4_to_8(read_u32(bytes, 0), read_u32(bytes, len - 4), len as u64),
        _ => xxh3_64(bytes),
    }
}

/// Appends xxh3-64 of every `n`-byte window of `bytes`, in order, to
/// `out`; `n` is at least 1 and at most the length of `bytes`. One loop
/// per case, so that the common one has no branch per window; and
/// [`WINDOWS_AT_ONCE`] windows at a time, so that a chunked `out` takes
/// each piece by its length.
pub(super) fn push_window_hashes(bytes: &[u8], n: usize, out: &mut impl Extend<u64>) {
    let count = bytes.len() - n + 1;
    for start in (0..count).step_by(WINDOWS_AT_ONCE) {
        let windows = start..(start + WINDOWS_AT_ONCE).min(count);
        match n {
            4..=8 => out
                .extend(windows.map(|i| {
                    hash_4_to_8(read_u32(bytes, i), read_u32(bytes, i + n - 4), n as u64)
                })),
            _ => out.extend(windows.map(|i| xxh3_64(&bytes[i..i + n]))),
        }
    }
}

/// Windows hashed in one piece: a small part of a chunk of the sums
/// (`document_sums::HashChunks`), so that emptying a chunk early for a piece that
/// would not fit it wastes little of it.
const WINDOWS_AT_ONCE: usize = 4096;

#[inline(always)]
fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

/// xxh3's 4-8 byte case: the first and last four bytes, keyed, then its
/// strong avalanche with the length.
#[inline(always)]
fn hash_4_to_8(first: u32, last: u32, len: u64) -> u64 {
    let keyed = (u64::from(last).wrapping_add(u64::from(first) << 32)) ^ KEY_4_TO_8;
    let mut h = keyed ^ keyed.rotate_left(49) ^ keyed.rotate_left(24);
    h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^ (h >> 28)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn feature_hash_is_xxh3_at_every_length() {
        for len in 0..300 {
            for seed in 1..20 {
                let bytes = random_bytes(seed * 7919 + len as u64, len);
                assert_eq!(feature_hash(&bytes), xxh3_64(&bytes), "{len} bytes");
            }
        }
    }

    #[test]
    fn window_hashes_are_xxh3_of_each_window() {
        // Longer than two pieces of windows.
        let bytes = random_bytes(42, 2 * WINDOWS_AT_ONCE + 100);
        for n in 1..=20 {
            let windows: Vec<u64> = bytes.windows(n).map(xxh3_64).collect();
            let mut found = vec![7];
            push_window_hashes(&bytes, n, &mut found);
            assert_eq!(found[1..], windows, "{n}");
        }
    }
}
