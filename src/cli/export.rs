//! `empathy-gym export`: merge a run's trained adapters into an HF model folder.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run directory (results/<run>).
    pub run_dir: PathBuf,
    /// Where to write the HF folder (config.json, model.safetensors, tokenizer files).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: ExportArgs) -> anyhow::Result<()> {
    let ckpt = empathy_gym::learning::train::export_run(&args.run_dir, &args.out)?;
    println!(
        "exported {} merged into {}",
        ckpt.display(),
        args.out.display()
    );
    Ok(())
}
