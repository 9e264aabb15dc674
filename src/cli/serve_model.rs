//! `empathy-gym serve-model`: a model (base, checkpoint or export) behind an OpenAI-compatible
//! `/v1/chat/completions` and `/v1/models` (docs/SERVE.md).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use empathy_gym::model::{default_policy_path, load_model, LoadOptions};
use empathy_gym::serve::{serve_model, ModelServerConfig};

use super::server_args::GuardArgs;

#[derive(Debug, Args)]
pub struct ServeModelArgs {
    /// An HF folder (an `export` too) or a GGUF file (default: SmolLM2-135M-Instruct from models/).
    #[arg(long, conflicts_with = "checkpoint")]
    pub model: Option<PathBuf>,
    /// A training run (its latest checkpoint) or a checkpoint directory: the base with its adapters.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// The model id that /v1/models lists (default: the model's own name).
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port (0: any free port; the address is printed on the first line of stdout).
    #[arg(long, default_value_t = 8800)]
    pub port: u16,
    /// Most requests generated together in one batch.
    #[arg(long, default_value_t = 16)]
    pub max_batch: usize,
    /// Largest max_tokens a request may ask for (also the default).
    #[arg(long, default_value_t = 512)]
    pub max_tokens: usize,
    /// Largest request body in bytes (413 beyond).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Seeds of requests that give none derive from this and the request number.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most requests waiting for the model; more get 429 with Retry-After.
    #[arg(long, default_value_t = 256)]
    pub max_queue: usize,
    #[command(flatten)]
    pub guard: GuardArgs,
}

pub fn run(args: ServeModelArgs) -> anyhow::Result<()> {
    // Before the model loads: a refused bind should not wait for the weights.
    let guard = args.guard.guard();
    guard.check("serve-model", SocketAddr::new(args.host, args.port))?;
    let model = match &args.checkpoint {
        Some(dir) => empathy_gym::learning::train::load_checkpoint_policy(dir)?.0,
        None => {
            let path = args.model.clone().unwrap_or_else(default_policy_path);
            load_model(&path, &candle_core::Device::Cpu, &LoadOptions::default())?
        }
    };
    let name = args.name.clone().unwrap_or_else(|| model.name.clone());
    let cfg = ModelServerConfig {
        addr: SocketAddr::new(args.host, args.port),
        name: name.clone(),
        max_batch: args.max_batch.max(1),
        max_tokens: args.max_tokens.max(1),
        max_body_bytes: args.max_body_bytes,
        seed: args.seed,
        max_queue: args.max_queue.max(1),
        guard,
    };
    let summary = serve_model(model, cfg, |addr| {
        use std::io::Write;
        println!("serve-model listening on http://{addr} (model {name})");
        let _ = std::io::stdout().flush();
        eprintln!("serve-model: stop with Ctrl-C or SIGTERM");
    })?;
    println!(
        "serve-model: {} requests in {} batches (largest {}); {} dropped because their client hung up, {} turned away with 429 (queue full)",
        summary.requests, summary.batches, summary.largest_batch, summary.abandoned, summary.refused
    );
    if summary.cut_connections > 0 {
        println!(
            "serve-model: {} connections were still busy at the shutdown deadline (--shutdown-deadline-s) and were closed",
            summary.cut_connections
        );
    }
    Ok(())
}
