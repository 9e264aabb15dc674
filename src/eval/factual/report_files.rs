//! Writes a [`FactualReport`] as CSV (one row per model and slice, every number), a markdown
//! summary (error rates and changes against the baseline; refusal, non-answer and agreement rates)
//! and an SVG
//! grouped bar chart of the error rate per condition and model. All numbers are printed with fixed
//! precision, so a report built from the same outcomes and seed is byte-identical.

use std::path::{Path, PathBuf};

use super::conditions::Condition;
use super::report::{FactualReport, Slice, SliceRow};
use crate::environment::qa::NonAnswers;
use crate::error::{Error, Result};
use crate::report::{BarChart, BarSeries, Table};

/// File names written by [`FactualReport::write`].
pub const CSV_FILE: &str = "factual.csv";
/// Markdown summary file name.
pub const MARKDOWN_FILE: &str = "factual.md";
/// Chart file name.
pub const CHART_FILE: &str = "factual_error_rate.svg";

impl FactualReport {
    /// Every row with every number: counts, rates (fractions, 6 decimals), the change against the
    /// baseline with its interval, McNemar's b, c and p-values. Empty cells where undefined.
    pub fn to_csv(&self) -> String {
        let mut t = Table::new([
            "model",
            "slice",
            "context",
            "belief",
            "n",
            "correct",
            "incorrect",
            "agrees_with_wrong",
            "refusal",
            "non_answer",
            "error_rate",
            "refusal_rate",
            "non_answer_rate",
            "agree_wrong_rate",
            "delta_error",
            "ci_low",
            "ci_high",
            "mcnemar_b",
            "mcnemar_c",
            "p_exact",
            "p_chi2",
        ]);
        for r in &self.rows {
            let (context, belief) = match r.slice {
                Slice::Condition(c) => (c.context.name(), c.belief.name()),
                Slice::Belief(b) => ("all", b.name()),
                Slice::Overall => ("all", "all"),
            };
            let c = r.counts;
            let mut cells = vec![
                r.model.clone(),
                r.slice.name(),
                context.to_string(),
                belief.to_string(),
                c.n.to_string(),
                c.correct.to_string(),
                c.incorrect.to_string(),
                c.agrees_with_wrong.to_string(),
                c.refusal.to_string(),
                c.non_answer.to_string(),
                f6(r.error_rate),
                f6(r.refusal_rate),
                f6(r.non_answer_rate),
                r.agree_rate.map(f6).unwrap_or_default(),
            ];
            match &r.vs_baseline {
                Some(d) => cells.extend([
                    f6(d.diff),
                    f6(d.ci_low),
                    f6(d.ci_high),
                    d.mcnemar.b.to_string(),
                    d.mcnemar.c.to_string(),
                    f6(d.mcnemar.p_exact),
                    f6(d.mcnemar.p_chi2),
                ]),
                None => cells.extend(std::iter::repeat_n(String::new(), 7)),
            }
            t.push_row(cells);
        }
        t.to_csv()
    }

    /// Markdown: a short explanation, the error-rate table with changes against the baseline, and
    /// the refusal / agreement table. Rates in percent, changes in percentage points.
    pub fn to_markdown(&self) -> String {
        let b = &self.bootstrap;
        let non_answers = match self.non_answers {
            NonAnswers::Apart => {
                "refusals (\"I don't know\") and non-answers (\"I'm unable to assist you\") are \
                 not errors and are reported apart"
            }
            NonAnswers::Errors => {
                "refusals (\"I don't know\") are not errors and are reported apart; non-answers \
                 (\"I'm unable to assist you\") count as incorrect (`--non-answers errors`, the \
                 scorer's original reading)"
            }
        };
        let mut out = format!(
            "# Factual reliability\n\n\
             Baseline: `{}`. Error = an incorrect answer or agreeing with the user's wrong belief, \
             over all prompts; {non_answers}. Delta = model minus \
             baseline in percentage points with a {:.0}% percentile bootstrap interval over QA items \
             (B = {}, seed {}); p = exact McNemar test on the same prompts (pooled rows treat \
             prompts as independent).\n\n## Error rate (%)\n\n",
            self.baseline,
            b.level * 100.0,
            b.resamples,
            b.seed
        );
        out.push_str(&self.error_table().to_markdown());
        out.push_str("\n## Refusals, non-answers and agreement with the wrong belief (%)\n\n");
        out.push_str(&self.behaviour_table().to_markdown());
        out
    }

    fn error_table(&self) -> Table {
        let others: Vec<&String> = self
            .models
            .iter()
            .filter(|m| **m != self.baseline)
            .collect();
        let mut headers = vec!["condition".to_string(), "n".to_string()];
        headers.extend(self.models.iter().cloned());
        for m in &others {
            headers.push(format!("{m} delta (95% CI)"));
            headers.push(format!("{m} p"));
        }
        let mut t = Table::new(headers);
        for slice in Slice::all() {
            let rows: Vec<&SliceRow> = self
                .models
                .iter()
                .filter_map(|m| self.row(m, slice))
                .collect();
            let n = rows.first().map(|r| r.counts.n).unwrap_or(0);
            let mut cells = vec![slice.label(), n.to_string()];
            cells.extend(rows.iter().map(|r| pct(r.error_rate)));
            for m in &others {
                match self.row(m, slice).and_then(|r| r.vs_baseline.as_ref()) {
                    Some(d) => {
                        cells.push(format!(
                            "{} [{}, {}]",
                            pp(d.diff),
                            pp(d.ci_low),
                            pp(d.ci_high)
                        ));
                        cells.push(p_value(d.mcnemar.p_exact));
                    }
                    None => cells.extend([String::new(), String::new()]),
                }
            }
            t.push_row(cells);
        }
        t
    }

    fn behaviour_table(&self) -> Table {
        let mut headers = vec!["condition".to_string()];
        for m in &self.models {
            headers.push(format!("{m} refusal"));
            headers.push(format!("{m} non-answer"));
            headers.push(format!("{m} agrees with wrong"));
        }
        let mut t = Table::new(headers);
        for slice in Slice::all() {
            let mut cells = vec![slice.label()];
            for m in &self.models {
                let r = self.row(m, slice);
                cells.push(r.map(|r| pct(r.refusal_rate)).unwrap_or_default());
                cells.push(r.map(|r| pct(r.non_answer_rate)).unwrap_or_default());
                cells.push(
                    r.and_then(|r| r.agree_rate)
                        .map(pct)
                        .unwrap_or_else(|| "-".into()),
                );
            }
            t.push_row(cells);
        }
        t
    }

    /// Grouped bars: the error rate of each model under each of the 18 conditions and overall.
    pub fn error_chart(&self) -> BarChart {
        let mut slices: Vec<Slice> = Condition::all().into_iter().map(Slice::Condition).collect();
        slices.push(Slice::Overall);
        BarChart {
            title: "Factual error rate by condition".into(),
            x_label: "context (+ wrong = the user states a wrong answer)".into(),
            y_label: "error rate".into(),
            categories: slices.iter().map(|s| s.label()).collect(),
            series: self
                .models
                .iter()
                .map(|m| {
                    let values = slices
                        .iter()
                        .map(|&s| self.row(m, s).map(|r| r.error_rate).unwrap_or(f64::NAN))
                        .collect();
                    BarSeries::new(m.clone(), values)
                })
                .collect(),
            ..BarChart::default()
        }
    }

    /// Writes `factual.csv`, `factual.md` and `factual_error_rate.svg` into `dir` (created if
    /// needed); returns the paths written.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let files = [
            (CSV_FILE, self.to_csv()),
            (MARKDOWN_FILE, self.to_markdown()),
            (CHART_FILE, self.error_chart().to_svg()),
        ];
        let mut paths = Vec::with_capacity(files.len());
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
            paths.push(path);
        }
        Ok(paths)
    }
}

/// Six decimals, never "-0.000000".
fn f6(x: f64) -> String {
    no_negative_zero(format!("{x:.6}"))
}

/// A rate in percent with one decimal.
fn pct(x: f64) -> String {
    no_negative_zero(format!("{:.1}", x * 100.0))
}

/// A change in percentage points with a sign and one decimal (`+7.4`, `-0.3`, `+0.0`).
fn pp(x: f64) -> String {
    let s = format!("{:+.1}", x * 100.0);
    if s == "-0.0" {
        "+0.0".to_string()
    } else {
        s
    }
}

/// A p-value with three decimals, or `<0.001`.
fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

fn no_negative_zero(s: String) -> String {
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(f6(-0.0000001), "0.000000");
        assert_eq!(f6(0.125), "0.125000");
        assert_eq!(pct(0.074), "7.4");
        assert_eq!(pct(0.5), "50.0");
        assert_eq!(pp(-0.0001), "+0.0");
        assert_eq!(pp(0.074), "+7.4");
        assert_eq!(p_value(0.0004), "<0.001");
        assert_eq!(p_value(0.125), "0.125");
    }
}
