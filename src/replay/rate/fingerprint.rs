//! An episode's fingerprint: the name the rating key uses for it, so that the ratings join with the
//! logs however the log files are later named, moved or concatenated.
//!
//! It is the 64-bit FNV-1a hash of the record as JSON (`serde_json` writes a record's fields in
//! their declared order, and floats in their shortest exact form, so reading a line and writing it
//! again gives the same text and the same fingerprint on every platform).

use crate::environment::episode::EpisodeRecord;

/// The record's fingerprint as 16 lower-case hex digits.
pub fn fingerprint(record: &EpisodeRecord) -> String {
    // Serializing plain structs of strings and numbers cannot fail.
    let json = serde_json::to_string(record).expect("episode as JSON");
    format!("{:016x}", crate::seed::fnv1a64(json.as_bytes()))
}
