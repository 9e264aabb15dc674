//! GGUF-aware mutations: a header field patched in place with a boundary value of its width
//! (counts, string lengths, type tags, integer and float metadata, array lengths, tensor
//! dimension counts, dimensions, types and offsets), a string value replaced (architecture,
//! pre-tokenizer, chat template), a value given another type, metadata entries and tensor
//! descriptions removed, duplicated or added (with the count updated), and the tensor data cut.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::bytes::{read_int, write_int};
use super::gguf_layout::{parse, Field, FieldClass, Layout, ENTRY_COUNT_AT, TENSOR_COUNT_AT};
use super::values::{boundary_int, odd_string};

/// Float bit patterns (f32, f64): NaN, infinities, zeros, the smallest subnormal, huge, -1.
const F32_BITS: [u32; 9] = [
    0x7fc0_0000,
    0x7f80_0000,
    0xff80_0000,
    0,
    0x8000_0000,
    1,
    0x7f7f_ffff,
    0xbf80_0000,
    0x3f80_0000,
];
const F64_BITS: [u64; 7] = [
    0x7ff8_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0,
    1,
    0x7fef_ffff_ffff_ffff,
    0xbff0_0000_0000_0000,
];

/// Keys a loader may look for, besides those of the seed.
const EXTRA_KEYS: [&str; 12] = [
    "general.alignment",
    "general.architecture",
    "llama.vocab_size",
    "llama.rope.dimension_count",
    "llama.rope.scaling.type",
    "llama.rope.scaling.factor",
    "llama.attention.key_length",
    "qwen2.block_count",
    "qwen2.embedding_length",
    "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.add_bos_token",
    "tokenizer.ggml.scores",
];

/// One GGUF-aware mutation of `data`; false when the header offered nothing to work on.
pub fn mutate(data: &mut Vec<u8>, rng: &mut ChaCha8Rng) -> bool {
    let layout = parse(data);
    if layout.fields.is_empty() {
        return false;
    }
    match rng.random_range(0..10) {
        0..=3 => patch_field(data, &layout, rng),
        4 => replace_string(data, &layout, rng),
        5 => retype_entry(data, &layout, rng),
        6 => entry_count_change(data, &layout, rng),
        7 => add_entry(data, &layout, rng),
        8 => tensor_count_change(data, &layout, rng),
        _ => cut_data(data, &layout, rng),
    }
}

fn patch_field(data: &mut [u8], layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    let mut classes: Vec<FieldClass> = layout.fields.iter().map(|f| f.class).collect();
    classes.sort_by_key(|c| *c as u8);
    classes.dedup();
    let class = classes[rng.random_range(0..classes.len())];
    // Mostly a field of its own rather than one of an array's many elements.
    let own = rng.random_bool(0.7);
    let candidates: Vec<&Field> = layout
        .fields
        .iter()
        .filter(|f| f.class == class && (!own || !f.in_array))
        .collect();
    if candidates.is_empty() {
        return false;
    }
    let f = candidates[rng.random_range(0..candidates.len())];
    let old = read_int(data, f.at, f.width);
    let small = |rng: &mut ChaCha8Rng, max: u64| {
        if rng.random_bool(0.5) {
            rng.random_range(0..=max)
        } else {
            boundary_int(rng)
        }
    };
    let new = match f.class {
        FieldClass::Float if f.width == 4 => F32_BITS[rng.random_range(0..F32_BITS.len())] as u64,
        FieldClass::Float => F64_BITS[rng.random_range(0..F64_BITS.len())],
        FieldClass::TypeTag | FieldClass::ElemType => small(rng, 13),
        FieldClass::NDims => small(rng, 9),
        FieldClass::GgmlType => small(rng, 40),
        FieldClass::Dim => {
            const DIMS: [u64; 10] = [0, 1, 2, 31, 32, 33, 64, 280, 281, 1 << 20];
            match rng.random_range(0..3) {
                0 => DIMS[rng.random_range(0..DIMS.len())],
                1 => old.wrapping_mul(2),
                _ => boundary_int(rng),
            }
        }
        _ => match rng.random_range(0..3) {
            0 => old.wrapping_add(rng.random_range(1..=4)),
            1 => old.wrapping_sub(rng.random_range(1..=4)),
            _ => boundary_int(rng),
        },
    };
    write_int(data, f.at, f.width, new);
    true
}

/// A GGUF string: u64 length, bytes.
fn gguf_string(s: &str) -> Vec<u8> {
    let mut out = (s.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(s.as_bytes());
    out
}

/// A string the loader may look for under `key`.
fn string_for(key: &str, rng: &mut ChaCha8Rng) -> String {
    let options: &[&str] = match key {
        "general.architecture" => &["llama", "qwen2", "gpt2", "", "Llama", "llama\0", "phi3"],
        "tokenizer.ggml.pre" => &["smollm", "gpt2", "default", "llama-bpe", "qwen2", "x", ""],
        "tokenizer.ggml.model" => &["gpt2", "llama", "bert", ""],
        "tokenizer.chat_template" => &[
            "",
            "{% for message in messages %}",
            "<|im_start|>{{ message['content'] }}<|im_end|>",
            "<|start_header_id|>{{ message['role'] }}<|end_header_id|>",
            "{{ bos_token }}",
        ],
        _ => &[],
    };
    if !options.is_empty() && rng.random_bool(0.7) {
        options[rng.random_range(0..options.len())].to_string()
    } else {
        odd_string(rng)
    }
}

fn replace_string(data: &mut Vec<u8>, layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    let strings: Vec<_> = layout.entries.iter().filter(|e| e.tag == 8).collect();
    if strings.is_empty() {
        return false;
    }
    let e = strings[rng.random_range(0..strings.len())];
    let s = string_for(&e.key, rng);
    data.splice(e.value.clone(), gguf_string(&s));
    true
}

/// A value of type `tag` (arrays of u32 or strings).
fn encode_value(tag: u32, key: &str, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let int = |rng: &mut ChaCha8Rng, w: usize| boundary_int(rng).to_le_bytes()[..w].to_vec();
    match tag {
        0 | 1 | 7 => int(rng, 1),
        2 | 3 => int(rng, 2),
        4 | 5 => int(rng, 4),
        6 => F32_BITS[rng.random_range(0..F32_BITS.len())]
            .to_le_bytes()
            .to_vec(),
        8 => gguf_string(&string_for(key, rng)),
        9 => {
            let n = [0u64, 1, 3, 300][rng.random_range(0..4)];
            let strings = rng.random_bool(0.5);
            let mut out = (if strings { 8u32 } else { 4u32 }).to_le_bytes().to_vec();
            out.extend_from_slice(&n.to_le_bytes());
            for i in 0..n {
                if strings {
                    out.extend(gguf_string(&format!("t{i}")));
                } else {
                    out.extend_from_slice(&(i as u32).to_le_bytes());
                }
            }
            out
        }
        10 | 11 => int(rng, 8),
        _ => F64_BITS[rng.random_range(0..F64_BITS.len())]
            .to_le_bytes()
            .to_vec(),
    }
}

fn retype_entry(data: &mut Vec<u8>, layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    if layout.entries.is_empty() {
        return false;
    }
    let e = &layout.entries[rng.random_range(0..layout.entries.len())];
    let tag = rng.random_range(0..=12u32);
    let mut value = tag.to_le_bytes().to_vec();
    value.extend(encode_value(tag, &e.key, rng));
    data.splice(e.value.start - 4..e.value.end, value);
    true
}

fn bump_count(data: &mut [u8], at: usize, up: bool) {
    let n = read_int(data, at, 8);
    let n = if up {
        n.wrapping_add(1)
    } else {
        n.wrapping_sub(1)
    };
    write_int(data, at, 8, n);
}

fn entry_count_change(data: &mut Vec<u8>, layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    if layout.entries.is_empty() {
        return false;
    }
    let e = layout.entries[rng.random_range(0..layout.entries.len())].clone();
    if rng.random_bool(0.5) {
        data.drain(e.span);
        bump_count(data, ENTRY_COUNT_AT, false);
    } else {
        let copy = data[e.span.clone()].to_vec();
        data.splice(e.span.end..e.span.end, copy);
        bump_count(data, ENTRY_COUNT_AT, true);
    }
    true
}

fn add_entry(data: &mut Vec<u8>, layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    let key = if rng.random_bool(0.5) || layout.entries.is_empty() {
        EXTRA_KEYS[rng.random_range(0..EXTRA_KEYS.len())].to_string()
    } else {
        layout.entries[rng.random_range(0..layout.entries.len())]
            .key
            .clone()
    };
    let tag = if rng.random_bool(0.5) {
        4
    } else {
        rng.random_range(0..=12u32)
    };
    let mut entry = gguf_string(&key);
    entry.extend_from_slice(&tag.to_le_bytes());
    entry.extend(encode_value(tag, &key, rng));
    let at = layout
        .entries
        .last()
        .map_or(ENTRY_COUNT_AT + 8, |e| e.span.end);
    if at > data.len() {
        return false;
    }
    data.splice(at..at, entry);
    bump_count(data, ENTRY_COUNT_AT, true);
    true
}

fn tensor_count_change(data: &mut Vec<u8>, layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    if layout.tensors.is_empty() {
        return false;
    }
    let t = layout.tensors[rng.random_range(0..layout.tensors.len())].clone();
    if rng.random_bool(0.5) {
        data.drain(t);
        bump_count(data, TENSOR_COUNT_AT, false);
    } else {
        let copy = data[t.clone()].to_vec();
        data.splice(t.end..t.end, copy);
        bump_count(data, TENSOR_COUNT_AT, true);
    }
    true
}

fn cut_data(data: &mut Vec<u8>, layout: &Layout, rng: &mut ChaCha8Rng) -> bool {
    if layout.header_end >= data.len() {
        return false;
    }
    let at = rng.random_range(layout.header_end..data.len());
    data.truncate(at);
    true
}
