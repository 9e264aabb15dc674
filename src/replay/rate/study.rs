//! A rating study: which dialogues are rated, under which opaque item ids, in which order, and for
//! A/B pairs which side is the trained one. Everything random comes from the study's seed, so the
//! same logs and seed give the same page and key.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fingerprint::fingerprint;
use crate::environment::episode::{EpisodeRecord, Turn};
use crate::seed::fnv1a64;

/// The rating scales, in the order the page shows them and the CSVs write them.
pub const SCALES: [&str; 3] = ["empathy", "relevance", "naturalness"];

/// The arm of a pair's baseline dialogue, as the key writes it.
pub const BASE: &str = "base";
/// The arm of a pair's trained dialogue, as the key writes it.
pub const TRAINED: &str = "trained";

/// One episode of a log, with where it came from.
#[derive(Debug, Clone)]
pub struct LoggedEpisode {
    /// The log's name as given on the command line.
    pub log: String,
    /// The line in that log.
    pub line: usize,
    pub record: EpisodeRecord,
}

/// How the study is drawn.
#[derive(Debug, Clone, Copy, Default)]
pub struct StudyOptions {
    /// Seeds the item ids, the order and the A/B sides.
    pub seed: u64,
    /// Keep only the first this many items of the shuffled order (all when `None`).
    pub items: Option<usize>,
}

/// One dialogue as shown on the page, with what the key needs to find it again.
#[derive(Debug, Clone, PartialEq)]
pub struct StudySide {
    /// `A` or `B` in a pair; empty for a single dialogue.
    pub side: String,
    /// `base` or `trained` in a pair; the log's file name for a single dialogue.
    pub arm: String,
    pub log: String,
    pub line: usize,
    /// The episode's [`fingerprint`].
    pub episode: String,
    /// The dialogue as the rater sees it: (is the user speaking, text), without the policy's hidden
    /// `<think>` sections.
    pub turns: Vec<(bool, String)>,
}

/// One thing to rate: a dialogue, or an A/B pair of dialogues of the same profile.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyItem {
    /// Opaque: derived from the seed and the episodes, it says nothing about them.
    pub id: String,
    pub sides: Vec<StudySide>,
}

/// The items in their seeded order.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    /// Names the study (the page's storage key and the export's file name).
    pub id: String,
    pub seed: u64,
    pub items: Vec<StudyItem>,
    /// Pair mode: episodes left out because the other log had no episode of their profile left.
    pub unpaired: usize,
}

impl Study {
    /// Every episode as its own item.
    pub fn single(episodes: &[LoggedEpisode], opts: StudyOptions) -> Study {
        let drafts = episodes
            .iter()
            .map(|a| vec![side(a, "", &file_name(&a.log))])
            .collect();
        Study::draw(drafts, opts, 0, &mut ChaCha8Rng::seed_from_u64(opts.seed))
    }

    /// Base and trained episodes paired by profile (scenario, persona, difficulty; the k-th of a
    /// profile in one log with the k-th in the other), each pair's sides drawn from the seed.
    pub fn paired(base: &[LoggedEpisode], trained: &[LoggedEpisode], opts: StudyOptions) -> Study {
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
        let mut waiting: BTreeMap<(String, String, String), VecDeque<&LoggedEpisode>> =
            BTreeMap::new();
        for b in base {
            waiting
                .entry(profile_key(&b.record))
                .or_default()
                .push_back(b);
        }
        let mut drafts = Vec::new();
        let mut unpaired = 0;
        for t in trained {
            let Some(b) = waiting
                .get_mut(&profile_key(&t.record))
                .and_then(VecDeque::pop_front)
            else {
                unpaired += 1;
                continue;
            };
            let trained_first: bool = rng.random_bool(0.5);
            let (a, bb) = if trained_first {
                (side(t, "A", TRAINED), side(b, "B", BASE))
            } else {
                (side(b, "A", BASE), side(t, "B", TRAINED))
            };
            drafts.push(vec![a, bb]);
        }
        unpaired += waiting.values().map(VecDeque::len).sum::<usize>();
        Study::draw(drafts, opts, unpaired, &mut rng)
    }

    /// Names the items, shuffles them, keeps the first `opts.items`, and names the study.
    fn draw(
        drafts: Vec<Vec<StudySide>>,
        opts: StudyOptions,
        unpaired: usize,
        rng: &mut ChaCha8Rng,
    ) -> Study {
        let mut taken = BTreeSet::new();
        let mut items: Vec<StudyItem> = drafts
            .into_iter()
            .map(|sides| {
                let episodes: Vec<&str> = sides.iter().map(|s| s.episode.as_str()).collect();
                let mut h = crate::seed::derive(opts.seed, fnv1a64(episodes.join(",").as_bytes()));
                // Two items may not share an id (the same episode twice, or a 32-bit collision).
                while !taken.insert(h >> 32) {
                    h = crate::seed::derive(h, 1);
                }
                StudyItem {
                    id: format!("{:08x}", h >> 32),
                    sides,
                }
            })
            .collect();
        items.shuffle(rng);
        if let Some(n) = opts.items {
            items.truncate(n);
        }
        let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        let id = crate::seed::derive(opts.seed, fnv1a64(ids.join(",").as_bytes()));
        Study {
            id: format!("{:012x}", id >> 16),
            seed: opts.seed,
            items,
            unpaired,
        }
    }
}

fn profile_key(r: &EpisodeRecord) -> (String, String, String) {
    (
        r.profile.scenario.clone(),
        r.profile.persona.clone(),
        r.profile.difficulty.to_string(),
    )
}

/// The last component of a log's path: what a single dialogue's arm is called in the key.
fn file_name(log: &str) -> String {
    std::path::Path::new(log)
        .file_name()
        .map_or_else(|| log.to_string(), |n| n.to_string_lossy().into_owned())
}

fn side(a: &LoggedEpisode, side: &str, arm: &str) -> StudySide {
    StudySide {
        side: side.into(),
        arm: arm.into(),
        log: a.log.clone(),
        line: a.line,
        episode: fingerprint(&a.record),
        turns: a
            .record
            .turns
            .iter()
            .map(|t| match t {
                Turn::User { text, .. } => (true, text.clone()),
                Turn::Assistant { text, .. } => (false, text.clone()),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(log: &str, line: usize, scenario: &str, reply: &str) -> LoggedEpisode {
        let record = serde_json::from_value(serde_json::json!({
            "schema": "empathy-gym/episode/v1",
            "profile": {"scenario": scenario, "persona": "p", "difficulty": "hard"},
            "simulator": {"seed": 1},
            "turns": [
                {"role": "user", "text": "hello", "emotion": 40},
                {"role": "assistant", "text": reply, "think": "secret plan"},
            ],
            "end": "max_turns", "reward": 0.4,
        }))
        .unwrap();
        LoggedEpisode {
            log: log.into(),
            line,
            record,
        }
    }

    fn logs(n: usize) -> Vec<LoggedEpisode> {
        (0..n)
            .map(|i| {
                logged(
                    "dir/x.jsonl",
                    i + 1,
                    &format!("s{i}"),
                    &format!("reply {i}"),
                )
            })
            .collect()
    }

    fn order(s: &Study) -> Vec<usize> {
        s.items.iter().map(|i| i.sides[0].line).collect()
    }

    #[test]
    fn the_order_and_ids_follow_the_seed() {
        let eps = logs(12);
        let opts = |seed| StudyOptions { seed, items: None };
        let a = Study::single(&eps, opts(1));
        assert_eq!(a, Study::single(&eps, opts(1)), "same seed, same study");
        let b = Study::single(&eps, opts(2));
        assert_ne!(order(&a), order(&b), "another seed, another order");
        assert_ne!(order(&a), (1..=12).collect::<Vec<_>>(), "shuffled");
        assert_ne!(a.id, b.id);
        let ids: BTreeSet<&str> = a.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids.len(), 12, "ids are unique");
        let first5 = Study::single(
            &eps,
            StudyOptions {
                seed: 1,
                items: Some(5),
            },
        );
        assert_eq!(order(&first5), order(&a)[..5]);
        assert_eq!(a.items[0].sides[0].arm, "x.jsonl");
        assert_eq!(
            a.items[0].sides[0].turns[1],
            (false, format!("reply {}", a.items[0].sides[0].line - 1)),
            "no think section"
        );
    }

    #[test]
    fn pairs_join_by_profile_and_draw_their_sides() {
        let base: Vec<LoggedEpisode> = (0..20)
            .map(|i| logged("base.jsonl", i + 1, &format!("s{i}"), "base"))
            .collect();
        let mut trained: Vec<LoggedEpisode> = (0..20)
            .rev()
            .map(|i| logged("trained.jsonl", 20 - i, &format!("s{i}"), "trained"))
            .collect();
        trained.push(logged("trained.jsonl", 21, "only-here", "trained"));
        let s = Study::paired(&base, &trained, StudyOptions::default());
        assert_eq!((s.items.len(), s.unpaired), (20, 1));
        let mut trained_a = 0;
        for item in &s.items {
            let [a, b] = &item.sides[..] else {
                panic!("two sides")
            };
            assert_eq!((a.side.as_str(), b.side.as_str()), ("A", "B"));
            assert_ne!(a.arm, b.arm);
            let scenario = |x: &StudySide| {
                let arms = if x.arm == TRAINED { &trained } else { &base };
                arms.iter()
                    .find(|r| r.line == x.line)
                    .unwrap()
                    .record
                    .profile
                    .scenario
                    .clone()
            };
            assert_eq!(scenario(a), scenario(b), "a pair shares its profile");
            trained_a += usize::from(a.arm == TRAINED);
        }
        assert!(
            (3..=17).contains(&trained_a),
            "sides drawn: {trained_a} of 20"
        );
    }
}
