//! Safetensors-aware mutations: the JSON header's tensor entries (dtype, shape, data offsets),
//! entries removed, duplicated under another name or renamed, the `__metadata__` map, the header
//! as JSON text, the data after it, and the 8-byte header length (mostly kept consistent with
//! the header, sometimes a boundary value).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::text::Dictionary;
use super::values::{boundary_int, json_value};
use crate::fuzz::Kind;

const DTYPES: [&str; 19] = [
    "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64", "BOOL",
    "F8_E4M3", "F8_E5M2", "F6_E2M3", "F4", "E8M0", "X",
];

const DIMS: [u64; 12] = [
    0,
    1,
    2,
    3,
    32,
    280,
    1 << 31,
    1 << 32,
    1 << 40,
    1 << 63,
    u64::MAX,
    u64::MAX / 4 + 1,
];

/// The header length and the parsed header of a safetensors file.
pub fn split(data: &[u8]) -> Option<(usize, Map<String, Value>)> {
    let n = usize::try_from(u64::from_le_bytes(data.get(0..8)?.try_into().ok()?)).ok()?;
    let header = data.get(8..8usize.checked_add(n)?)?;
    match serde_json::from_slice(header) {
        Ok(Value::Object(m)) => Some((n, m)),
        _ => None,
    }
}

/// One safetensors-aware mutation of `data`; false when it has no readable header.
pub fn mutate(data: &mut Vec<u8>, dict: &Dictionary, rng: &mut ChaCha8Rng, max_len: usize) -> bool {
    let Some((n, mut header)) = split(data) else {
        return false;
    };
    let mut tail = data[8 + n..].to_vec();
    let names: Vec<String> = header
        .keys()
        .filter(|k| *k != "__metadata__")
        .cloned()
        .collect();
    let mut text: Option<Vec<u8>> = None;
    match rng.random_range(0..10) {
        0..=3 if !names.is_empty() => {
            let name = &names[rng.random_range(0..names.len())];
            if let Some(Value::Object(entry)) = header.get_mut(name) {
                mutate_entry(entry, tail.len() as u64, rng);
            }
        }
        4 | 5 if !names.is_empty() => {
            let name = names[rng.random_range(0..names.len())].clone();
            let other = names[rng.random_range(0..names.len())].clone();
            match rng.random_range(0..3) {
                0 => {
                    header.remove(&name);
                }
                1 => {
                    // Another entry's place under this name, or a copy under a new name.
                    if let Some(v) = header.get(&other).cloned() {
                        let new = if rng.random_bool(0.5) {
                            name
                        } else {
                            format!("{name}.copy")
                        };
                        header.insert(new, v);
                    }
                }
                _ => {
                    if let Some(v) = header.remove(&name) {
                        let new = if rng.random_bool(0.5) {
                            format!("x{name}")
                        } else {
                            String::new()
                        };
                        header.insert(new, v);
                    }
                }
            }
        }
        6 => mutate_metadata(&mut header, rng),
        7 => {
            let mut bytes = serde_json::to_vec(&header).unwrap_or_default();
            super::text::mutate(&mut bytes, &[], Kind::Json, dict, rng, max_len);
            text = Some(bytes);
        }
        8 => {
            if !tail.is_empty() && rng.random_bool(0.7) {
                let at = rng.random_range(0..tail.len());
                tail.truncate(at);
            } else {
                tail.extend(std::iter::repeat_n(0u8, rng.random_range(1..64)));
            }
        }
        _ => {}
    }
    let header_bytes = text.unwrap_or_else(|| serde_json::to_vec(&header).unwrap_or_default());
    let len = header_bytes.len() as u64;
    let declared = match rng.random_range(0..10) {
        0 => boundary_int(rng),
        1 => len.wrapping_add(rng.random_range(1..=9)),
        2 => len.wrapping_sub(rng.random_range(1..=9)),
        _ => len,
    };
    data.clear();
    data.extend_from_slice(&declared.to_le_bytes());
    data.extend_from_slice(&header_bytes);
    data.extend_from_slice(&tail);
    data.truncate(max_len);
    true
}

fn mutate_entry(entry: &mut Map<String, Value>, data_len: u64, rng: &mut ChaCha8Rng) {
    let field = ["dtype", "shape", "data_offsets"][rng.random_range(0..3)];
    if rng.random_bool(0.1) {
        match rng.random_range(0..3) {
            0 => {
                entry.remove(field);
            }
            1 => {
                let v: Value = serde_json::from_str(&json_value(rng)).unwrap_or(Value::Null);
                entry.insert(field.to_string(), v);
            }
            _ => {
                entry.insert("extra".into(), json!(1));
            }
        }
        return;
    }
    match field {
        "dtype" => {
            let d = DTYPES[rng.random_range(0..DTYPES.len())];
            entry.insert(field.into(), json!(d));
        }
        "shape" => {
            let mut shape: Vec<Value> = entry
                .get(field)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let dim = json!(DIMS[rng.random_range(0..DIMS.len())]);
            match rng.random_range(0..5) {
                0 => shape.push(dim),
                1 => {
                    shape.pop();
                }
                2 if !shape.is_empty() => {
                    let i = rng.random_range(0..shape.len());
                    shape[i] = dim;
                }
                3 if !shape.is_empty() => {
                    let i = rng.random_range(0..shape.len());
                    shape[i] = [json!(-1), json!(1.5), json!("2")][rng.random_range(0..3)].clone();
                }
                _ => shape.reverse(),
            }
            entry.insert(field.into(), Value::Array(shape));
        }
        _ => {
            let (a, b) = match entry.get(field).and_then(Value::as_array) {
                Some(v) if v.len() == 2 => (v[0].as_u64().unwrap_or(0), v[1].as_u64().unwrap_or(0)),
                _ => (0, 0),
            };
            let offsets = match rng.random_range(0..9) {
                0 => json!([b, a]),
                1 => json!([a, b.wrapping_add(1)]),
                2 => json!([a, data_len.wrapping_add(1)]),
                3 => json!([0, 0]),
                4 => json!([a, u64::MAX]),
                5 => json!([u64::MAX, a]),
                6 => json!([a, b, b]),
                7 => json!([a]),
                _ => json!([a.wrapping_add(4), b.wrapping_add(4)]),
            };
            entry.insert(field.into(), offsets);
        }
    }
}

fn mutate_metadata(header: &mut Map<String, Value>, rng: &mut ChaCha8Rng) {
    const STEPS: [&str; 8] = [
        "0",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "1e3",
        "",
        " 1",
        "+7",
    ];
    const SCHEMAS: [&str; 4] = ["empathy-gym/adamw/v1", "empathy-gym/adamw/v2", "", "pt"];
    let meta = header
        .entry("__metadata__")
        .or_insert_with(|| Value::Object(Map::new()));
    match rng.random_range(0..5) {
        0 => *meta = serde_json::from_str(&json_value(rng)).unwrap_or(Value::Null),
        1 => {
            if let Value::Object(m) = meta {
                m.insert(
                    "step".into(),
                    json!(STEPS[rng.random_range(0..STEPS.len())]),
                );
            }
        }
        2 => {
            if let Value::Object(m) = meta {
                let s = SCHEMAS[rng.random_range(0..SCHEMAS.len())];
                m.insert("schema".into(), json!(s));
            }
        }
        3 => {
            if let Value::Object(m) = meta {
                m.insert("step".into(), json!(7));
            }
        }
        _ => {
            header.remove("__metadata__");
        }
    }
}
