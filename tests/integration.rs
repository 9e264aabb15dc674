//! The one integration test target: each module below is one area of the crate.

use empathy_test_support::tiny_model as model_fixtures;

/// The CPU thread counts the `empathy-gym` binary sets first thing in `main`
/// (`empathy_engine::threads`), set here before the test harness starts its threads, so the tests
/// run the models as the binary does. Without them, on 2 cores, candle's elementwise pool spins
/// beside the matmul pool and each matmul re-reads /proc/cpuinfo (measured in results/perf/ci.md).
#[ctor::ctor(unsafe)]
fn thread_counts_as_the_binary_sets_them() {
    empathy_gym::model::fix_thread_count();
}

#[path = "integration/algorithms.rs"]
mod algorithms;
#[path = "integration/cited_paths.rs"]
mod cited_paths;
#[path = "integration/cli.rs"]
mod cli;
#[path = "integration/common.rs"]
mod common;
#[path = "integration/config_reference.rs"]
mod config_reference;
#[path = "integration/conformance.rs"]
mod conformance;
#[path = "integration/costs.rs"]
mod costs;
#[cfg(feature = "cuda")]
#[path = "integration/cuda.rs"]
mod cuda;
#[path = "integration/embedder.rs"]
mod embedder;
#[path = "integration/episode_log.rs"]
mod episode_log;
#[path = "integration/factual.rs"]
mod factual;
#[path = "integration/faithful.rs"]
mod faithful;
#[path = "integration/fluency.rs"]
mod fluency;
#[path = "integration/fuzz_mutators.rs"]
mod fuzz_mutators;
#[path = "integration/fuzz_smoke.rs"]
mod fuzz_smoke;
#[path = "integration/grpo.rs"]
mod grpo;
#[path = "integration/honest.rs"]
mod honest;
#[path = "integration/house_docs.rs"]
mod house_docs;
#[path = "integration/judge.rs"]
mod judge;
#[path = "integration/layers.rs"]
mod layers;
#[path = "integration/llm_sim.rs"]
mod llm_sim;
#[path = "integration/llm_sim_transport.rs"]
mod llm_sim_transport;
#[path = "integration/locate.rs"]
mod locate;
#[path = "integration/lora.rs"]
mod lora;
#[path = "integration/model.rs"]
mod model;
#[path = "integration/pmi.rs"]
mod pmi;
#[path = "integration/rate_page.rs"]
mod rate_page;
#[path = "integration/readme.rs"]
mod readme;
#[path = "integration/redteam.rs"]
mod redteam;
#[path = "integration/replay_html.rs"]
mod replay_html;
#[path = "integration/replay_stats.rs"]
mod replay_stats;
#[path = "integration/responsive.rs"]
mod responsive;
#[path = "integration/restated.rs"]
mod restated;
#[path = "integration/safety.rs"]
mod safety;
#[path = "integration/sanity.rs"]
mod sanity;
#[path = "integration/serve_env.rs"]
mod serve_env;
#[path = "integration/serve_model.rs"]
mod serve_model;
#[path = "integration/server_limits.rs"]
mod server_limits;
#[path = "integration/servers.rs"]
mod servers;
#[path = "integration/sft.rs"]
mod sft;
#[path = "integration/source_enums.rs"]
mod source_enums;
#[path = "integration/speaker.rs"]
mod speaker;
#[path = "integration/stand_in.rs"]
mod stand_in;
#[path = "integration/sweep.rs"]
mod sweep;
#[path = "integration/tables.rs"]
mod tables;
#[path = "integration/train.rs"]
mod train;
#[path = "integration/train_cli.rs"]
mod train_cli;
#[path = "integration/wording.rs"]
mod wording;
#[path = "integration/words.rs"]
mod words;
