//! SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): its stream, which
//! `gen` and the tests draw from, and its finaliser, which every stage
//! uses to mix a word's bits. Both are fixed forever: a seed names the same
//! data in every version of neardup (a crate's generator may change its
//! stream), and the fingerprint schemes hash with the finaliser.

/// The stream's increment: 2^64 over the golden ratio.
pub const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser: every bit of the result depends on every bit
/// of `z`.
#[inline(always)]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64's stream from a seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// Flips exactly `d` distinct bits of `f`.
    pub fn flip_bits(&mut self, mut f: u64, d: u32) -> u64 {
        let mut flipped = 0u64;
        while flipped.count_ones() < d {
            flipped |= 1 << self.below(64);
        }
        f ^= flipped;
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference implementation's first outputs for seed 1234567
    /// (Vigna's `splitmix64.c`), so that no edit changes the stream.
    #[test]
    fn the_stream_is_splitmix64s() {
        let mut rng = SplitMix64::new(1234567);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            first,
            [
                6457827717110365317,
                3203168211198807973,
                9817491932198370423
            ]
        );
    }
}
