//! The sweep file (docs/SWEEPS.md): a base config, axes over dotted config keys, seeds, exclusions,
//! the evaluations after each cell and the Slurm settings. [`Sweep::load`] parses it and expands
//! the cells; [`Sweep::validate`] resolves every cell's config before anything runs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value};

use super::cell::{fragment, Cell};
use super::grid::{over, show, Axis, Exclude};
use crate::environment::profile::Split;
use crate::error::{Error, Result};
use crate::learning::train::{Override, TrainConfig};

/// Keys the sweep sets itself in every cell.
const RESERVED: [&str; 3] = ["run", "results_dir", "seed"];

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    dir: Option<PathBuf>,
    base: Value,
    #[serde(default)]
    set: Mapping,
    axes: Mapping,
    #[serde(default = "default_seeds")]
    seeds: Vec<u64>,
    #[serde(default)]
    exclude: Vec<Mapping>,
    #[serde(default)]
    eval: EvalSpec,
    #[serde(default)]
    slurm: SlurmSpec,
}

fn default_seeds() -> Vec<u64> {
    vec![0]
}

/// `eval:`: what runs after a cell's training.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSpec {
    /// `eval empathy` (SAGE protocol, always at moderate difficulty) on the cell's final policy.
    #[serde(default)]
    pub empathy: Option<EmpathyEval>,
    /// `eval factual` on the cell's final policy against the base model.
    #[serde(default)]
    pub factual: Option<FactualEval>,
}

impl EvalSpec {
    /// Whether any evaluation runs after training.
    pub fn any(&self) -> bool {
        self.empathy.is_some() || self.factual.is_some()
    }
}

/// `eval.empathy:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmpathyEval {
    /// Profiles to evaluate on (default `test`, the held-out split).
    #[serde(default = "default_split")]
    pub split: Split,
    /// Only the first N profiles of the split (default: all).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Sampling and simulator seed (default 0: every cell meets the same users).
    #[serde(default)]
    pub seed: u64,
}

fn default_split() -> Split {
    Split::Test
}

/// `eval.factual:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactualEval {
    /// Only the first N QA items (default: all 441; each is asked under 18 conditions).
    #[serde(default)]
    pub limit: Option<usize>,
    /// N QA items spread evenly over the suite, so that every topic is in (`eval factual
    /// --sample`); not with `limit`.
    #[serde(default)]
    pub sample: Option<usize>,
    /// Seed of the condition grid (default 0).
    #[serde(default)]
    pub seed: u64,
}

/// `slurm:`: the `#SBATCH` lines of `sweep slurm`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmSpec {
    /// `--partition` (default: the cluster's default partition).
    #[serde(default)]
    pub partition: Option<String>,
    /// `--time` per cell (default `04:00:00`).
    #[serde(default = "default_time")]
    pub time: String,
    /// `--cpus-per-task` (default 2).
    #[serde(default = "default_cpus")]
    pub cpus_per_task: u32,
    /// `--gpus` per cell (default 0: none requested).
    #[serde(default)]
    pub gpus: u32,
    /// `--mem`, e.g. `16G` (default: the partition's default).
    #[serde(default)]
    pub mem: Option<String>,
    /// At most this many cells at once (`%M` of `--array`; default: no limit).
    #[serde(default)]
    pub max_parallel: Option<usize>,
    /// More `#SBATCH` options, written as given (e.g. `--account=lab`).
    #[serde(default)]
    pub extra: Vec<String>,
    /// Shell lines before the cell runs (e.g. `module load cuda`).
    #[serde(default)]
    pub setup: Vec<String>,
}

fn default_time() -> String {
    "04:00:00".into()
}
fn default_cpus() -> u32 {
    2
}

impl Default for SlurmSpec {
    fn default() -> Self {
        SlurmSpec {
            partition: None,
            time: default_time(),
            cpus_per_task: default_cpus(),
            gpus: 0,
            mem: None,
            max_parallel: None,
            extra: Vec::new(),
            setup: Vec::new(),
        }
    }
}

/// The base config: a file, or a mapping written inline.
#[derive(Debug, Clone, PartialEq)]
pub enum Base {
    /// A config file (relative paths are relative to the working directory, like `train --config`).
    File(PathBuf),
    /// A config written under `base:` in the sweep file.
    Inline(String),
}

/// A parsed sweep: everything in the file plus the expanded cells.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The sweep file (named in errors).
    pub file: PathBuf,
    /// The sweep's name (default: the file name without `.yaml`).
    pub name: String,
    /// Where cells and summaries go (default `results/sweeps/NAME`).
    pub dir: PathBuf,
    /// The base config.
    pub base: Base,
    /// Overrides applied to every cell, before the axis values.
    pub set: Vec<Override>,
    /// The axes, in file order.
    pub axes: Vec<Axis>,
    /// The seeds, in file order.
    pub seeds: Vec<u64>,
    /// Every cell that runs, in index order (axes in file order, seeds innermost).
    pub cells: Vec<Cell>,
    /// Evaluations after training.
    pub eval: EvalSpec,
    /// Slurm settings.
    pub slurm: SlurmSpec,
}

impl Sweep {
    /// Reads and parses the sweep file at `path` and expands its cells. Does not look at the base
    /// config (see [`Sweep::validate`]).
    pub fn load(path: &Path) -> Result<Sweep> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Sweep::parse(&text, path)
    }

    /// Parses sweep-file `text` (from `path`, named in errors) and expands its cells.
    pub fn parse(text: &str, path: &Path) -> Result<Sweep> {
        let raw: SweepFile = serde_yaml::from_str(text).map_err(|e| {
            Error::input(
                path,
                e.location()
                    .map_or("document".to_string(), |l| format!("line {}", l.line())),
                format!("{e}; see docs/SWEEPS.md for the keys of a sweep file"),
            )
        })?;
        let bad = |at: &str, msg: String| Error::input(path, at, msg);
        let name = match raw.name {
            Some(n) => n,
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .ok_or_else(|| bad("name", "give the sweep a `name:`".into()))?,
        };
        if name.is_empty() || fragment(&Value::String(name.clone())) != name {
            return Err(bad(
                "name",
                format!(
                    "`{name}` must be letters, digits, `.`, `_`, `+` or `-` (it names a folder)"
                ),
            ));
        }
        let base = match raw.base {
            Value::String(p) => Base::File(PathBuf::from(p)),
            Value::Mapping(m) => {
                Base::Inline(serde_yaml::to_string(&m).map_err(|e| bad("base", e.to_string()))?)
            }
            _ => {
                return Err(bad(
                    "base",
                    "expected a config file path (e.g. `base: configs/quickstart.yaml`) or a \
                     config written inline as a mapping"
                        .into(),
                ))
            }
        };
        if let Some(FactualEval {
            limit: Some(_),
            sample: Some(_),
            ..
        }) = raw.eval.factual
        {
            return Err(bad(
                "eval.factual",
                "give `limit` (the first N items) or `sample` (N items spread over the suite), \
                 not both"
                    .into(),
            ));
        }
        let set = parse_overrides(&raw.set, "set", path)?;
        let axes = parse_axes(&raw.axes, &set, path)?;
        check_seeds(&raw.seeds, path)?;
        let excludes = parse_excludes(&raw.exclude, &axes, path)?;
        let cells = super::cell::expand(&axes, &raw.seeds, &excludes);
        if cells.is_empty() {
            return Err(bad(
                "exclude",
                "every combination is excluded: nothing would run".into(),
            ));
        }
        Ok(Sweep {
            file: path.to_path_buf(),
            dir: raw
                .dir
                .unwrap_or_else(|| Path::new("results/sweeps").join(&name)),
            name,
            base,
            set,
            axes,
            seeds: raw.seeds,
            cells,
            eval: raw.eval,
            slurm: raw.slurm,
        })
    }

    /// The folder of cell `cell`: a normal run directory plus its evaluations.
    pub fn cell_dir(&self, cell: &Cell) -> PathBuf {
        self.dir.join("cells").join(&cell.name)
    }

    /// The text and path of the base config.
    fn base_text(&self) -> Result<(String, PathBuf)> {
        match &self.base {
            Base::File(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| {
                    Error::input(
                        &self.file,
                        "base",
                        format!("cannot read the base config {}: {e}", p.display()),
                    )
                })?;
                Ok((text, p.clone()))
            }
            Base::Inline(text) => Ok((text.clone(), self.file.clone())),
        }
    }

    /// The resolved config of `cell`: base, then `set:`, then the cell's axis values, its seed, and
    /// its run directory `DIR/cells/NAME`.
    pub fn cell_config(&self, cell: &Cell) -> Result<TrainConfig> {
        let (text, base_path) = self.base_text()?;
        let sets = self.cell_overrides(cell);
        TrainConfig::from_yaml(&text, &base_path, &sets).map_err(|e| {
            Error::input(
                &self.file,
                format!("cell {}", cell.name),
                format!("its config is invalid: {e}"),
            )
        })
    }

    fn cell_overrides(&self, cell: &Cell) -> Vec<Override> {
        let mut sets = self.set.clone();
        for (axis, (_, value)) in self.axes.iter().zip(&cell.values) {
            let i = axis.values.iter().position(|v| v == value);
            sets.extend(axis.overrides(i.expect("a cell's value is one of its axis's values")));
        }
        let cells_dir = self.dir.join("cells");
        sets.extend([
            over("seed", Value::from(cell.seed)),
            over("run", Value::String(cell.name.clone())),
            over(
                "results_dir",
                Value::String(cells_dir.to_string_lossy().into_owned()),
            ),
        ]);
        sets
    }

    /// Resolves every cell's config before anything runs: first the base with `set:`, then each
    /// axis value alone (so a bad key or value is named by its axis), then every cell.
    pub fn validate(&self) -> Result<Vec<TrainConfig>> {
        let (text, base_path) = self.base_text()?;
        TrainConfig::from_yaml(&text, &base_path, &self.set).map_err(|e| {
            Error::input(
                &self.file,
                if self.set.is_empty() { "base" } else { "set" },
                format!("the base config with `set:` is invalid: {e}"),
            )
        })?;
        for axis in &self.axes {
            for (i, v) in axis.values.iter().enumerate() {
                let mut sets = self.set.clone();
                sets.extend(axis.overrides(i));
                TrainConfig::from_yaml(&text, &base_path, &sets).map_err(|e| {
                    Error::input(
                        &self.file,
                        format!("axes.{}", axis.key),
                        format!("the value `{}` does not fit: {e}", show(v)),
                    )
                })?;
            }
        }
        self.cells.iter().map(|c| self.cell_config(c)).collect()
    }
}

fn key_of(k: &Value, path: &Path, at: &str) -> Result<String> {
    match k {
        Value::String(s) if !s.is_empty() && !s.split('.').any(str::is_empty) => Ok(s.clone()),
        other => Err(Error::input(
            path,
            at,
            format!(
                "`{}` is not a dotted config key (e.g. env.difficulty)",
                show(other)
            ),
        )),
    }
}

fn check_reserved(key: &str, path: &Path, at: &str) -> Result<()> {
    if RESERVED.contains(&key) {
        let fix = if key == "seed" {
            "list the seeds under `seeds:`"
        } else {
            "the sweep names each cell's run folder itself (DIR/cells/NAME); set `dir:` instead"
        };
        return Err(Error::input(
            path,
            at,
            format!("`{key}` is set by the sweep: {fix}"),
        ));
    }
    Ok(())
}

/// The overrides of a mapping of dotted config keys (`set:`, or one value of a named axis), each
/// key checked and named in errors under `at`.
fn parse_overrides(map: &Mapping, at: &str, path: &Path) -> Result<Vec<Override>> {
    map.iter()
        .map(|(k, v)| {
            let key = key_of(k, path, at)?;
            check_reserved(&key, path, &format!("{at}.{key}"))?;
            Ok(over(&key, v.clone()))
        })
        .collect()
}

fn parse_axes(axes: &Mapping, set: &[Override], path: &Path) -> Result<Vec<Axis>> {
    let mut out: Vec<Axis> = Vec::new();
    for (k, v) in axes {
        let key = key_of(k, path, "axes")?;
        let at = format!("axes.{key}");
        let mut bundles = Vec::new();
        let values = match v {
            Value::Mapping(named) => {
                let (values, sets) = parse_named(named, &at, path)?;
                bundles = sets;
                values
            }
            Value::Sequence(s) if !s.is_empty() => s.clone(),
            Value::Sequence(_) => {
                return Err(Error::input(
                    path,
                    &at,
                    format!("the axis has no values; list at least one, e.g. `{key}: [a, b]`"),
                ))
            }
            other => {
                return Err(Error::input(
                    path,
                    &at,
                    format!(
                        "expected a list of values, found `{}`; write `{key}: [{}]`, or name \
                         each value with the overrides it stands for: `{key}: {{NAME: {{KEY: \
                         VALUE, ...}}, ...}}`",
                        show(other),
                        show(other)
                    ),
                ))
            }
        };
        for (i, a) in values.iter().enumerate() {
            if let Some(b) = values[..i].iter().find(|b| fragment(b) == fragment(a)) {
                let msg = if a == b {
                    format!(
                        "`{}` is listed twice: the cells would be duplicates",
                        show(a)
                    )
                } else {
                    format!(
                        "`{}` and `{}` give the same cell name part `{}`: the cells would be \
                         duplicates; make them differ in letters or digits",
                        show(b),
                        show(a),
                        fragment(a)
                    )
                };
                return Err(Error::input(path, &at, msg));
            }
        }
        out.push(Axis {
            label: String::new(),
            key,
            values,
            bundles,
        });
    }
    if out.is_empty() {
        return Err(Error::input(
            path,
            "axes",
            "no axes: list at least one, e.g. `env.difficulty: [moderate, hard]`",
        ));
    }
    check_one_home(&out, set, path)?;
    let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let labels: Vec<String> = out
        .iter()
        .map(|a| {
            let short = last(&a.key);
            let clash = out
                .iter()
                .filter(|b| last(&b.key) == short || b.key == short)
                .count()
                > 1;
            if clash || short == "seed" {
                a.key.clone()
            } else {
                short
            }
        })
        .collect();
    for (a, l) in out.iter_mut().zip(labels) {
        a.label = l;
    }
    Ok(out)
}

/// A named axis's values: each name and the overrides (dotted key -> value) it stands for; `{}`
/// (or nothing) for a value that changes nothing, e.g. the base config's own algorithm.
fn parse_named(named: &Mapping, at: &str, path: &Path) -> Result<(Vec<Value>, Vec<Vec<Override>>)> {
    let mut values = Vec::new();
    let mut bundles = Vec::new();
    for (name, bundle) in named {
        let name_at = format!("{at}.{}", show(name));
        if !matches!(name, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            return Err(Error::input(
                path,
                at,
                format!("`{}` is not a name for a value", show(name)),
            ));
        }
        let sets = match bundle {
            Value::Null => Vec::new(),
            Value::Mapping(m) => parse_overrides(m, &name_at, path)?,
            other => {
                return Err(Error::input(
                    path,
                    &name_at,
                    format!(
                        "expected the overrides this value stands for, as a mapping of dotted \
                         config keys (e.g. `{{algorithm: ppo, grpo.drop_zero_std: false}}`), \
                         found `{}`",
                        show(other)
                    ),
                ))
            }
        };
        values.push(Value::String(show(name)));
        bundles.push(sets);
    }
    if values.is_empty() {
        return Err(Error::input(
            path,
            at,
            "the axis has no values; name at least one with its overrides",
        ));
    }
    Ok((values, bundles))
}

/// Every config key is set in one place: by `set:`, by one plain axis, or by the values of one
/// named axis.
fn check_one_home(axes: &[Axis], set: &[Override], path: &Path) -> Result<()> {
    let keys = |a: &Axis| -> Vec<String> {
        if a.bundles.is_empty() {
            return vec![a.key.clone()];
        }
        let mut keys: Vec<String> = a.bundles.iter().flatten().map(Override::key).collect();
        keys.sort();
        keys.dedup();
        keys
    };
    for (i, a) in axes.iter().enumerate() {
        let at = format!("axes.{}", a.key);
        if a.bundles.is_empty() {
            check_reserved(&a.key, path, &at)?;
        }
        for key in keys(a) {
            if set.iter().any(|o| o.key() == key) {
                return Err(Error::input(
                    path,
                    &at,
                    format!("`{key}` is also under `set:`; keep it in one place"),
                ));
            }
            if let Some(b) = axes[..i].iter().find(|b| keys(b).contains(&key)) {
                return Err(Error::input(
                    path,
                    &at,
                    format!(
                        "`{key}` is also set by the axis `{}`; keep it on one axis",
                        b.key
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_seeds(seeds: &[u64], path: &Path) -> Result<()> {
    if seeds.is_empty() {
        return Err(Error::input(
            path,
            "seeds",
            "no seeds: list at least one, e.g. `seeds: [0, 1, 2]`",
        ));
    }
    for (i, s) in seeds.iter().enumerate() {
        if seeds[..i].contains(s) {
            return Err(Error::input(
                path,
                "seeds",
                format!("seed {s} is listed twice: the cells would be duplicates"),
            ));
        }
    }
    Ok(())
}

fn parse_excludes(list: &[Mapping], axes: &[Axis], path: &Path) -> Result<Vec<Exclude>> {
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let at = format!("exclude[{i}]");
            if m.is_empty() {
                return Err(Error::input(
                    path,
                    &at,
                    "an empty exclusion would exclude every cell",
                ));
            }
            m.iter()
                .map(|(k, v)| {
                    let key = key_of(k, path, &at)?;
                    let Some(a) = axes.iter().position(|a| a.key == key) else {
                        let names: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
                        return Err(Error::input(
                            path,
                            format!("{at}.{key}"),
                            format!("not an axis; the axes are {}", names.join(", ")),
                        ));
                    };
                    if !axes[a].values.contains(v) {
                        let vals: Vec<String> = axes[a].values.iter().map(show).collect();
                        return Err(Error::input(
                            path,
                            format!("{at}.{key}"),
                            format!(
                                "`{}` is not a value of the axis ({}), so it excludes nothing",
                                show(v),
                                vals.join(", ")
                            ),
                        ));
                    }
                    Ok((a, v.clone()))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Sweep> {
        Sweep::parse(text, Path::new("sweeps/s.yaml"))
    }

    const GRID: &str = "base: {grpo: {steps: 2}}\naxes:\n  env.difficulty: [moderate, hard]\n  \
                        optim.lr: [0.0001, 0.001]\nseeds: [0, 1]\n";

    #[test]
    fn cells_are_the_product_with_seeds_innermost_and_stable_names() {
        let s = parse(GRID).unwrap();
        assert_eq!(s.name, "s");
        assert_eq!(s.dir, Path::new("results/sweeps/s"));
        let names: Vec<&str> = s.cells.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "difficulty=moderate,lr=0.0001,seed=0",
                "difficulty=moderate,lr=0.0001,seed=1",
                "difficulty=moderate,lr=0.001,seed=0",
                "difficulty=moderate,lr=0.001,seed=1",
                "difficulty=hard,lr=0.0001,seed=0",
                "difficulty=hard,lr=0.0001,seed=1",
                "difficulty=hard,lr=0.001,seed=0",
                "difficulty=hard,lr=0.001,seed=1",
            ]
        );
        assert_eq!(
            s.cells.iter().map(|c| c.index).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        // Same file, same names.
        let again = parse(GRID).unwrap();
        assert_eq!(s.cells, again.cells);
    }

    #[test]
    fn exclusions_drop_matching_cells_and_keep_indices_dense() {
        let s = parse(&format!(
            "{GRID}exclude:\n  - {{env.difficulty: hard, optim.lr: 0.001}}\n"
        ))
        .unwrap();
        assert_eq!(s.cells.len(), 6);
        assert!(s
            .cells
            .iter()
            .all(|c| !c.name.starts_with("difficulty=hard,lr=0.001")));
        assert_eq!(s.cells[5].index, 5);
    }

    #[test]
    fn clashing_last_parts_use_the_whole_key() {
        let s = parse("base: {}\naxes:\n  grpo.loss.beta: [0.0]\n  other.beta: [1]\n").unwrap();
        assert_eq!(s.axes[0].label, "grpo.loss.beta");
        assert_eq!(s.cells[0].name, "grpo.loss.beta=0.0,other.beta=1,seed=0");
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_files_are_named_errors() {
        let e = err("base: {}\naxes:\n  env.difficulty: []\n");
        assert!(
            e.contains("sweeps/s.yaml: axes.env.difficulty: the axis has no values"),
            "{e}"
        );
        let e = err("base: {}\naxes:\n  env.difficulty: hard\n");
        assert!(e.contains("axes.env.difficulty: expected a list"), "{e}");
        let e = err("base: {}\naxes:\n  env.difficulty: [hard, hard]\n");
        assert!(e.contains("`hard` is listed twice"), "{e}");
        let e = err("base: {}\naxes:\n  env.system_prompt: [a b, a-b]\n");
        assert!(e.contains("give the same cell name part `a-b`"), "{e}");
        let e = err("base: {}\naxes:\n  seed: [1, 2]\n");
        assert!(e.contains("axes.seed: `seed` is set by the sweep"), "{e}");
        let e = err("base: {}\naxes:\n  x: [1]\nseeds: [3, 3]\n");
        assert!(e.contains("seeds: seed 3 is listed twice"), "{e}");
        let e = err("base: {}\naxes:\n  x: [1, 2]\nexclude:\n  - {y: 1}\n");
        assert!(
            e.contains("exclude[0].y: not an axis; the axes are x"),
            "{e}"
        );
        let e = err("base: {}\naxes:\n  x: [1, 2]\nexclude:\n  - {x: 3}\n");
        assert!(
            e.contains("exclude[0].x: `3` is not a value of the axis (1, 2)"),
            "{e}"
        );
        let e = err("base: {}\naxes:\n  x: [1]\nexclude:\n  - {x: 1}\n");
        assert!(e.contains("every combination is excluded"), "{e}");
        let e = err("base: {}\naxes: {}\n");
        assert!(e.contains("axes: no axes"), "{e}");
        let e = err("base: {}\naxes:\n  x: [1]\nsets: {}\n");
        assert!(e.contains("unknown field `sets`"), "{e}");
        let e = err("base: 3\naxes:\n  x: [1]\n");
        assert!(e.contains("base: expected a config file path"), "{e}");
        let e = err("base: {}\naxes:\n  x: [1]\neval:\n  factual: {limit: 2, sample: 4}\n");
        assert!(e.contains("eval.factual: give `limit`"), "{e}");
        let e = err("base: {}\nset: {grpo.steps: 2}\naxes:\n  grpo.steps: [1]\n");
        assert!(e.contains("also under `set:`"), "{e}");
    }

    #[test]
    fn validation_names_the_axis_and_the_value() {
        let s = parse("base: {}\naxes:\n  grpo.stepz: [2]\n").unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains("sweeps/s.yaml: axes.grpo.stepz: the value `2` does not fit")
                && e.contains("unknown field `stepz`"),
            "{e}"
        );
        let s = parse("base: {}\naxes:\n  grpo.steps: [2, many]\n").unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains("axes.grpo.steps: the value `many` does not fit"),
            "{e}"
        );
        let s = parse("base: {}\naxes:\n  optim.lr: [0.001, -1.0]\n").unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains("axes.optim.lr: the value `-1.0` does not fit"),
            "{e}"
        );
        let s = parse("base: no/such.yaml\naxes:\n  optim.lr: [0.001]\n").unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains("base: cannot read the base config no/such.yaml"),
            "{e}"
        );
    }

    #[test]
    fn cell_configs_carry_the_values_seed_and_run_folder() {
        let s = parse(GRID).unwrap();
        let cfgs = s.validate().unwrap();
        let c = &cfgs[3];
        assert_eq!(c.file.seed, 1);
        assert_eq!(c.file.optim.lr, 0.001);
        assert_eq!(
            c.run_dir,
            Path::new("results/sweeps/s/cells/difficulty=moderate,lr=0.001,seed=1")
        );
        assert_eq!(c.file.grpo.steps, 2);
    }

    const NAMED: &str =
        "base: {grpo: {drop_zero_std: true}}\naxes:\n  algorithm:\n    grpo: {}\n    \
                         ppo: {algorithm: ppo, grpo.drop_zero_std: false}\n    \
                         lite_ppo: {grpo.advantage_scale: batch}\n  \
                         env.difficulty: [moderate, hard]\n";

    #[test]
    fn a_named_axis_sets_each_values_overrides() {
        let s = parse(NAMED).unwrap();
        assert_eq!(s.axes[0].label, "algorithm");
        let names: Vec<&str> = s.cells.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names[0], "algorithm=grpo,difficulty=moderate,seed=0");
        assert_eq!(names[3], "algorithm=ppo,difficulty=hard,seed=0");
        assert_eq!(names[5], "algorithm=lite_ppo,difficulty=hard,seed=0");
        let cfgs = s.validate().unwrap();
        let (grpo, ppo, lite) = (&cfgs[0].file, &cfgs[3].file, &cfgs[5].file);
        assert_eq!(grpo.algorithm.to_string(), "grpo");
        assert!(grpo.grpo.drop_zero_std);
        assert_eq!(ppo.algorithm.to_string(), "ppo");
        assert!(!ppo.grpo.drop_zero_std);
        assert_eq!(ppo.env.difficulty.to_string(), "hard");
        assert_eq!(lite.algorithm.to_string(), "grpo");
        assert_eq!(lite.grpo.advantage_scale.to_string(), "batch");
        // Exclusions name the value by its name.
        let s = parse(&format!("{NAMED}exclude:\n  - {{algorithm: ppo}}\n")).unwrap();
        assert_eq!(s.cells.len(), 4);
    }

    #[test]
    fn a_named_axis_refuses_bad_values_and_keys_set_twice() {
        let e = err("base: {}\naxes:\n  algorithm: {ppo: 3}\n");
        assert!(
            e.contains("axes.algorithm.ppo: expected the overrides this value stands for"),
            "{e}"
        );
        let e = err("base: {}\naxes:\n  algorithm: {ppo: {seed: 3}}\n");
        assert!(
            e.contains("axes.algorithm.ppo.seed: `seed` is set by the sweep"),
            "{e}"
        );
        let e = err(
            "base: {}\naxes:\n  algorithm: {ppo: {env.difficulty: hard}}\n  \
             env.difficulty: [moderate]\n",
        );
        assert!(
            e.contains("axes.env.difficulty: `env.difficulty` is also set by the axis `algorithm`"),
            "{e}"
        );
        let e = err("base: {}\nset: {algorithm: grpo}\naxes:\n  a: {ppo: {algorithm: ppo}}\n");
        assert!(
            e.contains("axes.a: `algorithm` is also under `set:`"),
            "{e}"
        );
        let s = parse("base: {}\naxes:\n  algorithm: {x: {algorithm: sgd}}\n").unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains("axes.algorithm: the value `x` does not fit"),
            "{e}"
        );
    }
}
