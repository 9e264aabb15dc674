//! Appraised turns per second for a batch of 64 live dialogues on CPU (issue: the simulator must
//! stay under 10% of a training step; target >= 100 turns/s on 2 cores).
//!
//! Run: `cargo bench --bench simulator` (fails, listing the places tried, without the embedder). Prints a markdown table (copy it into results/perf/simulator.md).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use empathy_test_support as common;

use empathy_gym::environment::episode::DialogueEnv;
use empathy_gym::environment::profile::{Catalog, Difficulty, KnobOverrides};
use empathy_gym::environment::reward::{Aggregate, RewardMode};
use empathy_gym::environment::sim::{Appraiser, Embedder};
use empathy_gym::model::DEFAULT_EMBEDDER;

const REPLIES: [&str; 6] = [
    "That sounds really hard, especially after everything with {s}. What has been the hardest part for you?",
    "It makes sense that you feel this way. How have you been holding up since {s}?",
    "You mentioned {s}. I wonder if part of what hurts is feeling like nobody noticed. What do you make of it?",
    "You should write everything down and make a plan for {s} tomorrow morning.",
    "At least it could be worse, lots of people deal with {s} every day.",
    "I hear how heavy {s} is. Would it help to talk through what matters most to you now?",
];

fn main() -> anyhow::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let catalog = Catalog::load(&root)?;
    let t0 = Instant::now();
    // A missing model is an error (non-zero exit, every place tried), never a silent skip.
    let dir = common::bench_model(DEFAULT_EMBEDDER)?;
    let embedder = Arc::new(Embedder::load(&dir, &candle_core::Device::Cpu)?);
    let sim = Appraiser::load(&root, embedder)?;
    let load_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let profiles = catalog
        .splits
        .train
        .iter()
        .map(|id| catalog.profile(id, Difficulty::Easy, &KnobOverrides::default()))
        .collect::<empathy_gym::Result<Vec<_>>>()?;
    sim.prepare(&profiles)?;
    let prepare_s = t1.elapsed().as_secs_f64();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!("| batch | turns appraised | wall s | turns/s (wall) | CPU s | turns/s on {cores} idle cores (from CPU time) | speaker s | speaker share |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for batch in [1usize, 16, 64] {
        let cpu0 = cpu_seconds();
        let (turns, secs, split) = run(&catalog, &sim, batch)?;
        let cpu = cpu_seconds() - cpu0;
        let n = turns as f64;
        println!(
            "| {batch} | {turns} | {secs:.2} | {:.1} | {cpu:.2} | {:.1} | {:.4} | {:.2}% |",
            n / secs,
            n * cores / cpu.max(1e-9),
            split.speak_s,
            100.0 * split.speak_s / (split.speak_s + split.appraise_s)
        );
    }
    let replies: Vec<String> = (0..64)
        .map(|i| {
            format!(
                "{} ({i})",
                REPLIES[i % REPLIES.len()].replace("{s}", "the move")
            )
        })
        .collect();
    let refs: Vec<&str> = replies.iter().map(String::as_str).collect();
    let (cpu0, t2) = (cpu_seconds(), Instant::now());
    sim.embedder().embed(&refs)?;
    println!(
        "\nembedding 64 fresh replies alone: {:.3} s wall, {:.2} s CPU",
        t2.elapsed().as_secs_f64(),
        cpu_seconds() - cpu0
    );
    println!("simulator load (embedder + move prototypes): {load_s:.2} s; prepare (every user sentence of the train split): {prepare_s:.2} s");
    Ok(())
}

/// CPU time of this process (user + system) from /proc/self/stat, in seconds. On a shared machine
/// the wall clock overstates the cost, so the table shows both; "turns/s on idle cores" assumes
/// the work spreads over every core, an upper bound.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

/// Plays `batch` dialogues for up to 8 turns with fresh (uncached) replies; returns turns and seconds.
fn run(catalog: &Catalog, sim: &Appraiser, batch: usize) -> anyhow::Result<(usize, f64, Split)> {
    let ids = &catalog.splits.train;
    let mut envs: Vec<DialogueEnv> = (0..batch)
        .map(|i| {
            let p = catalog.profile(
                &ids[i % ids.len()],
                Difficulty::Easy,
                &KnobOverrides::default(),
            )?;
            let mut env = DialogueEnv::new(p, RewardMode::Behavior, Aggregate::Final);
            env.reset(i as u64);
            Ok(env)
        })
        .collect::<empathy_gym::Result<_>>()?;
    let (mut turns, start) = (0usize, Instant::now());
    let mut split = Split::default();
    for t in 0..8 {
        let live: Vec<&mut DialogueEnv> = envs.iter_mut().filter(|e| !e.is_done()).collect();
        if live.is_empty() {
            break;
        }
        let replies: Vec<(String, Option<String>)> = live
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let s = &e.profile().scenario.specifics[t % e.profile().scenario.specifics.len()];
                (
                    format!(
                        "{} ({batch}-{t}-{i})",
                        REPLIES[(i + t) % REPLIES.len()].replace("{s}", s)
                    ),
                    None,
                )
            })
            .collect();
        turns += live.len();
        // step_batch's two halves, timed apart: the appraisal of the whole batch, then each
        // dialogue's update (emotion, end, and the speaker's next message).
        let t_appraise = Instant::now();
        let appraisals = {
            let inputs = live
                .iter()
                .zip(&replies)
                .map(|(e, (r, _))| e.appraisal_input(r))
                .collect::<empathy_gym::Result<Vec<_>>>()?;
            sim.appraise(&inputs)?
        };
        split.appraise_s += t_appraise.elapsed().as_secs_f64();
        let t_speak = Instant::now();
        for ((e, (r, _)), a) in live.into_iter().zip(&replies).zip(appraisals) {
            e.apply(r, None, a);
        }
        split.speak_s += t_speak.elapsed().as_secs_f64();
    }
    Ok((turns, start.elapsed().as_secs_f64(), split))
}

/// Where a step's simulator time goes.
#[derive(Default)]
struct Split {
    appraise_s: f64,
    /// `DialogueEnv::apply`: the emotion update and the speaker.
    speak_s: f64,
}
