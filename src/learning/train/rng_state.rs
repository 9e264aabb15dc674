//! A serializable snapshot of a `ChaCha8Rng`, so a resumed run draws the same random numbers as an
//! uninterrupted one. rand_chacha's `serde` feature is not enabled in this crate, so the state is
//! taken apart by its public accessors: the 32-byte seed, the stream (nonce) and the word position
//! in the key stream — which together determine every future output.

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The position of a `ChaCha8Rng`, as text-friendly fields (JSON numbers cannot hold a u128).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RngState {
    /// The 32-byte seed, 64 lowercase hex digits.
    pub seed: String,
    /// The stream number (`set_stream`).
    pub stream: u64,
    /// Words consumed from the key stream, in decimal (`get_word_pos`, a 68-bit number).
    pub word_pos: String,
}

impl RngState {
    /// Snapshot of `rng`; [`restore`](Self::restore) continues exactly where it stands.
    pub fn capture(rng: &ChaCha8Rng) -> Self {
        let seed = rng.get_seed().iter().map(|b| format!("{b:02x}")).collect();
        Self {
            seed,
            stream: rng.get_stream(),
            word_pos: rng.get_word_pos().to_string(),
        }
    }

    /// A generator in exactly the captured position. Errors name the bad field.
    pub fn restore(&self) -> Result<ChaCha8Rng> {
        let bad = |field: &str, msg: &str| Error::Other(format!("RNG state: {field}: {msg}"));
        let hex = self.seed.as_bytes();
        if hex.len() != 64 {
            return Err(bad("seed", "expected 64 hex digits"));
        }
        let mut seed = [0u8; 32];
        for (i, pair) in hex.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| bad("seed", "not hex"))?;
            seed[i] = u8::from_str_radix(text, 16).map_err(|_| bad("seed", "not hex"))?;
        }
        let word_pos: u128 = self
            .word_pos
            .parse()
            .map_err(|_| bad("word_pos", "not a whole number"))?;
        let mut rng = ChaCha8Rng::from_seed(seed);
        rng.set_stream(self.stream);
        rng.set_word_pos(word_pos);
        Ok(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, RngCore};

    #[test]
    fn restore_continues_the_same_sequence() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        rng.set_stream(7);
        // Leave the generator mid-block and mid-u64: 3 u32 words, one u64, one f32.
        for _ in 0..3 {
            rng.next_u32();
        }
        rng.next_u64();
        let _: f32 = rng.random();
        let snap = RngState::capture(&rng);
        let json = serde_json::to_string(&snap).unwrap();
        let back: RngState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snap);
        let mut resumed = back.restore().unwrap();
        let want: Vec<u64> = (0..40).map(|_| rng.next_u64()).collect();
        let got: Vec<u64> = (0..40).map(|_| resumed.next_u64()).collect();
        assert_eq!(got, want);
        // 3 + 2 + 1 = 6 words consumed.
        assert_eq!(snap.word_pos, "6");
        assert_eq!(snap.stream, 7);
    }

    #[test]
    fn bad_fields_are_errors() {
        let ok = RngState::capture(&ChaCha8Rng::seed_from_u64(1));
        let short = RngState {
            seed: "abc".into(),
            ..ok.clone()
        };
        assert!(short.restore().is_err());
        let not_hex = RngState {
            seed: "zz".repeat(32),
            ..ok.clone()
        };
        assert!(not_hex.restore().is_err());
        let bad_pos = RngState {
            word_pos: "-1".into(),
            ..ok
        };
        assert!(bad_pos.restore().is_err());
    }
}
