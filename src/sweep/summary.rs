//! What `sweep collect` writes: `summary.csv` (one row per cell), `summary.md` (mean ± std and
//! 95% t-intervals across seeds per combination of the axes, and per axis value) and the plots
//! (training reward per axis value with a band across cells, per combination with a band across
//! seeds, held-out score per cell).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cell::fragment;
use super::collect::{BaseResult, CellResult};
use super::grid::show;
use super::seed_stats::{spread, Spread};
use super::spec::Sweep;
use crate::error::{Error, Result};
use crate::report::{BarChart, BarSeries, LineChart, Series, Table};

/// One row per cell.
pub const SUMMARY_CSV: &str = "summary.csv";
/// The readable summary.
pub const SUMMARY_MD: &str = "summary.md";
/// Held-out score per cell.
pub const SAGE_SVG: &str = "sage-by-cell.svg";

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// `summary.csv`: cell, index, one column per axis (its dotted key), seed, status, steps,
/// final_reward, sage_score, sage_success, sage_failure, factual_error, factual_change and its
/// interval, wall_s (last, so rows compare without timings).
pub fn summary_table(sweep: &Sweep, results: &[CellResult]) -> Table {
    let mut headers = vec!["cell".to_string(), "index".to_string()];
    headers.extend(sweep.axes.iter().map(|a| a.key.clone()));
    headers.extend(
        [
            "seed",
            "status",
            "steps",
            "final_reward",
            "sage_score",
            "sage_success",
            "sage_failure",
            "factual_error",
            "factual_change",
            "factual_change_low",
            "factual_change_high",
            "wall_s",
        ]
        .map(String::from),
    );
    let mut t = Table::new(headers);
    for r in results {
        let mut row = vec![r.cell.name.clone(), r.cell.index.to_string()];
        row.extend(r.cell.values.iter().map(|(_, v)| show(v)));
        let change = r.factual.and_then(|f| f.change);
        row.extend([
            r.cell.seed.to_string(),
            r.state.word().to_string(),
            r.curve.last().map_or(0, |c| c.0).to_string(),
            num(r.final_reward),
            num(r.sage.as_ref().map(|s| s.mean_final)),
            num(r.sage.as_ref().map(|s| s.success_rate)),
            num(r.sage.as_ref().map(|s| s.failure_rate)),
            num(r.factual.map(|f| f.error_rate)),
            num(change.map(|c| c.0)),
            num(change.map(|c| c.1)),
            num(change.map(|c| c.2)),
            r.wall_s.map(|w| format!("{w:.1}")).unwrap_or_default(),
        ]);
        t.push_row(row);
    }
    t
}

/// A measure the summary aggregates, read off a finished cell.
struct Measure {
    name: &'static str,
    decimals: usize,
    get: fn(&CellResult) -> Option<f64>,
}

const MEASURES: [Measure; 5] = [
    Measure {
        name: "final reward",
        decimals: 3,
        get: |r| r.final_reward,
    },
    Measure {
        name: "SAGE score",
        decimals: 1,
        get: |r| r.sage.as_ref().map(|s| s.mean_final),
    },
    Measure {
        name: "SAGE success",
        decimals: 2,
        get: |r| r.sage.as_ref().map(|s| s.success_rate),
    },
    Measure {
        name: "SAGE failure",
        decimals: 2,
        get: |r| r.sage.as_ref().map(|s| s.failure_rate),
    },
    Measure {
        name: "factual change (points)",
        decimals: 1,
        get: |r| r.factual.and_then(|f| f.change).map(|c| 100.0 * c.0),
    },
];

/// The measures that some finished cell has.
fn measures_present(results: &[CellResult]) -> Vec<&'static Measure> {
    MEASURES
        .iter()
        .filter(|m| results.iter().any(|r| (m.get)(r).is_some()))
        .collect()
}

fn cell_spread(group: &[&CellResult], m: &Measure) -> String {
    let xs: Vec<f64> = group.iter().filter_map(|r| (m.get)(r)).collect();
    spread(&xs).map_or(String::new(), |s: Spread| s.show(m.decimals))
}

/// Groups finished cells by `key`, keeping first-seen order.
fn group_by(
    results: &[CellResult],
    key: impl Fn(&CellResult) -> String,
) -> Vec<(String, Vec<&CellResult>)> {
    let mut groups: Vec<(String, Vec<&CellResult>)> = Vec::new();
    for r in results.iter().filter(|r| r.is_finished()) {
        let k = key(r);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(r),
            None => groups.push((k, vec![r])),
        }
    }
    groups
}

/// `summary.md`.
pub fn summary_markdown(
    sweep: &Sweep,
    results: &[CellResult],
    base: &[BaseResult],
    plots: &[PathBuf],
) -> String {
    let done = results.iter().filter(|r| r.is_finished()).count();
    let mut md = format!("# Sweep `{}`\n\n", sweep.name);
    md.push_str(&format!(
        "{done} of {} cells finished. Written by `empathy-gym sweep collect {}`.\n\n",
        results.len(),
        sweep.dir.display()
    ));
    md.push_str("Axes: ");
    let axes: Vec<String> = sweep
        .axes
        .iter()
        .map(|a| {
            let vals: Vec<String> = (0..a.values.len())
                .map(|i| match a.bundles.get(i) {
                    None => show(&a.values[i]),
                    Some(sets) if sets.is_empty() => format!("{}: the base", show(&a.values[i])),
                    Some(sets) => {
                        let sets: Vec<String> = sets
                            .iter()
                            .map(|o| format!("{}={}", o.key(), show(&o.value)))
                            .collect();
                        format!("{}: {}", show(&a.values[i]), sets.join(" "))
                    }
                })
                .collect();
            let sep = if a.bundles.is_empty() { ", " } else { "; " };
            format!("`{}` ({})", a.key, vals.join(sep))
        })
        .collect();
    md.push_str(&axes.join("; "));
    let seeds: Vec<String> = sweep.seeds.iter().map(u64::to_string).collect();
    md.push_str(&format!("; seeds {}.\n\n", seeds.join(", ")));
    md.push_str(
        "*final reward*: mean training reward over the last 10% of steps. *SAGE score*: mean final \
         emotion (0-100) of the held-out users at moderate difficulty, whatever the training \
         difficulty; success = share ending at 100, failure = share ending below 10. *factual \
         change*: error-rate change against the base model in percentage points. Cells show mean ± \
         standard deviation [95% t-interval of the mean] across seeds.\n\n",
    );
    for b in base {
        let mut parts = Vec::new();
        if let Some(s) = &b.sage {
            parts.push(format!(
                "SAGE score {:.1} (success {:.2}, failure {:.2}, {} dialogues)",
                s.mean_final, s.success_rate, s.failure_rate, s.episodes
            ));
        }
        if let Some(f) = &b.factual {
            parts.push(format!("factual error {:.1}%", 100.0 * f.error_rate));
        }
        if !parts.is_empty() {
            md.push_str(&format!(
                "Base model `{}` before training: {}.\n\n",
                b.model,
                parts.join("; ")
            ));
        }
    }
    let measures = measures_present(results);
    md.push_str("## By combination\n\n");
    let mut headers: Vec<String> = sweep.axes.iter().map(|a| a.label.clone()).collect();
    headers.push("seeds".into());
    headers.extend(measures.iter().map(|m| m.name.to_string()));
    let mut t = Table::new(headers);
    for (_, group) in group_by(results, |r| r.cell.combination()) {
        let mut row: Vec<String> = group[0].cell.values.iter().map(|(_, v)| show(v)).collect();
        row.push(group.len().to_string());
        row.extend(measures.iter().map(|m| cell_spread(&group, m)));
        t.push_row(row);
    }
    md.push_str(&t.to_markdown());
    // With one axis the combinations are its values: no second table.
    let pooled = sweep.axes.len() > 1;
    for (i, axis) in sweep.axes.iter().enumerate() {
        if axis.values.len() < 2 || !pooled {
            continue;
        }
        md.push_str(&format!(
            "\n## By `{}` (every finished cell with that value, other axes pooled)\n\n",
            axis.key
        ));
        let mut headers = vec![axis.label.clone(), "cells".to_string()];
        headers.extend(measures.iter().map(|m| m.name.to_string()));
        let mut t = Table::new(headers);
        for (value, group) in group_by(results, |r| show(&r.cell.values[i].1)) {
            let mut row = vec![value, group.len().to_string()];
            row.extend(measures.iter().map(|m| cell_spread(&group, m)));
            t.push_row(row);
        }
        md.push_str(&t.to_markdown());
    }
    if !plots.is_empty() {
        md.push_str("\n## Plots\n\n");
        for p in plots {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            md.push_str(&format!("![{name}]({name})\n\n"));
        }
    }
    md.push_str("\n## Cells\n\n");
    let mut t = Table::new(["cell", "status", "final reward", "SAGE score", "minutes"]);
    for r in results {
        t.push_row([
            r.cell.name.clone(),
            r.state.to_string(),
            r.final_reward
                .map(|v| format!("{v:.3}"))
                .unwrap_or_default(),
            r.sage
                .as_ref()
                .map(|s| format!("{:.1}", s.mean_final))
                .unwrap_or_default(),
            r.wall_s
                .map(|w| format!("{:.1}", w / 60.0))
                .unwrap_or_default(),
        ]);
    }
    md.push_str(&t.to_markdown());
    md
}

/// Mean reward per step over `cells`, with a band of ± one standard deviation across them.
fn mean_curve(name: &str, cells: &[&CellResult]) -> Series {
    let mut by_step: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in cells {
        for &(step, v) in &r.curve {
            by_step.entry(step).or_default().push(v);
        }
    }
    let mut points = Vec::new();
    let mut band = Vec::new();
    for (step, vals) in by_step {
        if let Some(s) = spread(&vals) {
            points.push((step as f64, s.mean));
            band.push((step as f64, s.mean - s.std, s.mean + s.std));
        }
    }
    Series::new(format!("{name} (n={})", cells.len()), points).with_band(band)
}

fn reward_chart(
    title: String,
    band: &str,
    series: Vec<Series>,
    y_range: Option<(f64, f64)>,
) -> LineChart {
    LineChart {
        title,
        x_label: "step".into(),
        y_label: format!("mean training reward (band: ± 1 std across {band})"),
        series,
        y_range,
        ..LineChart::default()
    }
}

/// The training reward of finished cells (a curve that stopped half-way would pull the mean at
/// its last steps): per value of each axis with two or more values (`reward-by-LABEL.svg`, band
/// across every cell with that value), and, when two or more axes vary, one chart per value of
/// the last of them (`reward-LABEL=VALUE.svg`) with a curve per combination of the others and its
/// band across seeds alone, on one y scale; one curve over every cell when no axis varies.
pub fn reward_charts(sweep: &Sweep, results: &[CellResult]) -> Vec<(String, LineChart)> {
    let finished: Vec<&CellResult> = results
        .iter()
        .filter(|r| r.is_finished() && !r.curve.is_empty())
        .collect();
    let with_value = |i: usize, v: &serde_yaml::Value| -> Vec<&CellResult> {
        finished
            .iter()
            .copied()
            .filter(|r| &r.cell.values[i].1 == v)
            .collect()
    };
    let varying: Vec<usize> = (0..sweep.axes.len())
        .filter(|&i| sweep.axes[i].values.len() >= 2)
        .collect();
    let mut charts = Vec::new();
    for &i in &varying {
        let axis = &sweep.axes[i];
        let series = axis
            .values
            .iter()
            .map(|v| mean_curve(&show(v), &with_value(i, v)))
            .collect();
        let file = format!("reward-by-{}.svg", label_fragment(&axis.label));
        let title = format!("Training reward by {}", axis.label);
        charts.push((file, reward_chart(title, "cells", series, None)));
    }
    if let Some((&last, others)) = varying.split_last() {
        if !others.is_empty() {
            charts.extend(seed_band_charts(sweep, &finished, last, others));
        }
    }
    if charts.is_empty() {
        let title = "Training reward".to_string();
        let series = vec![mean_curve("every cell", &finished)];
        charts.push((
            "reward.svg".into(),
            reward_chart(title, "cells", series, None),
        ));
    }
    charts
}

/// One chart per value of axis `last`: a curve per combination of the `others` axes' values over
/// the `finished` cells, its band across their seeds; every chart on one y scale (0 to the highest
/// band edge) so the panels compare.
fn seed_band_charts(
    sweep: &Sweep,
    finished: &[&CellResult],
    last: usize,
    others: &[usize],
) -> Vec<(String, LineChart)> {
    let axis = &sweep.axes[last];
    let combos = combinations_of(sweep, others);
    let panels: Vec<(&serde_yaml::Value, Vec<Series>)> = axis
        .values
        .iter()
        .map(|v| {
            let series = combos
                .iter()
                .map(|combo| {
                    let cells: Vec<&CellResult> = finished
                        .iter()
                        .copied()
                        .filter(|r| {
                            &r.cell.values[last].1 == v
                                && others
                                    .iter()
                                    .zip(combo)
                                    .all(|(&j, c)| &r.cell.values[j].1 == *c)
                        })
                        .collect();
                    let name: Vec<String> = combo.iter().map(|c| show(c)).collect();
                    mean_curve(&name.join(", "), &cells)
                })
                .collect();
            (v, series)
        })
        .collect();
    let high = panels
        .iter()
        .flat_map(|(_, series)| series.iter().flat_map(|s| s.band.iter().map(|b| b.2)))
        .fold(0.0f64, f64::max);
    panels
        .into_iter()
        .map(|(v, series)| {
            let file = format!("reward-{}={}.svg", label_fragment(&axis.label), fragment(v));
            let title = format!("Training reward at {} = {}", axis.label, show(v));
            (
                file,
                reward_chart(title, "seeds", series, Some((0.0, high))),
            )
        })
        .collect()
}

fn label_fragment(label: &str) -> String {
    fragment(&serde_yaml::Value::String(label.to_string()))
}

/// The combinations of the values of `axes` (indices into the sweep's axes) that the sweep's cells
/// take, in cell order (first axis outermost); excluded combinations do not appear.
fn combinations_of<'a>(sweep: &'a Sweep, axes: &[usize]) -> Vec<Vec<&'a serde_yaml::Value>> {
    let mut combos: Vec<Vec<&serde_yaml::Value>> = Vec::new();
    for cell in &sweep.cells {
        let combo: Vec<&serde_yaml::Value> = axes.iter().map(|&j| &cell.values[j].1).collect();
        if !combos.contains(&combo) {
            combos.push(combo);
        }
    }
    combos
}

/// The held-out SAGE score per cell: one group of bars per combination, one bar per seed.
pub fn sage_chart(sweep: &Sweep, results: &[CellResult]) -> Option<String> {
    if results.iter().all(|r| r.sage.is_none()) {
        return None;
    }
    let groups = group_by(results, |r| r.cell.combination());
    let series = sweep
        .seeds
        .iter()
        .map(|&seed| {
            let values = groups
                .iter()
                .map(|(_, g)| {
                    g.iter()
                        .find(|r| r.cell.seed == seed)
                        .and_then(|r| r.sage.as_ref().map(|s| s.mean_final))
                        .unwrap_or(f64::NAN)
                })
                .collect();
            BarSeries::new(format!("seed {seed}"), values)
        })
        .collect();
    Some(
        BarChart {
            title: "Held-out SAGE score per cell".into(),
            x_label: "cell".into(),
            y_label: "mean final emotion (0-100)".into(),
            categories: groups.into_iter().map(|(k, _)| k).collect(),
            series,
            ..BarChart::default()
        }
        .to_svg(),
    )
}

/// Writes summary.csv, the plots and summary.md into the sweep folder; returns their paths.
pub fn write_summary(
    sweep: &Sweep,
    results: &[CellResult],
    base: &[BaseResult],
) -> Result<Vec<PathBuf>> {
    let dir = &sweep.dir;
    let write = |name: &str, text: &str| -> Result<PathBuf> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
        Ok(p)
    };
    let mut files = vec![dir.join(SUMMARY_CSV)];
    summary_table(sweep, results).write_csv(&files[0])?;
    let mut plots = Vec::new();
    for (name, chart) in reward_charts(sweep, results) {
        plots.push(write(&name, &chart.to_svg())?);
    }
    if let Some(svg) = sage_chart(sweep, results) {
        plots.push(write(SAGE_SVG, &svg)?);
    }
    let md = dir.join(SUMMARY_MD);
    let old = std::fs::read_to_string(&md).ok();
    let generated = summary_markdown(sweep, results, base, &plots);
    files.push(write(SUMMARY_MD, &keep_around(old.as_deref(), &generated))?);
    files.extend(plots);
    Ok(files)
}

/// Marks what `sweep collect` writes into summary.md; text a person writes above or below it
/// (the reading of the results) survives the next collect.
pub const BEGIN_MARK: &str = "<!-- sweep collect: begin (rewritten by `sweep collect`) -->";
pub const END_MARK: &str = "<!-- sweep collect: end -->";

/// The new summary.md: `generated` between the marks, in place of what `old` had between them,
/// keeping `old`'s text around them. An `old` without marks that an earlier collect wrote (it
/// opens with the same heading) is replaced; one a person wrote is kept above the marked part.
pub fn keep_around(old: Option<&str>, generated: &str) -> String {
    let marked = format!("{BEGIN_MARK}\n{}\n{END_MARK}", generated.trim_end());
    let Some(old) = old.filter(|o| !o.trim().is_empty()) else {
        return format!("{marked}\n");
    };
    if let Some(b) = old.find(BEGIN_MARK) {
        if let Some(e) = old[b..].find(END_MARK) {
            let after = &old[b + e + END_MARK.len()..];
            return format!("{}{marked}{after}", &old[..b]);
        }
    }
    let heading = generated.lines().next().unwrap_or_default();
    if old.lines().next() == Some(heading) {
        format!("{marked}\n")
    } else {
        format!("{}\n\n{marked}\n", old.trim_end())
    }
}

/// The folder names under `dir` (sorted), e.g. the base models that were evaluated.
pub fn subfolders(dir: &Path) -> Result<Vec<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|e| Error::io(dir, e))?;
        if e.path().is_dir() {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::empathy::EmpathyScore;
    use crate::sweep::collect::FactualResult;
    use crate::sweep::state::{CellState, DoneMarker};

    fn sweep() -> Sweep {
        Sweep::parse(
            "name: t\nbase: {}\naxes:\n  env.difficulty: [moderate, hard]\n  optim.lr: [0.001]\n\
             seeds: [0, 1]\n",
            std::path::Path::new("t.yaml"),
        )
        .unwrap()
    }

    #[test]
    fn a_readers_text_around_the_collected_part_survives() {
        let first = keep_around(None, "| table 1 |\n");
        assert_eq!(first, format!("{BEGIN_MARK}\n| table 1 |\n{END_MARK}\n"));
        let edited = format!("# Reading\nGRPO won.\n\n{first}\n## Limits\nOne seed.\n");
        let again = keep_around(Some(&edited), "| table 2 |");
        assert_eq!(
            again,
            format!("# Reading\nGRPO won.\n\n{BEGIN_MARK}\n| table 2 |\n{END_MARK}\n\n## Limits\nOne seed.\n")
        );
        // Without the marks: what an older collect wrote is replaced, a person's text kept.
        let gen = "# Sweep `t`\n\nnew";
        assert_eq!(
            keep_around(Some("# Sweep `t`\n\nold"), gen),
            format!("{BEGIN_MARK}\n{gen}\n{END_MARK}\n")
        );
        assert_eq!(
            keep_around(Some("# Notes\nmine\n"), gen),
            format!("# Notes\nmine\n\n{BEGIN_MARK}\n{gen}\n{END_MARK}\n")
        );
    }

    /// Cell i finished with a reward curve ending at `r` and a SAGE score `s`; cell 3 unfinished.
    fn results(sweep: &Sweep) -> Vec<CellResult> {
        let finals = [(0.2, 10.0), (0.4, 20.0), (0.1, 5.0), (0.3, 9.0)];
        sweep
            .cells
            .iter()
            .zip(finals)
            .map(|(c, (r, s))| {
                let done = c.index < 3;
                CellResult {
                    cell: c.clone(),
                    state: if done {
                        CellState::Done(DoneMarker {
                            cell: c.name.clone(),
                            steps: 2,
                            eval_s: 1.0,
                        })
                    } else {
                        CellState::Training { step: 1, of: 2 }
                    },
                    curve: vec![(1, r / 2.0), (2, r)],
                    final_reward: done.then_some(r),
                    sage: done.then(|| EmpathyScore {
                        name: "trained".into(),
                        episodes: 4,
                        mean_final: s,
                        success_rate: 0.0,
                        failure_rate: 0.5,
                        unsafe_rate: 0.0,
                    }),
                    factual: done.then_some(FactualResult {
                        error_rate: 0.5,
                        change: Some((0.02, -0.01, 0.05)),
                    }),
                    wall_s: done.then_some(60.0),
                }
            })
            .collect()
    }

    #[test]
    fn csv_has_one_row_per_cell_with_axis_columns_and_wall_time_last() {
        let s = sweep();
        let csv = summary_table(&s, &results(&s)).to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("cell,index,env.difficulty,optim.lr,seed,status,steps,"));
        assert!(lines[0].ends_with(",wall_s"));
        assert_eq!(
            lines[1],
            "\"difficulty=moderate,lr=0.001,seed=0\",0,moderate,0.001,0,done,2,0.200000,\
             10.000000,0.000000,0.500000,0.500000,0.020000,-0.010000,0.050000,60.0"
        );
        // Unfinished: state and steps, no numbers.
        assert_eq!(
            lines[4],
            "\"difficulty=hard,lr=0.001,seed=1\",3,hard,0.001,1,started,2,,,,,,,,,"
        );
    }

    #[test]
    fn markdown_pools_seeds_per_combination_and_values_per_axis() {
        let s = sweep();
        let md = summary_markdown(&s, &results(&s), &[], &[]);
        assert!(md.contains("3 of 4 cells finished"), "{md}");
        // moderate: rewards 0.2, 0.4 -> mean 0.3, std 0.141421, half-width 12.706 * 0.141421 /
        // sqrt 2 = 1.2706 -> [-0.971, 1.571]; SAGE 10, 20 -> 15.0 ± 7.1 [-48.5, 78.5].
        assert!(
            md.contains("| moderate | 0.001 | 2 | 0.300 ± 0.141 [-0.971, 1.571] | 15.0 ± 7.1 [-48.5, 78.5] |"),
            "{md}"
        );
        // hard has one finished seed: its value, no interval.
        assert!(md.contains("| hard | 0.001 | 1 | 0.100 | 5.0 |"), "{md}");
        // Per axis with more than one value (difficulty), not for lr (one value).
        assert!(md.contains("## By `env.difficulty`") && !md.contains("## By `optim.lr`"));
        assert!(md.contains("| difficulty=hard,lr=0.001,seed=1 | started: step 1 of 2 |"));
    }

    #[test]
    fn charts_band_across_cells_and_bar_per_seed() {
        let s = sweep();
        let r = results(&s);
        let charts = reward_charts(&s, &r);
        assert_eq!(charts.len(), 1);
        assert_eq!(charts[0].0, "reward-by-difficulty.svg");
        let svg = charts[0].1.to_svg();
        assert!(
            svg.contains("<polygon") && svg.contains("moderate (n=2)"),
            "{svg}"
        );
        // hard's second seed stopped at step 1 of 2: only finished cells are drawn.
        assert!(svg.contains("hard (n=1)"), "{svg}");
        let sage = sage_chart(&s, &r).unwrap();
        assert!(sage.contains("seed 0") && sage.contains("seed 1"));
    }

    #[test]
    fn with_two_varying_axes_each_value_of_the_last_gets_a_chart_with_seed_bands() {
        let s = Sweep::parse(
            "name: t\nbase: {}\naxes:\n  optim.lr: [0.001, 0.01]\n  env.difficulty: [moderate, hard]\n\
             seeds: [0, 1]\n",
            std::path::Path::new("t.yaml"),
        )
        .unwrap();
        // Cells in order lr, difficulty, seed; the last one (0.01, hard, seed 1) is unfinished.
        let finals = [0.2, 0.4, 0.1, 0.3, 0.5, 0.9, 0.6, 0.8];
        let r: Vec<CellResult> = s
            .cells
            .iter()
            .zip(finals)
            .map(|(c, f)| CellResult {
                cell: c.clone(),
                state: CellState::Training { step: 2, of: 2 },
                curve: vec![(1, f / 2.0), (2, f)],
                final_reward: (c.index < 7).then_some(f),
                sage: None,
                factual: None,
                wall_s: None,
            })
            .collect();
        let charts = reward_charts(&s, &r);
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "reward-by-lr.svg",
                "reward-by-difficulty.svg",
                "reward-difficulty=moderate.svg",
                "reward-difficulty=hard.svg"
            ]
        );
        let moderate = &charts[2].1;
        assert_eq!(moderate.title, "Training reward at difficulty = moderate");
        assert!(moderate.y_label.ends_with("across seeds)"));
        // lr 0.01 at moderate: seeds 0.5 and 0.9 at step 2 -> mean 0.7, std 0.2828 (n - 1).
        let s01 = &moderate.series[1];
        assert_eq!(s01.name, "0.01 (n=2)");
        assert!((s01.points[1].1 - 0.7).abs() < 1e-12);
        let (_, lo, hi) = s01.band[1];
        assert!(
            (lo - (0.7 - 0.08f64.sqrt())).abs() < 1e-12
                && (hi - (0.7 + 0.08f64.sqrt())).abs() < 1e-12
        );
        // The unfinished seed is left out: one cell, a band of zero width.
        let hard = &charts[3].1;
        assert_eq!(hard.series[1].name, "0.01 (n=1)");
        // One y scale for the panels: up to the highest band edge, 0.7 + 0.2828.
        let top = 0.7 + 0.08f64.sqrt();
        for (_, c) in &charts[2..] {
            let (low, high) = c.y_range.unwrap();
            assert!(low == 0.0 && (high - top).abs() < 1e-12, "{:?}", c.y_range);
        }
        // The per-axis charts keep their band across cells.
        assert!(charts[0].1.y_label.ends_with("across cells)"));
    }
}
