//! The summary table printed at the end of a rollout, replay or eval.

use empathy_gym::environment::episode::{End, EpisodeRecord};

/// Prints mean reward, mean final emotion and the end counts.
pub fn print_summary(records: &[EpisodeRecord]) {
    let n = records.len().max(1) as f64;
    let mean_reward = records.iter().map(|r| r.reward.unwrap_or(0.0)).sum::<f64>() / n;
    let mean_final = records
        .iter()
        .map(|r| f64::from(r.final_emotion()))
        .sum::<f64>()
        / n;
    let count = |e: End| records.iter().filter(|r| r.end == Some(e)).count();
    println!();
    println!(
        "| episodes | mean reward | mean final emotion | resolved | left | max_turns | unsafe |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {:.3} | {:.1} | {} | {} | {} | {} |",
        records.len(),
        mean_reward,
        mean_final,
        count(End::Resolved),
        count(End::Left),
        count(End::MaxTurns),
        count(End::Unsafe)
    );
}

/// For an LLM simulator: how many of its answers were malformed or failed (each logged in the
/// user turn's `appraisal.llm`), and how many turns fell back.
pub fn print_simulator_failures(records: &[EpisodeRecord]) {
    if !records.iter().any(|r| r.simulator.kind == "llm") {
        return;
    }
    let failures: usize = records.iter().map(EpisodeRecord::simulator_failures).sum();
    let fallbacks: usize = records
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| match t {
            empathy_gym::environment::episode::Turn::User {
                appraisal: Some(a), ..
            } => a
                .llm
                .as_ref()
                .is_some_and(|l| l.fallback_change || l.fallback_reply),
            _ => false,
        })
        .count();
    println!(
        "LLM simulator: {failures} malformed or failed answers, {fallbacks} turns fell back (change 0 or the rule-based speaker); each is logged in the turn's appraisal.llm"
    );
}
