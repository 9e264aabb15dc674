//! Seed derivation: every random stream in a run comes from the run's seed through here.

/// SplitMix64 (Steele et al. 2014): a well-mixed 64-bit value from `seed` and a stream index, so
/// that episode `i` of a run gets an independent, reproducible seed.
pub fn derive(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    #[test]
    fn derive_is_stable_and_spreads() {
        // Pinned: logs from earlier runs must replay with the same seeds.
        assert_eq!(super::derive(0, 0), 0xE220_A839_7B1D_CDAF);
        assert_ne!(super::derive(1, 0), super::derive(0, 1));
    }
}
