//! Conformance over every shipped profile at every difficulty: no panic, emotion stays in
//! [0, 100], every episode ends by rule, terminated and truncated are never both set; and
//! Gymnasium semantics (same seed, same transcript).

use empathy_gym::environment::episode::{DialogueEnv, End, Turn};
use empathy_gym::environment::profile::{Difficulty, KnobOverrides, ProfileId};
use empathy_gym::environment::reward::{Aggregate, RewardMode};

use super::common::*;

const MIXED: &[&str] = &[
    "That sounds really hard. What happened?",
    "You should just move on, honestly.",
    "I hear you. How are you feeling about it now?",
    "Everything happens for a reason!",
    "What would help most right now?",
];

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn every_profile_at_every_difficulty_ends_by_rule() {
    let c = catalog();
    let ids: Vec<ProfileId> = c
        .splits
        .train
        .iter()
        .chain(&c.splits.test)
        .cloned()
        .collect();
    let mut episodes = 0;
    for d in Difficulty::ALL {
        for (i, id) in ids.iter().enumerate() {
            let profile = c.profile(id, d, &KnobOverrides::default()).unwrap();
            let max_turns = profile.knobs.max_turns;
            let mut env = DialogueEnv::new(profile, RewardMode::Behavior, Aggregate::Final);
            let obs = env.reset(i as u64);
            assert!(obs.emotion <= 100);
            let mut turn = 0;
            loop {
                let out = env.step(simulator(), MIXED[turn % MIXED.len()]).unwrap();
                turn += 1;
                assert!(
                    out.obs.emotion <= 100,
                    "{id} {d:?}: emotion {}",
                    out.obs.emotion
                );
                assert!(
                    !(out.terminated && out.truncated),
                    "{id} {d:?}: both terminated and truncated"
                );
                assert_eq!(
                    out.terminated,
                    out.obs.emotion >= 100 || out.obs.emotion < 10
                );
                if out.terminated || out.truncated {
                    assert_eq!(out.truncated, turn as u32 == max_turns && !out.terminated);
                    break;
                }
                assert!((turn as u32) < max_turns, "{id} {d:?}: ran past max_turns");
            }
            let rec = env.record(simulator(), Default::default());
            let expected = match rec.final_emotion() {
                100 => End::Resolved,
                e if e < 10 => End::Left,
                _ => End::MaxTurns,
            };
            assert_eq!(rec.end, Some(expected), "{id} {d:?}");
            episodes += 1;
        }
    }
    assert_eq!(episodes, 3 * ids.len());
}

#[test]
fn same_seed_same_transcript_and_different_seed_can_differ() {
    let id = &catalog().splits.test[0];
    let run = |seed| {
        let profile = catalog()
            .profile(id, Difficulty::Easy, &KnobOverrides::default())
            .unwrap();
        let mut env = DialogueEnv::new(profile, RewardMode::Behavior, Aggregate::Dense);
        env.reset(seed);
        for r in MIXED {
            if env.is_done() {
                break;
            }
            env.step(simulator(), r).unwrap();
        }
        env.turns().to_vec()
    };
    assert_eq!(run(7), run(7));
    let texts = |t: Vec<Turn>| t.into_iter().map(|t| format!("{t:?}")).collect::<Vec<_>>();
    let differ = (0..8).any(|s| texts(run(s)) != texts(run(7)));
    assert!(differ, "the speaker should vary its lines with the seed");
}

#[test]
fn dense_step_rewards_sum_to_the_episode_reward() {
    let id = &catalog().splits.test[1];
    let profile = catalog()
        .profile(id, Difficulty::Moderate, &KnobOverrides::default())
        .unwrap();
    let mut env = DialogueEnv::new(profile, RewardMode::Behavior, Aggregate::Dense);
    env.reset(3);
    let mut sum = 0.0;
    for r in MIXED.iter().cycle().take(20) {
        let out = env.step(simulator(), r).unwrap();
        sum += out.reward;
        if out.terminated || out.truncated {
            break;
        }
    }
    assert!(
        (sum - env.rubric().total).abs() < 1e-9,
        "{sum} vs {}",
        env.rubric().total
    );
}

#[test]
fn an_embedding_does_not_depend_on_its_batch() {
    let dir = models().join("all-minilm-l6-v2");
    let fresh =
        || empathy_gym::environment::sim::Embedder::load(&dir, &candle_core::Device::Cpu).unwrap();
    let text = "That sounds really hard. What has been the hardest part for you?";
    let alone = fresh().embed(&[text]).unwrap()[0].clone();
    let others = [
        "It makes sense you feel this way, honestly.",
        "What happened then?",
        "You should sleep more and drink water today.",
    ];
    let mut batch = vec![others[0], text, others[1], others[2]];
    batch.extend(["A much longer reply that goes on and on about many different things in a row so that it pads to another length bucket entirely, and then some more words."; 1]);
    let together = fresh().embed(&batch).unwrap()[1].clone();
    assert_eq!(
        *alone, *together,
        "bit-identical embeddings are what makes replay verify possible"
    );
    let norm: f32 = alone.iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-4);
}

#[test]
fn the_embedding_cache_is_bounded_and_a_dropped_embedding_comes_back_the_same() {
    let dir = models().join("all-minilm-l6-v2");
    let load =
        || empathy_gym::environment::sim::Embedder::load(&dir, &candle_core::Device::Cpu).unwrap();
    let texts = [
        "It makes sense you feel this way, honestly.",
        "What happened then?",
        "You should sleep more and drink water today.",
        "That sounds really hard.",
        "I am here with you.",
    ];
    let bounded = load().with_cache_entries(3);
    let first = bounded.embed(&texts).unwrap();
    assert_eq!(bounded.cached(), 3, "five texts in a cache of three");
    // The first two were dropped; asked again, they are recomputed bit for bit.
    let again = bounded.embed(&texts[..2]).unwrap();
    assert_eq!(first[..2], again[..]);
    assert_eq!(bounded.cached(), 3);
    let unbounded = load().embed(&texts).unwrap();
    for (a, b) in first.iter().zip(&unbounded) {
        assert_eq!(**a, **b);
    }
}

#[test]
fn passes_of_a_fixed_count_give_the_same_embeddings() {
    // A GPU embeds in passes of a fixed count, the last filled with copies; on the CPU a row does
    // not depend on its batch, so any mix-up of rows shows as a difference.
    let dir = models().join("all-minilm-l6-v2");
    let load =
        || empathy_gym::environment::sim::Embedder::load(&dir, &candle_core::Device::Cpu).unwrap();
    let texts = [
        "It makes sense you feel this way, honestly.",
        "What happened then?",
        "You should sleep more and drink water today.",
        "That sounds really hard.",
        "I am here with you, and we can take this one step at a time together.",
    ];
    let whole = load().embed(&texts).unwrap();
    let chunked = load().with_chunk(Some(2)).embed(&texts).unwrap();
    for ((t, a), b) in texts.iter().zip(&whole).zip(&chunked) {
        assert_eq!(**a, **b, "{t}");
    }
}
