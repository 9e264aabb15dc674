//! Sweeps (docs/DESIGN.md section 21, docs/SWEEPS.md): a grid of training runs over dotted config
//! keys and seeds, described by one YAML file. Each cell is a normal run directory under
//! `DIR/cells/NAME/` plus its evaluations; `sweep run` executes cells locally, `sweep slurm` writes
//! an sbatch array with one task per cell, and both run the same `sweep cell`. `sweep collect`
//! aggregates.

pub mod cell;
pub mod collect;
pub mod grid;
pub mod seed_stats;
pub mod slurm;
pub mod spec;
pub mod state;
pub mod summary;

pub use cell::Cell;
pub use grid::Axis;
pub use spec::{Base, EvalSpec, Sweep};
pub use state::{read_state, CellState, DoneMarker};

/// A cell's `eval empathy` folder.
pub const EMPATHY_DIR: &str = "eval-empathy";
/// A cell's `eval factual` folder.
pub const FACTUAL_DIR: &str = "eval-factual";
/// The base models' evaluations, one folder per model, under the sweep folder.
pub const BASE_DIR: &str = "base";
/// The copy of the sweep file kept in the sweep folder (what `collect` and `status` read).
pub const SWEEP_COPY: &str = "sweep.yaml";
