//! The sentence embedder gives the vectors the learned heads under `data/` were fit on: pinned bit
//! for bit to stored all-MiniLM-L6-v2 embeddings (`tests/data/minilm-embeddings.json`), embedded in
//! one batch of mixed lengths and again one by one.

use empathy_gym::sim::Embedder;
use serde::Deserialize;

#[derive(Deserialize)]
struct Stored {
    texts: Vec<String>,
    bits: Vec<Vec<u32>>,
}

#[test]
fn embeddings_match_the_stored_vectors_bit_for_bit() {
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
        let bits: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
        assert_eq!(&bits, want, "{text:?} in a batch");
        let one = alone.embed(&[text]).unwrap();
        let bits: Vec<u32> = one[0].iter().map(|x| x.to_bits()).collect();
        assert_eq!(&bits, want, "{text:?} alone");
    }
}
