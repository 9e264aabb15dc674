//! An episode's fingerprint: the name the rating key uses for it, so that the ratings join with the
//! logs however the log files are later named, moved or concatenated.
//!
//! It is the 64-bit FNV-1a hash of the record as JSON (`serde_json` writes a record's fields in
//! their declared order, and floats in their shortest exact form, so reading a line and writing it
//! again gives the same text and the same fingerprint on every platform).

use crate::episode::EpisodeRecord;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over `bytes`, continuing from `hash` (start with [`FNV_OFFSET`] via [`hash_bytes`]).
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The 64-bit FNV-1a hash of `bytes`.
pub(super) fn hash_bytes(bytes: &[u8]) -> u64 {
    fnv1a(FNV_OFFSET, bytes)
}

/// The record's fingerprint as 16 lower-case hex digits.
pub fn fingerprint(record: &EpisodeRecord) -> String {
    // Serializing plain structs of strings and numbers cannot fail.
    let json = serde_json::to_string(record).expect("episode as JSON");
    format!("{:016x}", hash_bytes(json.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_values() {
        // The FNV reference test vectors for FNV-1a 64.
        assert_eq!(hash_bytes(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash_bytes(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash_bytes(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
