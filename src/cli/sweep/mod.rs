//! `empathy-gym sweep`: run a grid of training runs locally or as a Slurm array, see where it
//! stands, and collect it into one table and plots (docs/SWEEPS.md).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use empathy_gym::learning::train::run_files::CONFIG_FILE;
use empathy_gym::learning::train::TrainConfig;
use empathy_gym::report::Table;
use empathy_gym::sweep::collect::{base_dir, collect_base, collect_cells};
use empathy_gym::sweep::slurm::{sbatch_script, ScriptPaths, SBATCH_FILE, SLURM_LOG_DIR};
use empathy_gym::sweep::state::write_atomic;
use empathy_gym::sweep::summary::{subfolders, summary_table, write_summary};
use empathy_gym::sweep::{read_state, Cell, Sweep, BASE_DIR, SWEEP_COPY};

mod cell;
mod local;

#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Run the cells on this machine, N at a time: finished cells are skipped, interrupted ones
    /// continue from their last checkpoint.
    Run(RunArgs),
    /// Run one cell (train, then the evaluations): what `sweep run` and each Slurm task execute.
    Cell(CellArgs),
    /// Write DIR/sweep.sbatch: a Slurm job array with one task per cell.
    Slurm(SlurmArgs),
    /// Where each cell stands.
    Status(StatusArgs),
    /// summary.csv, summary.md and plots from every cell of a sweep folder.
    Collect(CollectArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The sweep file (see docs/SWEEPS.md).
    pub file: PathBuf,
    /// Cells at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Run every combination at the first seed before any at the next (a first look at the
    /// whole grid early); default: index order.
    #[arg(long)]
    pub seeds_first: bool,
}

#[derive(Debug, Args)]
pub struct CellArgs {
    /// The sweep file.
    pub file: PathBuf,
    /// Which cell (0-based, as `sweep status` lists them; the Slurm array index).
    #[arg(long)]
    pub index: usize,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// The sweep file.
    pub file: PathBuf,
    /// Also submit the script with sbatch.
    #[arg(long)]
    pub submit: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A sweep file or a sweep folder.
    pub target: PathBuf,
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// The sweep folder (the sweep file's `dir`, by default results/sweeps/NAME).
    pub dir: PathBuf,
}

pub fn run(catalog_root: &Path, cmd: SweepCommand) -> anyhow::Result<()> {
    match cmd {
        SweepCommand::Run(a) => local::run(catalog_root, &a.file, a.jobs, a.seeds_first),
        SweepCommand::Cell(a) => cell::run(catalog_root, &a.file, a.index, a.quiet),
        SweepCommand::Slurm(a) => slurm(catalog_root, &a.file, a.submit),
        SweepCommand::Status(a) => status(&a.target),
        SweepCommand::Collect(a) => collect(&a.dir),
    }
}

/// Loads and validates the sweep file, creates its folder and keeps a copy of the file there.
/// Returns the sweep and every cell's resolved config, in cell order.
fn prepare(file: &Path) -> anyhow::Result<(Sweep, Vec<TrainConfig>)> {
    let sweep = Sweep::load(file)?;
    let configs = sweep.validate()?;
    std::fs::create_dir_all(&sweep.dir)
        .with_context(|| format!("creating {}", sweep.dir.display()))?;
    let copy = sweep.dir.join(SWEEP_COPY);
    if !same_file(file, &copy) {
        let text = std::fs::read_to_string(file)?;
        write_atomic(&copy, &text)?;
    }
    Ok((sweep, configs))
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// A sweep from its file, or from the copy in its folder (then the folder is where it lives).
fn load_target(target: &Path) -> anyhow::Result<Sweep> {
    if target.is_dir() {
        let copy = target.join(SWEEP_COPY);
        if !copy.is_file() {
            anyhow::bail!(empathy_gym::Error::input(
                target,
                SWEEP_COPY,
                "not a sweep folder: it has no sweep.yaml (run the sweep first, or give the sweep file)"
            ));
        }
        let mut sweep = Sweep::load(&copy)?;
        sweep.dir = target.to_path_buf();
        Ok(sweep)
    } else {
        Ok(Sweep::load(target)?)
    }
}

/// The training steps of a cell, from the config it was started with (0 before it started).
fn steps_of(sweep: &Sweep) -> impl Fn(&Cell) -> u64 + '_ {
    move |c| {
        TrainConfig::load(&sweep.cell_dir(c).join(CONFIG_FILE), &[])
            .map_or(0, |cfg| cfg.file.grpo.steps)
    }
}

fn slurm(catalog_root: &Path, file: &Path, submit: bool) -> anyhow::Result<()> {
    let (sweep, _) = prepare(file)?;
    let abs =
        |p: &Path| std::path::absolute(p).with_context(|| format!("resolving {}", p.display()));
    std::fs::create_dir_all(sweep.dir.join(SLURM_LOG_DIR))?;
    let (exe, catalog) = (std::env::current_exe()?, abs(catalog_root)?);
    let (sweep_file, workdir, sweep_dir) = (abs(file)?, std::env::current_dir()?, abs(&sweep.dir)?);
    let script = sbatch_script(
        &sweep,
        &ScriptPaths {
            exe: &exe,
            catalog: &catalog,
            sweep_file: &sweep_file,
            workdir: &workdir,
            sweep_dir: &sweep_dir,
        },
    );
    let path = sweep.dir.join(SBATCH_FILE);
    write_atomic(&path, &script)?;
    println!(
        "wrote {}: {} cells, one array task each (output in {}/)",
        path.display(),
        sweep.cells.len(),
        sweep.dir.join(SLURM_LOG_DIR).display()
    );
    if submit {
        let out = std::process::Command::new("sbatch")
            .arg(&path)
            .output()
            .context("running sbatch (is Slurm installed on this machine?)")?;
        if !out.status.success() {
            anyhow::bail!(
                "sbatch refused {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        print!("{}", String::from_utf8_lossy(&out.stdout));
    } else {
        println!("submit it with: sbatch {}", path.display());
    }
    println!(
        "then: empathy-gym sweep status {} ; empathy-gym sweep collect {}",
        sweep.dir.display(),
        sweep.dir.display()
    );
    Ok(())
}

fn status(target: &Path) -> anyhow::Result<()> {
    let sweep = load_target(target)?;
    let steps = steps_of(&sweep);
    let mut t = Table::new(["index", "cell", "state"]);
    let mut done = 0;
    for c in &sweep.cells {
        let state = read_state(&sweep.cell_dir(c), steps(c))?;
        done += usize::from(state.word() == "done");
        t.push_row([c.index.to_string(), c.name.clone(), state.to_string()]);
    }
    println!("{}", t.to_markdown());
    println!(
        "sweep {}: {done} of {} cells done ({})",
        sweep.name,
        sweep.cells.len(),
        sweep.dir.display()
    );
    Ok(())
}

fn collect(dir: &Path) -> anyhow::Result<()> {
    let sweep = load_target(dir)?;
    let results = collect_cells(&sweep, steps_of(&sweep))?;
    let mut base = Vec::new();
    for d in subfolders(&sweep.dir.join(BASE_DIR))? {
        base.extend(collect_base(&d)?);
    }
    let files = write_summary(&sweep, &results, &base)?;
    let done = results.iter().filter(|r| r.is_finished()).count();
    println!("{}", summary_table(&sweep, &results).to_markdown());
    println!("{done} of {} cells done; wrote:", results.len());
    for f in files {
        println!("  {}", f.display());
    }
    Ok(())
}

/// The base model's evaluation folder for a cell's config.
fn base_of(sweep: &Sweep, cfg: &TrainConfig) -> PathBuf {
    base_dir(&sweep.dir, &cfg.model_path)
}
