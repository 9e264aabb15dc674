//! The fuzz harness's structure-aware mutators read the formats they mutate
//! (tests/support/src/fuzz/mutate). They live here rather than as unit tests of the support
//! crate, so that crate is compiled once, as the library the tests and benchmarks use.

use candle_core::{DType, Device, Tensor};
use empathy_test_support::fuzz::mutate::gguf_layout::{parse, ENTRY_COUNT_AT, TENSOR_COUNT_AT};
use empathy_test_support::fuzz::mutate::safetensors::{mutate, split};
use empathy_test_support::fuzz::mutate::spans::{json_members, number_spans, yaml_values};
use empathy_test_support::fuzz::mutate::text::Dictionary;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::model_fixtures::{write_gguf, TinySpec};

#[test]
fn spans_find_numbers_members_and_values() {
    let json = br#"{"a": 12, "b": [1, -2.5e3], "c": {"d": "x\"y"}}"#;
    let nums: Vec<&[u8]> = number_spans(json).into_iter().map(|r| &json[r]).collect();
    assert_eq!(nums, [&b"12"[..], b"1", b"-2.5e3"]);
    let values: Vec<&[u8]> = json_members(json)
        .into_iter()
        .map(|(_, v)| &json[v])
        .collect();
    assert_eq!(
        values,
        [
            &b"12"[..],
            b"[1, -2.5e3]",
            br#"{"d": "x\"y"}"#,
            br#""x\"y""#
        ]
    );
    let yaml = b"a: 1\nlist:\n  - x: [1, 2]\n  - y\n";
    let values: Vec<&[u8]> = yaml_values(yaml).into_iter().map(|r| &yaml[r]).collect();
    assert_eq!(values, [&b"1"[..], b"[1, 2]", b"y"]);
}

#[test]
fn the_gguf_layout_finds_every_entry_and_tensor_of_a_written_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    write_gguf(&path, &TinySpec::llama()).unwrap();
    let d = std::fs::read(&path).unwrap();
    let layout = parse(&d);
    let count = |at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap()) as usize;
    assert_eq!(layout.entries.len(), count(ENTRY_COUNT_AT));
    assert_eq!(layout.tensors.len(), count(TENSOR_COUNT_AT));
    assert_eq!(layout.entries[0].key, "general.architecture");
    assert_eq!(
        &d[layout.entries[0].value.start + 8..layout.entries[0].value.end],
        b"llama"
    );
    assert!(layout.header_end < d.len());
}

#[test]
fn the_safetensors_mutator_reads_the_header_it_mutates() {
    let t = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.safetensors");
    candle_core::safetensors::save(&[("w".to_string(), t)].into_iter().collect(), &path).unwrap();
    let seed = std::fs::read(&path).unwrap();
    let (_, header) = split(&seed).expect("a safetensors header");
    assert!(header.contains_key("w"));
    let dict = Dictionary::of(std::slice::from_ref(&seed));
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut changed = 0;
    for _ in 0..100 {
        let mut d = seed.clone();
        assert!(mutate(&mut d, &dict, &mut rng, 1 << 20));
        changed += usize::from(d != seed);
    }
    assert!(
        changed > 50,
        "{changed} of 100 mutants differ from the seed"
    );
}
