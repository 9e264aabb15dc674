//! The mutator: from an input of the corpus, one to four stacked mutations chosen by the
//! target's [`Kind`] (format-aware ones mostly, byte-level ones always possible), the result cut
//! to a size limit.

pub mod bytes;
pub mod gguf;
pub mod gguf_layout;
pub mod safetensors;
pub mod spans;
pub mod text;
pub mod values;

use std::ops::Range;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::corpus::Corpus;
use super::Kind;
use text::Dictionary;

/// Makes new inputs from a corpus.
pub struct Mutator {
    kind: Kind,
    dict: Dictionary,
    max_len: usize,
}

impl Mutator {
    /// A mutator for inputs of `kind`, with the words of `seeds`; inputs grow to at most four
    /// times the largest seed (and at least 64 KiB).
    pub fn new(kind: Kind, seeds: &[Vec<u8>]) -> Self {
        let largest = seeds.iter().map(Vec::len).max().unwrap_or(0);
        Mutator {
            kind,
            dict: Dictionary::of(seeds),
            max_len: (largest * 4).max(64 << 10),
        }
    }

    /// A new input: an input of `corpus` with one to four mutations.
    pub fn mutate(&self, corpus: &Corpus, rng: &mut ChaCha8Rng) -> Vec<u8> {
        let mut data = corpus.pick(rng).to_vec();
        let other = corpus.pick(rng).to_vec();
        let n = [1, 1, 1, 2, 2, 3, 4][rng.random_range(0..7)];
        for _ in 0..n {
            self.once(&mut data, &other, rng);
        }
        data
    }

    fn once(&self, data: &mut Vec<u8>, other: &[u8], rng: &mut ChaCha8Rng) {
        // Text gets few byte mutations: most of them only make it invalid UTF-8.
        let aware = match self.kind {
            Kind::Json | Kind::Yaml => rng.random_bool(0.95),
            Kind::Gguf | Kind::Safetensors => rng.random_bool(0.8),
        };
        match self.kind {
            Kind::Json | Kind::Yaml if aware => {
                text::mutate(data, other, self.kind, &self.dict, rng, self.max_len)
            }
            Kind::Gguf if aware && gguf::mutate(data, rng) => {}
            Kind::Safetensors
                if aware && safetensors::mutate(data, &self.dict, rng, self.max_len) => {}
            _ => {
                let hot = self.hot(data);
                bytes::mutate(data, other, &hot, rng, self.max_len)
            }
        }
        data.truncate(self.max_len);
    }

    /// The header of a binary input past its magic number or length, where byte mutations
    /// mostly go (the format-aware mutations change those).
    fn hot(&self, data: &[u8]) -> Option<Range<usize>> {
        match self.kind {
            Kind::Gguf => Some(8..gguf_layout::parse(data).header_end.max(24)),
            Kind::Safetensors => {
                let n = data
                    .get(0..8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                    .unwrap_or(0);
                Some(8..(n.min(data.len() as u64) as usize).saturating_add(8))
            }
            Kind::Json | Kind::Yaml => None,
        }
    }
}
