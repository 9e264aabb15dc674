//! Axis ranges with "nice" tick marks (1, 2 or 5 times a power of ten), so a chart's axis always
//! covers its data and reads at a glance. The algorithm is Heckbert's "Nice numbers for graph
//! labels" (Graphics Gems, 1990), loose labelling: the first tick is at or below the smallest value
//! and the last at or above the largest.

/// A numeric axis: its range and tick positions, in data units.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Lower end of the axis (the first tick).
    pub min: f64,
    /// Upper end of the axis (the last tick).
    pub max: f64,
    /// Distance between ticks.
    pub step: f64,
    /// Tick positions from `min` to `max`, inclusive.
    pub ticks: Vec<f64>,
}

impl Axis {
    /// An axis covering `[lo, hi]` with about `target` ticks (at least 2). Non-finite bounds fall
    /// back to `[0, 1]`; an empty range is widened so the axis still has length.
    pub fn fit(lo: f64, hi: f64, target: usize) -> Axis {
        let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
            (lo.min(hi), lo.max(hi))
        } else {
            (0.0, 1.0)
        };
        if hi - lo < 1e-12 {
            let pad = if lo.abs() > 1e-12 {
                lo.abs() * 0.1
            } else {
                1.0
            };
            lo -= pad;
            hi += pad;
        }
        let target = target.max(2);
        let range = nice_num(hi - lo, false);
        let step = nice_num(range / (target - 1) as f64, true);
        let min = (lo / step).floor() * step;
        let max = (hi / step).ceil() * step;
        let count = ((max - min) / step).round() as usize;
        let ticks = (0..=count).map(|i| clean(min + i as f64 * step)).collect();
        Axis {
            min: clean(min),
            max: clean(max),
            step,
            ticks,
        }
    }

    /// Maps a data value to a pixel position: `min` goes to `p0`, `max` to `p1`.
    pub fn map(&self, v: f64, p0: f64, p1: f64) -> f64 {
        let span = self.max - self.min;
        if span <= 0.0 {
            return p0;
        }
        p0 + (v - self.min) / span * (p1 - p0)
    }

    /// A tick label with just enough decimals for the step (`0.25` -> 2 decimals, `5` -> none).
    pub fn label(&self, v: f64) -> String {
        let decimals = if self.step >= 1.0 {
            0
        } else {
            (-self.step.log10().floor()) as usize
        };
        let s = format!("{:.*}", decimals.min(6), v);
        if s.trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            s.trim_start_matches('-').to_string()
        } else {
            s
        }
    }
}

/// Heckbert's nice number: the 1, 2, 5 or 10 times a power of ten nearest to `x` (`round`) or the
/// smallest such number not below `x`.
fn nice_num(x: f64, round: bool) -> f64 {
    let exp = x.log10().floor();
    let base = 10f64.powf(exp);
    let f = x / base;
    let nf = if round {
        if f < 1.5 {
            1.0
        } else if f < 3.0 {
            2.0
        } else if f < 7.0 {
            5.0
        } else {
            10.0
        }
    } else if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nf * base
}

/// Removes float noise such as 0.30000000000000004 (rounds to 12 significant decimals).
fn clean(v: f64) -> f64 {
    let r = (v * 1e12).round() / 1e12;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_interval_gets_fifth_ticks() {
        // range 1 -> nice 1; 1/4 = 0.25 rounds to 0.2; ticks 0, 0.2, ..., 1.
        let a = Axis::fit(0.0, 1.0, 5);
        assert_eq!(a.step, 0.2);
        assert_eq!(a.ticks, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(a.label(0.4), "0.4");
    }

    #[test]
    fn axis_covers_the_data() {
        for &(lo, hi) in &[
            (0.13, 0.87),
            (-3.2, 17.9),
            (1234.0, 1299.0),
            (-0.004, -0.001),
            (5.0, 5.0),
        ] {
            let a = Axis::fit(lo, hi, 6);
            assert!(a.min <= lo && a.max >= hi, "{lo}..{hi} -> {a:?}");
            assert!(a.ticks.len() >= 2 && a.ticks.len() <= 12, "{a:?}");
            assert_eq!(a.ticks.first(), Some(&a.min));
            assert_eq!(a.ticks.last(), Some(&a.max));
        }
    }

    #[test]
    fn steps_of_ten_for_a_hundred_range() {
        // 0..97: range nice(97) = 100; 100/5 = 20 rounds to 20; ticks 0..100 by 20.
        let a = Axis::fit(0.0, 97.0, 6);
        assert_eq!((a.min, a.max, a.step), (0.0, 100.0, 20.0));
        assert_eq!(a.label(40.0), "40");
    }

    #[test]
    fn map_is_linear_and_flips_for_screen_y() {
        let a = Axis::fit(0.0, 1.0, 5);
        assert_eq!(a.map(0.5, 300.0, 100.0), 200.0);
        assert_eq!(a.map(0.0, 300.0, 100.0), 300.0);
    }

    #[test]
    fn non_finite_bounds_fall_back() {
        let a = Axis::fit(f64::NAN, 3.0, 5);
        assert_eq!((a.min, a.max), (0.0, 1.0));
    }
}
