//! The inputs mutations start from: the target's seeds, and inputs the target accepted that were
//! not seeds (bounded). Without coverage feedback, acceptance is the one signal that a mutant
//! reached past the parser, so such inputs are worth mutating further.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Accepted mutants kept at most.
const FOUND_CAP: usize = 256;

/// Seeds plus accepted mutants.
pub struct Corpus {
    seeds: Vec<Vec<u8>>,
    found: Vec<Vec<u8>>,
}

impl Corpus {
    /// A corpus of `seeds` (not empty).
    pub fn new(seeds: Vec<Vec<u8>>) -> Self {
        Corpus {
            seeds,
            found: Vec::new(),
        }
    }

    /// The seeds, in order.
    pub fn seeds(&self) -> &[Vec<u8>] {
        &self.seeds
    }

    /// An input to mutate: mostly a seed, sometimes an accepted mutant.
    pub fn pick(&self, rng: &mut ChaCha8Rng) -> &[u8] {
        if !self.found.is_empty() && rng.random_bool(0.3) {
            &self.found[rng.random_range(0..self.found.len())]
        } else {
            &self.seeds[rng.random_range(0..self.seeds.len())]
        }
    }

    /// Keeps an accepted input that is not a seed (replacing a random one when full).
    pub fn add(&mut self, input: &[u8], rng: &mut ChaCha8Rng) {
        if self.seeds.iter().any(|s| s == input) {
            return;
        }
        if self.found.len() < FOUND_CAP {
            self.found.push(input.to_vec());
        } else {
            let i = rng.random_range(0..FOUND_CAP);
            self.found[i] = input.to_vec();
        }
    }

    /// Accepted mutants kept.
    pub fn found(&self) -> usize {
        self.found.len()
    }
}
