//! `empathy-gym tables`: rewrite the headline tables of README.md and results/README.md from the
//! files they cite (`replay::headline`, `results/tables.yaml`).

use std::path::Path;

use clap::Args;
use empathy_gym::replay::headline;

#[derive(Debug, Args)]
pub struct TablesArgs {
    /// Write nothing; exit with an error when a committed table differs from what its files give.
    #[arg(long)]
    pub check: bool,
}

pub fn run(root: &Path, args: TablesArgs) -> anyhow::Result<()> {
    let mut stale = Vec::new();
    for (path, text) in headline::generate(root)? {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == text {
            println!("{}: up to date", path.display());
        } else if args.check {
            stale.push(path.display().to_string());
        } else {
            empathy_gym::sweep::state::write_atomic(&path, &text)?;
            println!("{}: tables rewritten", path.display());
        }
    }
    if !stale.is_empty() {
        anyhow::bail!(
            "stale headline tables in {}: run `{}`",
            stale.join(", "),
            headline::REGENERATE
        );
    }
    Ok(())
}
