//! `empathy-gym serve-env`: the environment over HTTP JSON (docs/SERVE.md).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use empathy_gym::environment::profile::{Catalog, Difficulty, Split};
use empathy_gym::serve::{env_server::summary_line, serve_env, EnvServerConfig};

use super::common::{load_chosen_simulator, select_profiles, SimulatorArgs};
use super::loading::prepare_simulator;
use super::server_args::GuardArgs;

#[derive(Debug, Args)]
pub struct ServeEnvArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port (0: any free port; the address is printed on the first line of stdout).
    #[arg(long, default_value_t = 8700)]
    pub port: u16,
    /// Append every finished episode here (JSONL, flushed per line; `replay` reads it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Most episodes held at once, live and finished (a create beyond it gets 429).
    #[arg(long, default_value_t = 1024)]
    pub max_sessions: usize,
    /// Seconds without a request after which an episode is dropped.
    #[arg(long, default_value_t = 600)]
    pub ttl_s: u64,
    /// Largest request body in bytes (413 beyond).
    #[arg(long, default_value_t = 65536)]
    pub max_body_bytes: usize,
    /// Seeds of episodes created without one derive from this and the episode number.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The records' `run` field.
    #[arg(long, default_value = "serve-env")]
    pub run: String,
    /// Most replies appraised in one batch.
    #[arg(long, default_value_t = 64)]
    pub max_batch: usize,
    /// Ready every profile of this split (train or test; repeat for both) before listening, as
    /// `train` does before its first step. Without it a profile is readied when an episode first
    /// asks for it, which adds that time (about a second a profile on two cores) to the create.
    #[arg(long)]
    pub prepare: Vec<Split>,
    #[command(flatten)]
    pub guard: GuardArgs,
    #[command(flatten)]
    pub sim: SimulatorArgs,
}

pub fn run(catalog_root: &Path, args: ServeEnvArgs) -> anyhow::Result<()> {
    let guard = args.guard.guard();
    guard.check("serve-env", SocketAddr::new(args.host, args.port))?;
    let catalog = Catalog::load(catalog_root)?;
    let sim = load_chosen_simulator(catalog_root, &args.sim)?;
    for &split in &args.prepare {
        let profiles = select_profiles(&catalog, None, Some(split), Difficulty::Moderate)?;
        prepare_simulator(false, sim.as_ref(), &profiles)?;
    }
    let cfg = EnvServerConfig {
        addr: SocketAddr::new(args.host, args.port),
        out: args.out,
        max_sessions: args.max_sessions.max(1),
        ttl: Duration::from_secs(args.ttl_s.max(1)),
        max_body_bytes: args.max_body_bytes,
        seed: args.seed,
        run: args.run,
        max_batch: args.max_batch.max(1),
        guard,
    };
    let summary = serve_env(catalog, sim, cfg, |addr| {
        use std::io::Write;
        println!("serve-env listening on http://{addr}");
        let _ = std::io::stdout().flush();
        eprintln!(
            "serve-env: stop with Ctrl-C or SIGTERM (finished episodes are already in the log)"
        );
    })?;
    println!("{}", summary_line(&summary));
    if let Some(u) = &summary.written.unwritten {
        anyhow::bail!(
            "serve-env: the episode log failed ({}); see the summary for where the {} episodes it could not take went",
            u.cause,
            u.count
        );
    }
    Ok(())
}
