//! The values mutations write: integers at the edges of their widths, numbers as text that
//! parsers disagree on, odd strings, and a value of every type in JSON and YAML spelling.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Integers at the edges of 8-, 16-, 32- and 64-bit ranges, and sizes that overflow products.
pub const BOUNDARY_INTS: [u64; 24] = [
    0,
    1,
    2,
    3,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    1 << 31,
    0xffff_ffff,
    1 << 32,
    1 << 40,
    1 << 48,
    1 << 53,
    1 << 62,
    0x7fff_ffff_ffff_ffff,
    1 << 63,
    u64::MAX - 1,
    u64::MAX,
    u64::MAX / 3,
];

/// A boundary integer, sometimes nudged by a small amount.
pub fn boundary_int(rng: &mut ChaCha8Rng) -> u64 {
    let v = BOUNDARY_INTS[rng.random_range(0..BOUNDARY_INTS.len())];
    match rng.random_range(0..4) {
        0 => v.wrapping_add(rng.random_range(1..=16)),
        1 => v.wrapping_sub(rng.random_range(1..=16)),
        _ => v,
    }
}

/// Numbers as text, including ones that overflow each integer width or a double, non-finite
/// spellings, and near-numbers.
pub const NUMBER_TEXTS: [&str; 52] = [
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "7",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1099511627776",
    "340282366920938463463374607431768211456",
    "1e308",
    "-1e308",
    "1e309",
    "1.7976931348623157e308",
    "5e-324",
    "1e-400",
    "0.5",
    "-0.5",
    "1.0",
    "0.0001",
    "1e6",
    "1e100",
    "NaN",
    ".nan",
    ".inf",
    "-.inf",
    "nan",
    "inf",
    "Infinity",
    "-Infinity",
    "0x10",
    "0o7",
    "1_000",
    "+1",
    "01",
    "1.",
    ".5",
    "1e",
];

/// String contents that are empty, long, not ASCII, control characters, the chat template's
/// special tokens, template syntax and path-like.
pub fn odd_string(rng: &mut ChaCha8Rng) -> String {
    const FIXED: [&str; 26] = [
        "",
        " ",
        "a",
        "é",
        "\u{202e}abc",
        "🙂",
        "\u{fffd}",
        "\t",
        "\r\n",
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<|im_start|>user\nhi<|im_end|>",
        "{{",
        "{% if %}",
        "{{ messages }}",
        "<think>",
        "</think>",
        "..",
        "/",
        "a/b",
        "a:b",
        "a:b:c",
        ":",
        "%s%n",
        "0",
    ];
    match rng.random_range(0..10) {
        0 => "a".repeat([255, 256, 4096, 65537][rng.random_range(0..4)]),
        1 => "é".repeat(rng.random_range(1..2000)),
        2 => "word ".repeat(rng.random_range(1..3000)),
        _ => FIXED[rng.random_range(0..FIXED.len())].to_string(),
    }
}

/// `s` as the inside of a JSON string literal.
pub fn json_escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
    quoted[1..quoted.len() - 1].to_string()
}

/// A JSON value of some type.
pub fn json_value(rng: &mut ChaCha8Rng) -> String {
    const FIXED: [&str; 16] = [
        "\"x\"",
        "\"\"",
        "0",
        "-1",
        "1e308",
        "[]",
        "[0]",
        "[\"a\",1,null]",
        "{}",
        "{\"a\":1}",
        "null",
        "true",
        "false",
        "\"NaN\"",
        "[[]]",
        "{\"\":{}}",
    ];
    match rng.random_range(0..6) {
        0 => NUMBER_TEXTS[rng.random_range(0..NUMBER_TEXTS.len())].to_string(),
        1 => format!("\"{}\"", json_escape(&odd_string(rng))),
        _ => FIXED[rng.random_range(0..FIXED.len())].to_string(),
    }
}

/// A YAML value of some type (flow style, so that it fits on the rest of a line).
pub fn yaml_value(rng: &mut ChaCha8Rng) -> String {
    const FIXED: [&str; 26] = [
        "x",
        "''",
        "\"\"",
        "0",
        "-1",
        "[]",
        "[a, 1]",
        "[[]]",
        "{}",
        "{a: 1}",
        "{x: [1, {y: z}]}",
        "null",
        "~",
        "true",
        "no",
        "!!binary aGk=",
        "!!str 1",
        "!!int x",
        "!tag x",
        "&a x",
        "*a",
        "&a [1, 2]",
        "? x",
        "|",
        "\"\\u0000\"",
        "'it''s'",
    ];
    match rng.random_range(0..6) {
        0 => NUMBER_TEXTS[rng.random_range(0..NUMBER_TEXTS.len())].to_string(),
        1 => format!("\"{}\"", json_escape(&odd_string(rng))),
        _ => FIXED[rng.random_range(0..FIXED.len())].to_string(),
    }
}
