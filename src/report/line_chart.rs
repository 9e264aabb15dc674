//! Line charts: several named series over a numeric x (a training step, a turn), drawn with ticks,
//! axis labels and a legend. The trainer uses it for reward and KL curves, evaluations for emotion
//! trajectories.
//!
//! ```
//! use empathy_gym::report::{LineChart, Series};
//! let chart = LineChart {
//!     title: "Reward".into(),
//!     x_label: "step".into(),
//!     y_label: "mean reward".into(),
//!     series: vec![Series::new("run A", vec![(0.0, 0.1), (1.0, 0.3), (2.0, 0.4)])],
//!     ..LineChart::default()
//! };
//! assert!(chart.to_svg().starts_with("<?xml"));
//! ```

use super::axis::Axis;
use super::svg::{color, Anchor, Svg};

/// One named line of (x, y) points, drawn in the given order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Data points; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
    /// An optional shaded band `(x, low, high)` drawn under the line in its colour (e.g. the spread
    /// across seeds); empty for none.
    pub band: Vec<(f64, f64, f64)>,
}

impl Series {
    /// A series from a name and its points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            band: Vec::new(),
        }
    }

    /// The same series with a shaded band `(x, low, high)` under it.
    pub fn with_band(mut self, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = band;
        self
    }

    /// The band as a closed outline: the low edge left to right, then the high edge back.
    fn band_outline(&self) -> Vec<(f64, f64)> {
        let finite: Vec<_> = self
            .band
            .iter()
            .filter(|(x, lo, hi)| x.is_finite() && lo.is_finite() && hi.is_finite())
            .collect();
        let low = finite.iter().map(|&&(x, lo, _)| (x, lo));
        let high = finite.iter().rev().map(|&&(x, _, hi)| (x, hi));
        low.chain(high).collect()
    }
}

/// A line chart with a title, axis labels and a legend on the right.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label left of the y axis (rotated).
    pub y_label: String,
    /// The lines, one colour each (see [`super::svg::PALETTE`]).
    pub series: Vec<Series>,
    /// A y range the axis must include besides the data, e.g. `Some((0.0, 1.0))` for rates.
    pub y_range: Option<(f64, f64)>,
    /// Canvas width in px (default 720).
    pub width: f64,
    /// Canvas height in px (default 420).
    pub height: f64,
}

impl Default for LineChart {
    fn default() -> Self {
        LineChart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            series: Vec::new(),
            y_range: None,
            width: 720.0,
            height: 420.0,
        }
    }
}

/// Pixel box of the plotting area.
#[derive(Clone)]
pub(crate) struct Frame {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl LineChart {
    /// The x and y axes the chart will draw: they cover every finite point (and `y_range`).
    pub fn axes(&self) -> (Axis, Axis) {
        let finite = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().copied().chain(s.band_outline()))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
        for (x, y) in finite() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if let Some((lo, hi)) = self.y_range {
            y0 = y0.min(lo);
            y1 = y1.max(hi);
        }
        (Axis::fit(x0, x1, 7), Axis::fit(y0, y1, 6))
    }

    /// Renders the chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let legend_w = legend_width(self.series.iter().map(|s| s.name.as_str()));
        let frame = Frame {
            left: 72.0,
            right: self.width - legend_w - 16.0,
            top: 44.0,
            bottom: self.height - 56.0,
        };
        let (xa, ya) = self.axes();
        let mut svg = Svg::new(self.width, self.height);
        draw_title_and_labels(
            &mut svg,
            &frame,
            &self.title,
            &self.x_label,
            &self.y_label,
            self.width,
        );
        draw_y_grid(&mut svg, &frame, &ya);
        for &t in &xa.ticks {
            let x = xa.map(t, frame.left, frame.right);
            svg.line(x, frame.bottom, x, frame.bottom + 5.0, "#333333", 1.0, None);
            svg.text(
                x,
                frame.bottom + 19.0,
                &xa.label(t),
                12.0,
                Anchor::Middle,
                0.0,
                false,
            );
        }
        for (i, s) in self.series.iter().enumerate() {
            let outline: Vec<(f64, f64)> = s
                .band_outline()
                .into_iter()
                .map(|(x, y)| {
                    (
                        xa.map(x, frame.left, frame.right),
                        ya.map(y, frame.bottom, frame.top),
                    )
                })
                .collect();
            if outline.len() >= 4 {
                svg.polygon(&outline, color(i), 0.18);
            }
        }
        for (i, s) in self.series.iter().enumerate() {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|&(x, y)| {
                    (
                        xa.map(x, frame.left, frame.right),
                        ya.map(y, frame.bottom, frame.top),
                    )
                })
                .collect();
            if pts.len() >= 2 {
                svg.polyline(&pts, color(i), 2.0);
            }
            if pts.len() <= 60 {
                for &(x, y) in &pts {
                    svg.circle(x, y, 3.0, color(i));
                }
            }
        }
        draw_axes_box(&mut svg, &frame);
        let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        draw_legend(&mut svg, frame.right + 16.0, frame.top, &names, false);
        svg.finish()
    }
}

/// Estimated legend width for 12 px text (about 7 px per character), between 80 and 220 px.
pub(crate) fn legend_width<'a>(names: impl Iterator<Item = &'a str>) -> f64 {
    let longest = names.map(|n| n.chars().count()).max().unwrap_or(0) as f64;
    (longest * 7.0 + 34.0).clamp(80.0, 220.0)
}

/// Title centred on the canvas, x label under the frame, y label rotated left of it.
pub(crate) fn draw_title_and_labels(
    svg: &mut Svg,
    f: &Frame,
    title: &str,
    x: &str,
    y: &str,
    width: f64,
) {
    svg.text(width / 2.0, 26.0, title, 16.0, Anchor::Middle, 0.0, true);
    svg.text(
        (f.left + f.right) / 2.0,
        f.bottom + 42.0,
        x,
        13.0,
        Anchor::Middle,
        0.0,
        false,
    );
    let cy = (f.top + f.bottom) / 2.0;
    svg.text(20.0, cy, y, 13.0, Anchor::Middle, -90.0, false);
}

/// Horizontal grid lines and labels at the y ticks.
pub(crate) fn draw_y_grid(svg: &mut Svg, f: &Frame, ya: &Axis) {
    for &t in &ya.ticks {
        let y = ya.map(t, f.bottom, f.top);
        svg.line(f.left, y, f.right, y, "#e3e3e3", 1.0, None);
        svg.line(f.left - 5.0, y, f.left, y, "#333333", 1.0, None);
        svg.text(
            f.left - 8.0,
            y + 4.0,
            &ya.label(t),
            12.0,
            Anchor::End,
            0.0,
            false,
        );
    }
}

/// The left and bottom axis lines.
pub(crate) fn draw_axes_box(svg: &mut Svg, f: &Frame) {
    svg.line(f.left, f.top, f.left, f.bottom, "#333333", 1.0, None);
    svg.line(f.left, f.bottom, f.right, f.bottom, "#333333", 1.0, None);
}

/// A legend: a colour key (a line, or a square for bars) and the name, one entry per row.
pub(crate) fn draw_legend(svg: &mut Svg, x: f64, y: f64, names: &[&str], squares: bool) {
    for (i, name) in names.iter().enumerate() {
        let cy = y + 8.0 + i as f64 * 20.0;
        if squares {
            svg.rect(x, cy - 6.0, 12.0, 12.0, color(i), None);
        } else {
            svg.line(x, cy, x + 18.0, cy, color(i), 2.5, None);
        }
        svg.text(x + 24.0, cy + 4.0, name, 12.0, Anchor::Start, 0.0, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::svg::check_xml;

    fn chart() -> LineChart {
        LineChart {
            title: "Reward & <KL>".into(),
            x_label: "step".into(),
            y_label: "value".into(),
            series: vec![
                Series::new("reward", vec![(0.0, 0.12), (10.0, 0.35), (20.0, 0.61)]),
                Series::new("kl", vec![(0.0, -0.02), (10.0, 0.04), (25.0, f64::NAN)]),
            ],
            ..LineChart::default()
        }
    }

    #[test]
    fn svg_is_well_formed_and_escapes_the_title() {
        let svg = chart().to_svg();
        check_xml(&svg).unwrap();
        assert!(svg.contains("Reward &amp; &lt;KL&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        // 3 + 2 finite points get markers.
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains(">reward</text>") && svg.contains(">kl</text>"));
    }

    #[test]
    fn axes_include_all_finite_data_and_the_requested_range() {
        let mut c = chart();
        let (xa, ya) = c.axes();
        assert!(xa.min <= 0.0 && xa.max >= 20.0);
        assert!(ya.min <= -0.02 && ya.max >= 0.61);
        c.y_range = Some((0.0, 1.0));
        let (_, ya) = c.axes();
        assert!(ya.min <= -0.02 && ya.max >= 1.0);
    }

    #[test]
    fn empty_chart_still_renders() {
        let svg = LineChart::default().to_svg();
        check_xml(&svg).unwrap();
        assert!(!svg.contains("<polyline"));
    }

    #[test]
    fn a_band_is_one_polygon_under_its_line_and_widens_the_axis() {
        let mut c = chart();
        c.series[0] = c.series[0].clone().with_band(vec![
            (0.0, 0.1, 0.2),
            (10.0, 0.3, 0.4),
            (20.0, 0.5, 0.9),
        ]);
        let svg = c.to_svg();
        check_xml(&svg).unwrap();
        assert_eq!(svg.matches("<polygon").count(), 1);
        // Painted before the lines, so the lines stay on top.
        assert!(svg.find("<polygon").unwrap() < svg.find("<polyline").unwrap());
        // Outline: 3 low points then 3 high points back.
        assert_eq!(c.series[0].band_outline().len(), 6);
        assert_eq!(c.series[0].band_outline()[3], (20.0, 0.9));
        assert!(c.axes().1.max >= 0.9);
    }
}
