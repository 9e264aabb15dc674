//! Run and sweep files: a training config (`TrainConfig::load`, as `train --config` reads it,
//! and the resolved config it writes into the run folder read back as `train --resume` does)
//! and a sweep file (`Sweep::load`, then every cell's config resolved as `sweep run` does
//! before anything runs).

use std::path::Path;

use empathy_gym::learning::train::TrainConfig;
use empathy_gym::sweep::spec::{Base, Sweep};

use crate::fuzz::context::{files_in, files_under, read_all};
use crate::fuzz::target::Broken;
use crate::fuzz::{FuzzContext, Kind, Target};

/// Config files are small; a larger file is not a useful seed.
const MAX_SEED: u64 = 256 << 10;
/// A sweep with more cells is parsed but its cells are not resolved (each resolution parses the
/// base config again, so a mutant with thousands of cells would be slow).
const MAX_CELLS: usize = 64;
/// A base config larger than this is not read (a path may name any file).
const MAX_BASE: u64 = 1 << 20;

/// `train_config`: a training config file.
pub fn train_config(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("train_config")?;
    let mut files = vec![ctx.repo("configs/quickstart.yaml")];
    files.extend(files_in(&ctx.repo("configs/algorithms"), ".yaml"));
    let mut resolved = files_under(&ctx.repo("results/runs"), "/config.yaml");
    resolved.truncate(8);
    files.extend(resolved);
    let seeds = read_all(&files, MAX_SEED);
    let path = dir.join("config.yaml");
    Target::new("train_config", Kind::Yaml, seeds, move |input| {
        std::fs::write(&path, input)?;
        let cfg = TrainConfig::load(&path, &[])?;
        cfg.batch_size();
        // Compared as text: a NaN the config holds is equal to itself there.
        let yaml = cfg.to_yaml()?;
        match TrainConfig::from_yaml(&yaml, &path, &[]).and_then(|back| back.to_yaml()) {
            Ok(again) if again == yaml => Ok(()),
            Ok(_) => Err(Broken("the resolved config reads back different".into()).into()),
            Err(e) => Err(Broken(format!("the resolved config does not read back: {e}")).into()),
        }
    })
}

/// `sweep_yaml`: a sweep file.
pub fn sweep(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("sweep_yaml")?;
    let mut files = files_under(&ctx.repo("results"), "/sweep.yaml");
    files.extend(files_under(&ctx.repo("results"), "/learnability.yaml"));
    let seeds = read_all(&files, MAX_SEED);
    let path = dir.join("sweep.yaml");
    Target::new("sweep_yaml", Kind::Yaml, seeds, move |input| {
        std::fs::write(&path, input)?;
        let sweep = Sweep::load(&path)?;
        for cell in &sweep.cells {
            sweep.cell_dir(cell);
        }
        let readable = match &sweep.base {
            Base::Inline(_) => true,
            Base::File(p) => is_small_file(p),
        };
        if readable && sweep.cells.len() <= MAX_CELLS {
            sweep.validate()?;
        }
        Ok(())
    })
}

fn is_small_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() <= MAX_BASE)
}
