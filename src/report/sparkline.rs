//! One-line curves of block characters, for a terminal: an emotion trajectory, a reward curve.

/// The eight heights, lowest first.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One character per value on the fixed range `lo..=hi`: `lo` is the lowest bar, `hi` the
/// highest, values between round to the nearest of the eight heights, values outside are
/// clamped.
pub fn sparkline_in(values: &[f64], lo: f64, hi: f64) -> String {
    let span = hi - lo;
    values
        .iter()
        .map(|&v| {
            let t = if span > 0.0 {
                ((v - lo) / span).clamp(0.0, 1.0)
            } else {
                0.5
            };
            BARS[(t * 7.0).round() as usize]
        })
        .collect()
}

/// One character per value on the values' own range (lowest value lowest bar, highest value
/// highest bar); a flat series sits on the middle bar. Non-finite values are left out of the
/// range and drawn as a space.
pub fn sparkline(values: &[f64]) -> String {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|&v| match v.is_finite() {
            true => sparkline_in(&[v], lo, hi),
            false => " ".to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_range_rounds_to_the_nearest_bar() {
        // 0 -> 0/7, 50 -> 3.5 rounds up to bar 4, 100 -> 7; below and above clamp.
        assert_eq!(
            sparkline_in(&[0.0, 50.0, 100.0, -5.0, 120.0], 0.0, 100.0),
            "▁▅█▁█"
        );
        // 14.2 / 100 * 7 = 0.994 -> bar 1; 7.1 -> 0.497 -> bar 0.
        assert_eq!(sparkline_in(&[14.2, 7.1], 0.0, 100.0), "▂▁");
    }

    #[test]
    fn own_range_spans_min_to_max_and_flat_sits_in_the_middle() {
        // 0.25 .. 0.75: 0.5 is halfway (3.5 -> bar 4), 0.375 a quarter (1.75 -> bar 2).
        assert_eq!(sparkline(&[0.25, 0.5, 0.75, 0.375]), "▁▅█▃");
        assert_eq!(sparkline(&[0.2, 0.2]), "▅▅");
        assert_eq!(sparkline(&[0.0, f64::NAN, 1.0]), "▁ █");
        assert_eq!(sparkline(&[]), "");
    }
}
