//! Grouped bar charts: one group of bars per category (an evaluation condition), one bar per
//! series (a model) in each group. The factual evaluation draws error rates per condition with it.

use super::axis::Axis;
use super::line_chart::{
    draw_axes_box, draw_legend, draw_title_and_labels, draw_y_grid, legend_width, Frame,
};
use super::svg::{color, Anchor, Svg};

/// One named set of bar heights, aligned with [`BarChart::categories`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarSeries {
    /// Legend entry.
    pub name: String,
    /// One value per category; a missing or non-finite value draws no bar.
    pub values: Vec<f64>,
}

impl BarSeries {
    /// A series from a name and its values.
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        BarSeries {
            name: name.into(),
            values,
        }
    }
}

/// A grouped bar chart. The y axis always includes 0, the base of every bar.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Label under the category names.
    pub x_label: String,
    /// Label left of the y axis (rotated).
    pub y_label: String,
    /// Category names, left to right.
    pub categories: Vec<String>,
    /// The series; series `i` is bar `i` of every group.
    pub series: Vec<BarSeries>,
    /// A y range the axis must include besides the data and 0, e.g. `Some((0.0, 1.0))`.
    pub y_range: Option<(f64, f64)>,
    /// Canvas width in px; 0 (the default) sizes it from the number of bars.
    pub width: f64,
    /// Canvas height of the plot part in px; 0 (the default) means 420. Rotated category labels
    /// add to it.
    pub height: f64,
}

impl BarChart {
    /// The y axis the chart will draw: it covers 0, every finite value and `y_range`.
    pub fn y_axis(&self) -> Axis {
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for v in self
            .series
            .iter()
            .flat_map(|s| s.values.iter())
            .filter(|v| v.is_finite())
        {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
        if let Some((a, b)) = self.y_range {
            lo = lo.min(a);
            hi = hi.max(b);
        }
        Axis::fit(lo, hi, 6)
    }

    /// Renders the chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let lay = self.layout();
        let f = &lay.frame;
        let ya = self.y_axis();
        let mut svg = Svg::new(lay.width, lay.height);
        // The x label goes under the category labels, however tall they are.
        let under_labels = Frame {
            bottom: f.bottom + lay.label_h - 6.0,
            ..f.clone()
        };
        draw_title_and_labels(
            &mut svg,
            &under_labels,
            &self.title,
            &self.x_label,
            "",
            lay.width,
        );
        let cy = (f.top + f.bottom) / 2.0;
        svg.text(
            f.left - 52.0,
            cy,
            &self.y_label,
            13.0,
            Anchor::Middle,
            -90.0,
            false,
        );
        draw_y_grid(&mut svg, f, &ya);
        self.draw_bars(&mut svg, &lay, &ya);
        draw_axes_box(&mut svg, f);
        let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        draw_legend(&mut svg, f.right + 16.0, f.top, &names, true);
        svg.finish()
    }

    /// Canvas size, plot frame, slot width per category and whether labels must be rotated.
    fn layout(&self) -> Layout {
        let n_cat = self.categories.len().max(1) as f64;
        let n_ser = self.series.len().max(1) as f64;
        let legend_w = legend_width(self.series.iter().map(|s| s.name.as_str()));
        let plot_w = (n_cat * (n_ser * 14.0 + 14.0).max(36.0)).max(360.0);
        let plot_h = if self.height > 0.0 {
            self.height
        } else {
            420.0
        } - 100.0;
        let chars = |c: &String| c.chars().count() as f64;
        let longest = self.categories.iter().map(chars).fold(0.0, f64::max);
        let first = self.categories.first().map_or(0.0, chars);
        // About 7 px per character at 12 px. A rotated label ends under its slot's centre and
        // reaches left cos(40) = 0.77 of its length: the frame moves right so the first one
        // stays on the canvas.
        let fixed = self.width > 0.0;
        let slot = if fixed {
            (self.width - legend_w - 32.0 - 72.0) / n_cat
        } else {
            plot_w / n_cat
        };
        let rotate = longest * 7.0 > slot - 4.0;
        let left = if rotate {
            (first * 7.0 * 0.77 - slot / 2.0 + 8.0).max(72.0)
        } else {
            72.0
        };
        let width = if fixed {
            self.width
        } else {
            left + plot_w + legend_w + 32.0
        };
        let frame = Frame {
            left,
            right: width - legend_w - 32.0,
            top: 44.0,
            bottom: 44.0 + plot_h,
        };
        let slot = (frame.right - frame.left) / n_cat;
        // Rotated by 40 degrees a label reaches down about sin(40) = 0.64 of its length.
        let label_h = if rotate {
            longest * 7.0 * 0.64 + 8.0
        } else {
            14.0
        };
        Layout {
            width,
            height: frame.bottom + label_h + 52.0,
            frame,
            slot,
            rotate,
            label_h,
        }
    }

    /// The bars of every category, then the category labels under them.
    fn draw_bars(&self, svg: &mut Svg, lay: &Layout, ya: &Axis) {
        let f = &lay.frame;
        let bar_w = ((lay.slot - 10.0) / self.series.len().max(1) as f64).max(1.0);
        let zero = ya.map(0.0, f.bottom, f.top);
        for (c, name) in self.categories.iter().enumerate() {
            let x0 = f.left + c as f64 * lay.slot + 5.0;
            for (s, series) in self.series.iter().enumerate() {
                let v = series.values.get(c).copied().unwrap_or(f64::NAN);
                if v.is_finite() {
                    let y = ya.map(v, f.bottom, f.top);
                    let x = x0 + s as f64 * bar_w;
                    svg.rect(
                        x,
                        y.min(zero),
                        bar_w - 1.0,
                        (y - zero).abs(),
                        color(s),
                        None,
                    );
                }
            }
            let cx = f.left + (c as f64 + 0.5) * lay.slot;
            if lay.rotate {
                svg.text(
                    cx + 4.0,
                    f.bottom + 14.0,
                    name,
                    12.0,
                    Anchor::End,
                    -40.0,
                    false,
                );
            } else {
                svg.text(cx, f.bottom + 18.0, name, 12.0, Anchor::Middle, 0.0, false);
            }
        }
    }
}

/// Where things go on the canvas.
struct Layout {
    width: f64,
    height: f64,
    frame: Frame,
    slot: f64,
    rotate: bool,
    label_h: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::svg::check_xml;

    fn chart() -> BarChart {
        BarChart {
            title: "Error rate".into(),
            x_label: "condition".into(),
            y_label: "error rate".into(),
            categories: vec!["plain".into(), "sad + wrong".into(), "a<b".into()],
            series: vec![
                BarSeries::new("base", vec![0.2, 0.35, 0.1]),
                BarSeries::new("warm & fuzzy", vec![0.3, f64::NAN, 0.15]),
            ],
            y_range: Some((0.0, 1.0)),
            ..BarChart::default()
        }
    }

    #[test]
    fn svg_is_well_formed_with_one_rect_per_finite_value() {
        let svg = chart().to_svg();
        check_xml(&svg).unwrap();
        // background + 5 finite bars + 2 legend squares
        assert_eq!(svg.matches("<rect").count(), 1 + 5 + 2);
        assert!(svg.contains(">a&lt;b</text>"));
        assert!(svg.contains(">warm &amp; fuzzy</text>"));
    }

    #[test]
    fn y_axis_includes_zero_negative_values_and_range() {
        let mut c = chart();
        let a = c.y_axis();
        assert!(a.min <= 0.0 && a.max >= 1.0);
        c.series[0].values[1] = -0.4;
        c.y_range = None;
        let a = c.y_axis();
        assert!(a.min <= -0.4 && a.max >= 0.35);
    }

    #[test]
    fn a_long_first_label_stays_on_the_canvas() {
        // 12 categories of 34 characters, 2 series: slots of 2 x 14 + 14 = 42 px, so the labels
        // are rotated and the first reaches 34 x 7 x 0.77 = 183 px left of its slot's centre,
        // more than the 72 px margin plus half a slot gives.
        let mut c = chart();
        c.categories = vec!["algorithm=grpo,difficulty=moderate".into(); 12];
        c.series.iter_mut().for_each(|s| s.values = vec![0.1; 12]);
        let lay = c.layout();
        assert!(lay.rotate);
        let reach = lay.frame.left + lay.slot / 2.0 + 4.0 - 34.0 * 7.0 * 0.77;
        assert!(reach >= 0.0, "{reach}");
        assert!((lay.frame.right - lay.frame.left - 12.0 * 42.0).abs() < 1e-9);
    }

    #[test]
    fn long_labels_are_rotated() {
        let mut c = chart();
        assert!(!c.to_svg().contains("rotate(-40"));
        c.categories[0] = "relation down + wrong belief".into();
        assert!(c.to_svg().contains("rotate(-40"));
    }
}
