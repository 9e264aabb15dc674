//! The command line (part of the binary, so it may use anyhow): one subcommand per file, and `run`
//! is one `match`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod chat;
mod common;
mod eval;
mod export;
mod judge;
mod judge_agreement;
mod loading;
mod perception;
mod redteam;
mod redteam_search;
mod replay;
mod rollout;
mod run_args;
mod safety;
mod serve_env;
mod serve_model;
mod server_args;
mod sft;
mod summary;
mod sweep;
mod tables;
mod train;
mod validate;

/// RLVER-style training and auditing of empathetic dialogue models.
#[derive(Debug, Parser)]
#[command(name = "empathy-gym", version, about)]
pub struct Cli {
    /// Folder holding scenarios/, personas/ and data/.
    #[arg(long, global = true, default_value = ".", env = "EMPATHY_GYM_CATALOG")]
    pub catalog: PathBuf,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lint every scenario, persona, the split and the difficulty presets.
    Validate,
    /// Play a scripted policy against the simulated user and log the dialogues as JSONL.
    Rollout(rollout::RolloutArgs),
    /// Talk to a model, or watch it talk with a simulated user (--profile).
    Chat(chat::ChatArgs),
    /// Evaluate models: the SAGE-style empathy score.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Play adversarial policies against the reward beside the honest references and check the
    /// margins (writes results/redteam/summary.md).
    Redteam(redteam::RedteamArgs),
    /// Show, verify or re-score logged dialogues.
    #[command(subcommand)]
    Replay(replay::ReplayCommand),
    /// Train the policy with GRPO against the simulated user.
    Train(train::TrainArgs),
    /// Fine-tune the policy on the supporter turns of human support dialogues (the warm start
    /// before train).
    Sft(sft::SftArgs),
    /// Judge conversations from elsewhere with the simulated user, and check it against people.
    #[command(subcommand)]
    Judge(judge::JudgeCommand),
    /// Fit the safety screen's learned head, or measure the screen (docs/VALIDATION.md).
    #[command(subcommand)]
    Safety(safety::SafetyCommand),
    /// Fit perception's learned heads from EPITOME and ESConv and report them on what they
    /// never fit.
    #[command(subcommand)]
    Perception(perception::PerceptionCommand),
    /// Merge a run's adapters into an HF model folder.
    Export(export::ExportArgs),
    /// Grids of training runs: run locally or as a Slurm array, status, collect.
    #[command(subcommand)]
    Sweep(sweep::SweepCommand),
    /// Serve the environment over HTTP JSON (create episode, step, fetch the record).
    ServeEnv(serve_env::ServeEnvArgs),
    /// Serve a model behind an OpenAI-compatible /v1/chat/completions with batching.
    ServeModel(serve_model::ServeModelArgs),
    /// Rewrite the headline tables of README.md and results/README.md from the files they cite
    /// (results/tables.yaml).
    Tables(tables::TablesArgs),
}

/// Runs one parsed command line. Everything but the servers runs on a worker of rayon's pool,
/// where candle's matmuls run (`model::threads`); the servers keep tokio on this thread.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if matches!(cli.command, Command::ServeEnv(_) | Command::ServeModel(_)) {
        dispatch(cli)
    } else {
        empathy_gym::model::on_compute_pool(|| dispatch(cli))
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Validate => validate::run(&cli.catalog),
        Command::Rollout(args) => rollout::run(&cli.catalog, args),
        Command::Replay(cmd) => replay::run(&cli.catalog, cmd),
        Command::Redteam(args) => redteam::run(&cli.catalog, args),
        Command::Eval(cmd) => eval::run(&cli.catalog, cmd),
        Command::Chat(args) => chat::run(&cli.catalog, args),
        Command::Train(args) => train::run(&cli.catalog, args),
        Command::Sft(args) => sft::run(args),
        Command::Export(args) => export::run(args),
        Command::Judge(cmd) => judge::run(&cli.catalog, cmd),
        Command::Safety(cmd) => safety::run(&cli.catalog, cmd),
        Command::Perception(cmd) => perception::run(&cli.catalog, cmd),
        Command::Sweep(cmd) => sweep::run(&cli.catalog, cmd),
        Command::ServeEnv(args) => serve_env::run(&cli.catalog, args),
        Command::ServeModel(args) => serve_model::run(args),
        Command::Tables(args) => tables::run(&cli.catalog, args),
    }
}
