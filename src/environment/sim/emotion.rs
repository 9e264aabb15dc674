//! The user's emotion state: an integer in [0, 100], moved by quantized, clamped steps, read as
//! RLVER's buckets (S >= 100, A >= 70, B >= 40, C >= 10, F < 10).

use serde::{Deserialize, Serialize};

/// RLVER's emotion buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Bucket {
    /// Below 10: the user gives up and leaves.
    F,
    /// 10 to 39: hurt, guarded.
    C,
    /// 40 to 69: engaged but unsure.
    B,
    /// 70 to 99: opening up.
    A,
    /// 100: the user feels resolved.
    S,
}

impl Bucket {
    /// The bucket of an emotion value.
    pub fn of(emotion: u8) -> Bucket {
        match emotion {
            100.. => Bucket::S,
            70..=99 => Bucket::A,
            40..=69 => Bucket::B,
            10..=39 => Bucket::C,
            _ => Bucket::F,
        }
    }
}

/// Turns a raw appraisal in points into the applied change: rounded to the nearest multiple of
/// `quantum` (halves away from zero) and clamped to `[-cap, +cap]`.
///
/// `quantize_delta(7.4, 5, 10) == 5`, `quantize_delta(7.5, 5, 10) == 10`,
/// `quantize_delta(-23.0, 5, 10) == -10`.
pub fn quantize_delta(raw: f64, quantum: u8, cap: u8) -> i32 {
    if !raw.is_finite() {
        return 0;
    }
    let q = f64::from(quantum.max(1));
    let steps = (raw / q).round();
    let delta = (steps * q) as i32;
    delta.clamp(-i32::from(cap), i32::from(cap))
}

/// The change an appraisal applies to `emotion`: an unsafe reply takes it to the floor at once,
/// past the step cap; any other reply moves it by its raw points quantized and clamped.
pub fn applied_delta(emotion: u8, raw: f64, is_unsafe: bool, quantum: u8, cap: u8) -> i32 {
    if is_unsafe {
        -i32::from(emotion)
    } else {
        quantize_delta(raw, quantum, cap)
    }
}

/// Applies a change to an emotion, saturating at 0 and 100.
pub fn apply_delta(emotion: u8, delta: i32) -> u8 {
    (i32::from(emotion) + delta).clamp(0, 100) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_rlver_thresholds() {
        assert_eq!(Bucket::of(100), Bucket::S);
        assert_eq!(Bucket::of(99), Bucket::A);
        assert_eq!(Bucket::of(70), Bucket::A);
        assert_eq!(Bucket::of(69), Bucket::B);
        assert_eq!(Bucket::of(40), Bucket::B);
        assert_eq!(Bucket::of(39), Bucket::C);
        assert_eq!(Bucket::of(10), Bucket::C);
        assert_eq!(Bucket::of(9), Bucket::F);
        assert_eq!(Bucket::of(0), Bucket::F);
    }

    #[test]
    fn deltas_are_quantized_and_clamped() {
        assert_eq!(quantize_delta(7.4, 5, 10), 5); // 7.4/5 = 1.48 -> 1 step
        assert_eq!(quantize_delta(7.5, 5, 10), 10); // 1.5 -> 2 steps
        assert_eq!(quantize_delta(-2.4, 5, 10), 0); // -0.48 -> 0
        assert_eq!(quantize_delta(-2.5, 5, 10), -5); // -0.5 -> -1 step (away from zero)
        assert_eq!(quantize_delta(-23.0, 5, 10), -10); // clamped
        assert_eq!(quantize_delta(14.0, 2, 20), 14);
        assert_eq!(quantize_delta(f64::NAN, 5, 10), 0);
    }

    #[test]
    fn emotion_saturates() {
        assert_eq!(apply_delta(95, 10), 100);
        assert_eq!(apply_delta(5, -10), 0);
        assert_eq!(apply_delta(40, -5), 35);
    }
}
