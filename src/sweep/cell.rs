//! Cells: one training run per combination of axis values and seed, named from those values so
//! the same sweep file always gives the same names and indices.

use serde_yaml::Value;

use super::grid::{show, Axis, Exclude};

/// One cell of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position among the cells that run (the Slurm array index).
    pub index: usize,
    /// `label=value,...,seed=N`: the folder name under `DIR/cells/`.
    pub name: String,
    /// (dotted key, value) per axis, in axis order.
    pub values: Vec<(String, Value)>,
    /// The run seed.
    pub seed: u64,
}

impl Cell {
    /// The cell's combination without the seed (`difficulty=hard,lr=0.001`): cells that differ only
    /// in their seed share it.
    pub fn combination(&self) -> String {
        match self.name.rsplit_once(",seed=") {
            Some((combo, _)) => combo.to_string(),
            None => String::new(),
        }
    }
}

/// A value as a piece of a folder name: letters, digits, `.`, `_`, `+`, `-` kept, anything else
/// replaced by `-`.
pub fn fragment(v: &Value) -> String {
    show(v)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Every combination of the axes' values (first axis outermost) times every seed (innermost),
/// minus the excluded ones, numbered from 0.
pub fn expand(axes: &[Axis], seeds: &[u64], excludes: &[Exclude]) -> Vec<Cell> {
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for axis in axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                (0..axis.values.len()).map(move |i| {
                    let mut next = c.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    let excluded = |combo: &[usize]| {
        excludes
            .iter()
            .any(|ex| ex.iter().all(|(a, v)| &axes[*a].values[combo[*a]] == v))
    };
    let mut cells = Vec::new();
    for combo in combos.iter().filter(|c| !excluded(c)) {
        let values: Vec<(String, Value)> = combo
            .iter()
            .zip(axes)
            .map(|(&i, a)| (a.key.clone(), a.values[i].clone()))
            .collect();
        let parts: Vec<String> = combo
            .iter()
            .zip(axes)
            .map(|(&i, a)| format!("{}={}", a.label, fragment(&a.values[i])))
            .collect();
        for &seed in seeds {
            let mut name = parts.join(",");
            name.push_str(&format!(",seed={seed}"));
            cells.push(Cell {
                index: cells.len(),
                name,
                values: values.clone(),
                seed,
            });
        }
    }
    cells
}

/// `cells` reordered seed by seed (every combination at the sweep's first seed, then at its
/// second, ...), index order within a seed: a first look at the whole grid before the repeats.
pub fn seed_major<'a>(mut cells: Vec<&'a Cell>, seeds: &[u64]) -> Vec<&'a Cell> {
    let rank = |c: &Cell| {
        seeds
            .iter()
            .position(|&s| s == c.seed)
            .unwrap_or(seeds.len())
    };
    cells.sort_by_key(|c| (rank(c), c.index));
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_major_runs_every_combination_at_a_seed_first() {
        let axis = Axis {
            key: "x".into(),
            label: "x".into(),
            values: vec![Value::from(1), Value::from(2)],
            bundles: vec![],
        };
        let cells = expand(&[axis], &[7, 3], &[]);
        let names = |cs: Vec<&Cell>| cs.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(cells.iter().collect()),
            ["x=1,seed=7", "x=1,seed=3", "x=2,seed=7", "x=2,seed=3"]
        );
        assert_eq!(
            names(seed_major(cells.iter().collect(), &[7, 3])),
            ["x=1,seed=7", "x=2,seed=7", "x=1,seed=3", "x=2,seed=3"]
        );
    }

    #[test]
    fn fragments_keep_safe_characters_only() {
        let v = |t: &str| serde_yaml::from_str::<Value>(t).unwrap();
        assert_eq!(fragment(&v("hard")), "hard");
        assert_eq!(fragment(&v("0.0001")), "0.0001");
        assert_eq!(fragment(&v("1e-4")), "0.0001");
        assert_eq!(fragment(&v("'1e-4'")), "1e-4");
        assert_eq!(fragment(&v("[q, v]")), "--q---v--");
        assert_eq!(fragment(&v("a/b c")), "a-b-c");
    }

    #[test]
    fn the_combination_drops_the_seed() {
        let c = Cell {
            index: 0,
            name: "difficulty=hard,lr=0.001,seed=2".into(),
            values: vec![],
            seed: 2,
        };
        assert_eq!(c.combination(), "difficulty=hard,lr=0.001");
    }
}
