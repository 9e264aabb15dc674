//! Report writers shared by the trainer and the evaluations: dependency-free SVG charts (line and
//! grouped bar) and tables rendered as markdown and CSV (docs/DESIGN.md section 16).

pub mod axis;
pub mod bar_chart;
pub mod line_chart;
pub mod sparkline;
pub mod stats;
pub mod svg;
pub mod table;

pub use axis::Axis;
pub use bar_chart::{BarChart, BarSeries};
pub use line_chart::{LineChart, Series};
pub use table::{markdown_cell, Table};
