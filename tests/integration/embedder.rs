//! The sentence embedder gives the vectors the learned heads under `data/` were fit on: pinned to
//! stored all-MiniLM-L6-v2 embeddings (`tests/data/minilm-embeddings.json`), embedded in one batch
//! of mixed lengths and again one by one. The matrix kernels pick their instructions by the CPU
//! (AVX-512 or AVX2 and FMA), which moves the last bits of a sum, so each value must lie within
//! `TOLERANCE` of the stored one (the values are of order 0.05; the kernels differ by about 1e-7):
//! a change of implementation (a layer out of order, another normalization) moves them by 1e-3
//! and more. On one machine the batch and the
//! single embedding agree bit for bit.

use empathy_gym::environment::sim::Embedder;
use serde::Deserialize;

#[derive(Deserialize)]
struct Stored {
    texts: Vec<String>,
    bits: Vec<Vec<u32>>,
}

/// How far a value may lie from the stored one.
const TOLERANCE: f32 = 2e-6;

fn within(got: &[f32], want: &[u32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g - f32::from_bits(*w)).abs() <= TOLERANCE)
}

#[test]
fn embeddings_match_the_stored_vectors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minilm-embeddings.json"
    );
    let stored: Stored = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let texts: Vec<&str> = stored.texts.iter().map(String::as_str).collect();
    let embedder = Embedder::load_default().unwrap_or_else(|e| panic!("{e}"));
    let together = embedder.embed(&texts).unwrap();
    let alone = Embedder::load_default().unwrap();
    for ((text, want), got) in texts.iter().zip(&stored.bits).zip(&together) {
        assert!(within(got, want), "{text:?} in a batch: {got:?}");
        let one = alone.embed(&[text]).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        assert_eq!(bits(&one[0]), bits(got), "{text:?} alone and in a batch");
    }
}
