//! Byte-level mutations: bit flips, interesting bytes, inserted, deleted and duplicated ranges,
//! little-endian integers overwritten with boundary values or nudged, and splices with another
//! input. A "hot" range (a file's header) gets most of the positions, so that a large payload
//! does not absorb them.

use std::ops::Range;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::values::boundary_int;

/// Bytes that often mean something: zero, the sign bits, all ones, space, newline, quotes,
/// brackets and separators of the text formats.
const INTERESTING: [u8; 16] = [
    0, 0xff, 0x7f, 0x80, 0x01, 0xfe, b' ', b'\n', b'"', b'\'', b'{', b'}', b'[', b']', b':', b',',
];

/// A position in `0..len` (or `0..=len` with `end_ok`), most often inside `hot`.
fn position(rng: &mut ChaCha8Rng, len: usize, hot: &Option<Range<usize>>, end_ok: bool) -> usize {
    let limit = if end_ok { len + 1 } else { len };
    if limit == 0 {
        return 0;
    }
    if let Some(h) = hot.as_ref().filter(|h| h.start < h.end && h.end <= limit) {
        if rng.random_bool(0.8) {
            return rng.random_range(h.clone());
        }
    }
    rng.random_range(0..limit)
}

/// A run length, mostly short.
fn run_len(rng: &mut ChaCha8Rng, max: usize) -> usize {
    if max == 0 {
        return 0;
    }
    let cap = if rng.random_bool(0.8) { 16 } else { 4096 };
    rng.random_range(1..=max.min(cap))
}

/// One byte-level mutation of `data` (`other` is another input to splice from); the result is
/// cut to `max_len`.
pub fn mutate(
    data: &mut Vec<u8>,
    other: &[u8],
    hot: &Option<Range<usize>>,
    rng: &mut ChaCha8Rng,
    max_len: usize,
) {
    if data.is_empty() {
        data.extend_from_slice(&other[..other.len().min(64)]);
        if data.is_empty() {
            data.push(INTERESTING[rng.random_range(0..INTERESTING.len())]);
        }
        return;
    }
    match rng.random_range(0..11) {
        0 => {
            let p = position(rng, data.len(), hot, false);
            data[p] ^= 1 << rng.random_range(0..8);
        }
        1 => {
            let p = position(rng, data.len(), hot, false);
            data[p] = INTERESTING[rng.random_range(0..INTERESTING.len())];
        }
        2 => {
            let p = position(rng, data.len(), hot, false);
            data[p] = rng.random();
        }
        3 => {
            let p = position(rng, data.len(), hot, true);
            let n = run_len(rng, 64);
            let bytes: Vec<u8> = if rng.random_bool(0.5) {
                vec![INTERESTING[rng.random_range(0..INTERESTING.len())]; n]
            } else {
                (0..n).map(|_| rng.random()).collect()
            };
            data.splice(p..p, bytes);
        }
        4 => {
            let p = position(rng, data.len(), hot, false);
            let n = run_len(rng, data.len() - p);
            data.drain(p..p + n);
        }
        5 => {
            let p = position(rng, data.len(), hot, false);
            let n = run_len(rng, data.len() - p);
            let chunk = data[p..p + n].to_vec();
            let at = position(rng, data.len(), hot, true);
            data.splice(at..at, chunk);
        }
        6 | 7 => {
            let width = [1usize, 2, 4, 8][rng.random_range(0..4)];
            if data.len() >= width {
                let p = position(rng, data.len() - width + 1, hot, false);
                write_int(data, p, width, boundary_int(rng));
            }
        }
        8 => {
            let width = [1usize, 2, 4, 8][rng.random_range(0..4)];
            if data.len() >= width {
                let p = position(rng, data.len() - width + 1, hot, false);
                let old = read_int(data, p, width);
                let delta = rng.random_range(1..=32u64);
                let new = if rng.random_bool(0.5) {
                    old.wrapping_add(delta)
                } else {
                    old.wrapping_sub(delta)
                };
                write_int(data, p, width, new);
            }
        }
        9 if !other.is_empty() => {
            let a = position(rng, data.len(), hot, true);
            let b = rng.random_range(0..other.len());
            data.truncate(a);
            data.extend_from_slice(&other[b..]);
        }
        _ if !other.is_empty() => {
            let b = rng.random_range(0..other.len());
            let n = run_len(rng, other.len() - b);
            let p = position(rng, data.len(), hot, true);
            let end = (p + n).min(data.len());
            data.splice(p..end, other[b..b + n].iter().copied());
        }
        _ => data.truncate(position(rng, data.len(), hot, false)),
    }
    data.truncate(max_len);
}

/// Writes the low `width` bytes of `v` little-endian at `p`.
pub fn write_int(data: &mut [u8], p: usize, width: usize, v: u64) {
    data[p..p + width].copy_from_slice(&v.to_le_bytes()[..width]);
}

/// Reads a `width`-byte little-endian integer at `p`.
pub fn read_int(data: &[u8], p: usize, width: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(&data[p..p + width]);
    u64::from_le_bytes(b)
}
