//! Episode logs (JSON lines): read with `read_episodes` as every command that reads a log does,
//! then what `replay show`, `replay stats` and `replay html` make of the records, and what the
//! judge derives from a log's user messages (its hidden need and the profile it judges
//! against, played like any profile).

use empathy_gym::environment::episode::{read_episodes, EpisodeRecord};
use empathy_gym::judge::input::{read, Format};
use empathy_gym::judge::JudgeRules;
use empathy_gym::replay::{episode_stats, render_html, render_transcript, StatsOptions};

use super::dialogue::play;
use crate::fuzz::context::files_under;
use crate::fuzz::{FuzzContext, Kind, Target};

/// Lines per seed (a log's lines are a few kilobytes each).
const LINES_PER_SEED: usize = 3;
/// Seeds at most.
const MAX_SEEDS: usize = 24;

/// The first lines of each committed episode log under `results/experiments/user-realism`
/// (read at run time), and the test data's record.
fn seeds(ctx: &FuzzContext) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for f in files_under(&ctx.repo("results/experiments/user-realism"), ".jsonl") {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().take(LINES_PER_SEED).collect();
        if !lines.is_empty() {
            seeds.push(format!("{}\n", lines.join("\n")).into_bytes());
        }
        if seeds.len() >= MAX_SEEDS {
            break;
        }
    }
    // The test data's record is pretty-printed: one line of it is a log line.
    let one = std::fs::read(ctx.repo("tests/data/episode-line.json")).ok();
    if let Some(v) = one.and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()) {
        seeds.push(format!("{v}\n").into_bytes());
    }
    seeds
}

/// `episode_jsonl`: an episode log.
pub fn episode_jsonl(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("episode_jsonl")?;
    let rules = JudgeRules::load(&ctx.repo_root)?;
    let path = dir.join("episodes.jsonl");
    Target::new("episode_jsonl", Kind::Json, seeds(ctx), move |input| {
        std::fs::write(&path, input)?;
        let mut log = read_episodes(&path)?;
        let records: Vec<EpisodeRecord> = log.records.iter().map(|(_, r)| r.clone()).collect();
        for (line, r) in &log.records {
            render_transcript(*line, r);
            r.simulator_failures();
            r.assistant_turns();
        }
        episode_stats(&records, &StatsOptions::default());
        let episodes: Vec<_> = log
            .records
            .iter()
            .map(|(line, r)| (0, *line, r.clone()))
            .collect();
        render_html("fuzz", &["episodes.jsonl".to_string()], &episodes);
        if let Some(e) = log.first_error() {
            return Err(e.into());
        }
        let mut played = 0u64;
        read(&path, Format::Log, &mut |conv| {
            let seeker = conv.seeker();
            let derived = rules.derive(&seeker);
            let profile = rules.profile(&conv.id, &seeker, &derived);
            if played < 2 {
                played += 1;
                play(profile, played).map_err(|e| empathy_gym::Error::Other(format!("{e:#}")))?;
            }
            Ok(())
        })?;
        Ok(())
    })
}
