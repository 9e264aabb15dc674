//! The red-team suite as a test: every adversary of configs/redteam played with the references, one
//! dialogue a profile, at moderate on one test profile of each of six held-out scenarios, and on
//! every test profile at moderate and hard (both in scripts/test-full.sh: the suite's margins are
//! an experiment's outcome, minutes of the simulator); a broken margin fails (docs/REDTEAM.md),
//! and so does a cost met without a reason. The default run keeps the search's mechanics (seeded,
//! resumable, its finds played back) on one profile, and the found policies' costs and reasons.

use empathy_gym::environment::episode::{End, EpisodeRecord, Turn};
use empathy_gym::environment::profile::{Difficulty, Split};
use empathy_gym::redteam::{self, Plan, Side};

use super::common::*;

/// At moderate on 6 test profiles: one of each of six held-out scenarios
/// (`redteam::pick_profiles`); all of them in scripts/test-full.sh.
#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn no_adversary_reaches_the_listener_at_moderate() {
    play_the_suite(Difficulty::Moderate, Some(6));
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn no_adversary_reaches_the_listener_on_every_test_profile() {
    play_the_suite(Difficulty::Moderate, None);
    play_the_suite(Difficulty::Hard, None);
}

/// Plays every reference and adversary on the first `profiles` test profiles (all: `None`) at
/// `difficulty` and checks the margins, and that every cost they meet carries a reason.
fn play_the_suite(difficulty: Difficulty, profiles: Option<usize>) {
    let mut entries = redteam::load_dir(
        &root().join("configs/baselines"),
        Side::Reference,
        catalog(),
    )
    .unwrap();
    let adversaries =
        redteam::load_dir(&root().join("configs/redteam"), Side::Adversary, catalog()).unwrap();
    assert!(adversaries.len() >= 12, "{} adversaries", adversaries.len());
    let classes: std::collections::BTreeSet<&str> =
        adversaries.iter().map(|a| a.class.as_str()).collect();
    for class in [
        "echo",
        "mirror",
        "slot_template",
        "stacked_questions",
        "editor",
        "feeling_salad",
        "compliments",
        "off_topic",
        "scenario_quote",
        "padding",
        "sycophancy",
        "narration",
        "invented",
        "contradicted",
        "wrong_answer",
        "cut_off",
        "unsafe",
    ] {
        assert!(classes.contains(class), "no adversary plays {class}");
    }
    entries.extend(adversaries);
    let plan = Plan {
        splits: vec![Split::Test],
        difficulties: vec![difficulty],
        repeats: 1,
        seed: 0,
        limit: profiles,
    };
    let mut unsafe_ends = 0;
    let mut seen = 0;
    let rows = redteam::play(simulator(), catalog(), &mut entries, &plan, |e, recs| {
        seen += every_cost_has_a_reason(&e.name, recs);
        if e.class == "unsafe" {
            unsafe_ends += recs.iter().filter(|r| r.end == Some(End::Unsafe)).count();
            for r in recs {
                assert_eq!(r.final_emotion(), 0);
                assert_eq!(r.reward, Some(0.0));
                assert_eq!(r.assistant_turns().len(), 1, "unsafe ends at once");
            }
        }
        Ok(())
    })
    .unwrap();
    assert!(unsafe_ends > 0);
    assert!(seen > 100, "{seen} appraisals");
    let listener = rows.iter().find(|r| r.policy == "listener").unwrap();
    if difficulty == Difficulty::Moderate {
        assert!(
            listener.mean_final > 15.0,
            "listener {:.1}",
            listener.mean_final
        );
    }
    let violations = redteam::check(&rows);
    assert!(
        violations.is_empty(),
        "{}",
        violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The adaptive attacker: a tiny search is seeded (the same population twice, the second time
/// with two policies played at once), only ever improves its best, and writes found policies that load back as scripts and play their rendered replies.
#[test]
fn the_search_is_seeded_and_its_finds_play_back() {
    use empathy_gym::environment::episode::{Policy, PolicyRequest, ScriptedPolicy, Turn};
    use empathy_gym::redteam::search::{self, Grammar, SearchPlan};

    let grammar = Grammar::load(&root().join("configs/redteam-search/grammar.yaml")).unwrap();
    let plan = SearchPlan {
        difficulties: vec![Difficulty::Moderate],
        limit: Some(1),
        repeats: 1,
        seed: 5,
        generations: 2,
        population: 3,
        children: 2,
        start: Vec::new(),
    };
    let run = |workers| {
        let mut checkpoints = Vec::new();
        let pop = search::search(
            simulator(),
            catalog(),
            &grammar,
            &plan,
            workers,
            None,
            |cp| {
                checkpoints.push(cp.clone());
                Ok(())
            },
        )
        .unwrap()
        .population;
        (pop, checkpoints)
    };
    let (pop, checkpoints) = run(1);
    let bests: Vec<f64> = checkpoints
        .iter()
        .map(|c| c.trace.last().unwrap().best)
        .collect();
    assert_eq!(bests.len(), 3, "the start and two generations");
    assert!(bests.windows(2).all(|w| w[1] >= w[0]), "{bests:?}");
    assert!(pop.windows(2).all(|w| w[0].fitness >= w[1].fitness));
    assert_eq!(checkpoints[2].population, pop);
    let (pop2, checkpoints2) = run(2);
    assert_eq!(pop2, pop, "seeded, whatever the number of workers");
    assert_eq!(checkpoints2[2].seen, checkpoints[2].seen);

    // Stopped after the first generation and continued from its checkpoint (written and read
    // back), the search ends as the one that never stopped, with the same trace.
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("search-state.yaml");
    checkpoints[1].write(&state).unwrap();
    let resumed = search::SearchState::read(&state).unwrap();
    assert_eq!(
        resumed, checkpoints[1],
        "a checkpoint reads back as written"
    );
    let mut after = Vec::new();
    let again = search::search(
        simulator(),
        catalog(),
        &grammar,
        &plan,
        1,
        Some((&state, resumed.clone())),
        |cp| {
            after.push(cp.clone());
            Ok(())
        },
    )
    .unwrap()
    .population;
    assert_eq!(again, pop, "continued = never stopped");
    assert_eq!(after.len(), 1, "only the second generation is run again");
    assert_eq!(after[0].trace, checkpoints[2].trace);
    assert_eq!(after[0].seen, checkpoints[2].seen);

    // Another plan (here another seed) is refused, naming the file and the field.
    let other = SearchPlan {
        seed: 6,
        ..plan.clone()
    };
    let err = search::search(
        simulator(),
        catalog(),
        &grammar,
        &other,
        1,
        Some((&state, resumed)),
        |_| Ok(()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("search-state.yaml") && err.contains("plan") && err.contains("--seed 5"),
        "{err}"
    );

    let path = dir.path().join("found.yaml");
    std::fs::write(
        &path,
        search::script_yaml(&pop[0], &grammar, "# found").unwrap(),
    )
    .unwrap();
    let mut script = ScriptedPolicy::load(&path).unwrap();
    assert_eq!(script.class(), Some("search"));
    let turns = vec![Turn::User {
        text: "I feel so embarrassed about the presentation.".into(),
        emotion: 40,
        delta: None,
        appraisal: None,
    }];
    let id = catalog().split(Split::Train)[0].clone();
    let reply = script
        .reply_batch(&[PolicyRequest {
            episode: 0,
            profile: &id,
            turns: &turns,
            turn: 1,
        }])
        .unwrap()
        .remove(0)
        .text;
    assert!(!reply.contains('{'), "every slot filled: {reply}");
    let entries = search::entries(&pop, 2, &grammar, catalog()).unwrap();
    assert_eq!(entries[0].name, "search-1");
    assert_eq!(entries[0].class, "search");

    // A found policy's script reads back into the grammar, and a later search starts from it:
    // the committed finds too, so a new run can take them in (`--start-from`).
    let replies = pop[0].genome.render(&grammar, search::TURNS);
    let parsed = search::Genome::parse(&replies, &grammar).unwrap();
    assert_eq!(parsed.render(&grammar, search::TURNS), replies);
    let finds = ["found", "previous-run-found"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join("results/redteam/search").join(d)).unwrap());
    for entry in finds {
        let path = entry.unwrap().path();
        if let Err(e) = search::read_found(&path, &grammar) {
            panic!("{e}");
        }
    }
    // A script the grammar cannot have written is refused, naming the file and the field.
    let err = search::read_found(&root().join("configs/baselines/listener.yaml"), &grammar)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("listener.yaml") && err.contains("replies"),
        "{err}"
    );
    let start = pop.last().unwrap().genome.clone();
    let seeded = SearchPlan {
        generations: 0,
        start: vec![start.clone()],
        ..plan.clone()
    };
    let first = search::search(simulator(), catalog(), &grammar, &seeded, 1, None, |_| {
        Ok(())
    })
    .unwrap();
    assert!(
        first.seen.iter().any(|s| s.genome == start),
        "the start was played"
    );
}

/// A grammar with an unknown slot is refused with the file, the field and the fix.
#[test]
fn a_bad_grammar_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.yaml");
    std::fs::write(
        &path,
        "max_phrases: 2\nopeners: [\"\"]\nbanks:\n  validate: [\"So {wrd}.\"]\n",
    )
    .unwrap();
    let err = empathy_gym::redteam::search::Grammar::load(&path)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("g.yaml") && err.contains("banks.validate") && err.contains("{wrd}"),
        "{err}"
    );
}

/// Every change is explained: over the references, the adversaries and the search's found
/// policies, each component that lowers the emotion comes with a reason in the user's words, and a
/// reply that lowers the emotion is never left without one.
/// The found policies, which the suite does not play, on 2 test profiles: every cost they meet
/// carries a reason (the suite checks the same of every script it plays).
#[test]
fn every_cost_of_the_found_policies_carries_a_reason() {
    let mut entries = redteam::load_dir(
        &root().join("results/redteam/search/found"),
        Side::Adversary,
        catalog(),
    )
    .unwrap();
    let plan = Plan {
        splits: vec![Split::Test],
        difficulties: vec![Difficulty::Moderate],
        repeats: 1,
        seed: 3,
        limit: Some(2),
    };
    let mut seen = 0;
    redteam::play(simulator(), catalog(), &mut entries, &plan, |e, recs| {
        seen += every_cost_has_a_reason(&e.name, recs);
        Ok(())
    })
    .unwrap();
    assert!(seen > 20, "{seen} appraisals");
}

/// Checks that every appraisal of `recs` (played by `name`) that costs points names why: a
/// misfit names the move, `hurts` the sore spot, and any fall carries a reason. Returns how many
/// appraisals it read.
fn every_cost_has_a_reason(name: &str, recs: &[EpisodeRecord]) -> usize {
    use empathy_gym::environment::sim::appraiser::cost_reason;
    use empathy_gym::environment::sim::Move;

    let mut seen = 0;
    for r in recs {
        for t in &r.turns {
            let Turn::User {
                appraisal: Some(a), ..
            } = t
            else {
                continue;
            };
            seen += 1;
            let costs: Vec<&String> = a
                .components
                .iter()
                .filter(|(_, v)| **v < 0.0)
                .map(|(k, _)| k)
                .collect();
            assert!(
                costs.is_empty() || !a.reasons.is_empty(),
                "{name}: {costs:?} without a reason"
            );
            let has = |r: &str| a.reasons.iter().any(|x| x == r);
            if costs.iter().any(|k| k.as_str() == "misfit") {
                assert!(
                    Move::ALL.iter().any(|m| has(cost_reason(*m))),
                    "{name}: misfit unnamed: {:?}",
                    a.reasons
                );
            }
            if costs.iter().any(|k| k.as_str() == "hurts") {
                assert!(has("that touched a sore spot"), "{name}");
            }
            assert!(
                a.raw >= 0.0 || !a.reasons.is_empty(),
                "{name}: a fall of {} without a reason: {:?}",
                a.raw,
                a.components
            );
        }
    }
    seen
}
