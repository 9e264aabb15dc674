//! `sweep cell FILE --index I`: one cell from start to finish. Trains (continuing from the last
//! checkpoint when the cell was interrupted), evaluates the base model once per sweep (the first
//! cell to need it does it, under a lock; the others wait), evaluates the trained policy, and
//! writes the `done` marker last. A failure leaves a `failed` marker with the error.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use empathy_gym::learning::train::run_files::{CONFIG_FILE, METRICS_FILE};
use empathy_gym::learning::train::TrainConfig;
use empathy_gym::sweep::collect::{BASE, TRAINED};
use empathy_gym::sweep::state::{started_with, write_atomic, write_done, DoneMarker, FAILED_FILE};
use empathy_gym::sweep::{read_state, CellState, Sweep, EMPATHY_DIR, FACTUAL_DIR};

use super::{base_of, prepare};
use crate::cli::eval::{empathy, factual, EmpathyArgs, FactualArgs};

/// The lock file of a cell or of a base evaluation.
const LOCK_FILE: &str = ".lock";

pub fn run(catalog_root: &Path, file: &Path, index: usize, quiet: bool) -> anyhow::Result<()> {
    let (sweep, configs) = prepare(file)?;
    let Some(cell) = sweep.cells.get(index) else {
        anyhow::bail!(empathy_gym::Error::input(
            file,
            "--index",
            format!(
                "there is no cell {index}: the sweep has {} cells (0 to {})",
                sweep.cells.len(),
                sweep.cells.len() - 1
            )
        ));
    };
    let cfg = configs[index].clone();
    let dir = sweep.cell_dir(cell);
    if let CellState::Done(_) = read_state(&dir, cfg.file.grpo.steps)? {
        println!("cell {} is already done", cell.name);
        return Ok(());
    }
    std::fs::create_dir_all(&dir)?;
    let lock = File::create(dir.join(LOCK_FILE))?;
    if lock.try_lock().is_err() {
        anyhow::bail!(
            "cell {} is already running (another process holds {})",
            cell.name,
            dir.join(LOCK_FILE).display()
        );
    }
    let _ = std::fs::remove_file(dir.join(FAILED_FILE));
    println!("cell {index}: {}", cell.name);
    let result = train_and_evaluate(catalog_root, &sweep, cfg, &cell.name, quiet);
    if let Err(e) = &result {
        write_atomic(&dir.join(FAILED_FILE), &format!("{e:#}\n"))?;
    }
    result
}

fn train_and_evaluate(
    catalog_root: &Path,
    sweep: &Sweep,
    cfg: TrainConfig,
    name: &str,
    quiet: bool,
) -> anyhow::Result<()> {
    let dir = cfg.run_dir.clone();
    let resume = dir.join(METRICS_FILE).is_file();
    if resume && !started_with(&dir, &cfg) {
        anyhow::bail!(empathy_gym::Error::input(
            dir.join(CONFIG_FILE),
            "document",
            format!(
                "cell {name} was started with another config than {} gives it now; \
                 delete the cell's folder to start it again, or restore the sweep file",
                sweep.file.display()
            )
        ));
    }
    let base = base_of(sweep, &cfg);
    let model_path = cfg.model_path.clone();
    let steps = super::super::train::train(catalog_root, cfg, resume, None, quiet)?;
    let started = Instant::now();
    if sweep.eval.any() {
        evaluate_base(catalog_root, sweep, &base, &model_path)?;
    }
    if let Some(e) = &sweep.eval.empathy {
        let mut argv = empathy_argv(e, &dir.join(EMPATHY_DIR));
        argv.extend(["--no-base".into(), "--checkpoint".into()]);
        argv.push(format!("{TRAINED}={}", dir.display()));
        empathy(catalog_root, &parse::<EmpathyCli>(&argv)?.args)?;
    }
    if let Some(f) = &sweep.eval.factual {
        let mut argv = factual_argv(catalog_root, f, &dir.join(FACTUAL_DIR));
        argv.push("--checkpoint".into());
        argv.push(format!("{TRAINED}={}", dir.display()));
        argv.push("--baseline".into());
        let answers = base.join(FACTUAL_DIR).join("answers-0.jsonl");
        argv.push(format!("{BASE}={}", answers.display()));
        factual(&parse::<FactualCli>(&argv)?.args)?;
    }
    write_done(
        &dir,
        &DoneMarker {
            cell: name.to_string(),
            steps,
            eval_s: started.elapsed().as_secs_f64(),
        },
    )?;
    println!("cell {name} done");
    Ok(())
}

/// The base model's evaluations, once per sweep and model: the first cell to get the lock runs
/// them and writes `done`; cells that come later find it.
fn evaluate_base(
    catalog_root: &Path,
    sweep: &Sweep,
    base: &Path,
    model_path: &Path,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(base)?;
    let lock = File::create(base.join(LOCK_FILE))?;
    lock.lock()
        .with_context(|| format!("locking {}", base.display()))?;
    if base.join("done").is_file() {
        return Ok(());
    }
    println!("evaluating the base model {}", model_path.display());
    let model = model_path.display().to_string();
    if let Some(e) = &sweep.eval.empathy {
        let mut argv = empathy_argv(e, &base.join(EMPATHY_DIR));
        argv.extend(["--model".into(), model.clone()]);
        empathy(catalog_root, &parse::<EmpathyCli>(&argv)?.args)?;
    }
    if let Some(f) = &sweep.eval.factual {
        let mut argv = factual_argv(catalog_root, f, &base.join(FACTUAL_DIR));
        argv.extend(["--model".into(), model]);
        factual(&parse::<FactualCli>(&argv)?.args)?;
    }
    write_atomic(&base.join("done"), "")?;
    Ok(())
}

/// `eval empathy`'s own command line, so the sweep uses its defaults (sampling, protocol).
#[derive(Parser)]
struct EmpathyCli {
    #[command(flatten)]
    args: EmpathyArgs,
}

#[derive(Parser)]
struct FactualCli {
    #[command(flatten)]
    args: FactualArgs,
}

fn parse<T: Parser>(argv: &[String]) -> anyhow::Result<T> {
    T::try_parse_from(std::iter::once("eval".to_string()).chain(argv.iter().cloned()))
        .map_err(|e| anyhow::anyhow!("evaluation settings: {e}"))
}

fn empathy_argv(e: &empathy_gym::sweep::spec::EmpathyEval, out: &Path) -> Vec<String> {
    let mut argv = vec![
        "--split".to_string(),
        e.split.to_string(),
        "--seed".into(),
        e.seed.to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    if let Some(n) = e.limit {
        argv.extend(["--limit".into(), n.to_string()]);
    }
    argv
}

fn factual_argv(
    catalog_root: &Path,
    f: &empathy_gym::sweep::spec::FactualEval,
    out: &Path,
) -> Vec<String> {
    let data = catalog_root.join("data");
    let mut argv = vec![
        "--qa".to_string(),
        data.join("qa/factual.jsonl").display().to_string(),
        "--contexts".into(),
        data.join("factual/contexts.yaml").display().to_string(),
        "--seed".into(),
        f.seed.to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    if let Some(n) = f.limit {
        argv.extend(["--limit".into(), n.to_string()]);
    }
    if let Some(n) = f.sample {
        argv.extend(["--sample".into(), n.to_string()]);
    }
    argv
}
