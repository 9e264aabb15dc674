//! The adaptive attacker: a black-box evolutionary search over the grammar's template policies
//! whose only feedback is the reward (the mean final emotion on the train split). Its best
//! policies are then played on the test split beside the honest references, and the red-team
//! margins are checked on them (docs/REDTEAM.md, "The search").

pub mod genome;
pub mod grammar;
pub mod state;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{pick_profiles, Entry, Side};
use crate::environment::episode::{rollout, EpisodeJob, RolloutOptions, ScriptedPolicy};
use crate::environment::profile::{Catalog, Difficulty, KnobOverrides, Profile, Split};
use crate::environment::reward::{Aggregate, RewardMode};
use crate::environment::sim::Simulator;
use crate::error::Result;

pub use genome::{Genome, Phrase};
pub use grammar::Grammar;
pub use state::{grammar_fingerprint, SearchState};

/// Replies rendered per policy: more than any difficulty's dialogue allows.
pub const TURNS: usize = 12;

/// How long and where the search looks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchPlan {
    /// The difficulties whose mean final emotion is the fitness.
    pub difficulties: Vec<Difficulty>,
    /// Train profiles per evaluation (one per scenario first); None: all.
    pub limit: Option<usize>,
    /// Dialogues per profile and evaluation.
    pub repeats: u64,
    pub seed: u64,
    pub generations: usize,
    /// Policies kept from one generation to the next.
    pub population: usize,
    /// New policies tried per generation.
    pub children: usize,
    /// Policies put in the starting population beside the weave of one phrase per bank (earlier
    /// runs' found policies, [`Genome::parse`]); the rest of it is drawn at random.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start: Vec<Genome>,
}

/// A policy and its fitness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub genome: Genome,
    /// Mean final emotion on the train split over the plan's difficulties.
    pub fitness: f64,
}

/// One generation's summary, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    pub index: usize,
    /// Policies evaluated so far (repeats are looked up, not replayed).
    pub evaluated: usize,
    pub best: f64,
    pub mean: f64,
    pub best_policy: String,
}

/// A genome as a playable script.
pub fn policy(
    genome: &Genome,
    g: &Grammar,
    name: &str,
    catalog: &Catalog,
) -> Result<ScriptedPolicy> {
    Ok(ScriptedPolicy::new(name, genome.render(g, TURNS))?
        .with_scenarios(catalog.scenarios.clone())
        .with_lists(g.lists()))
}

struct Evaluator<'a> {
    sim: &'a dyn Simulator,
    catalog: &'a Catalog,
    grammar: &'a Grammar,
    cells: Vec<Vec<EpisodeJob>>,
    seen: BTreeMap<Genome, f64>,
    /// Policies played at once, each on its own thread.
    workers: usize,
}

impl Evaluator<'_> {
    /// The mean final emotion of `genome`'s dialogues over the cells. It depends on nothing
    /// else: each dialogue is seeded by its job, and the simulator's caches hold exact values.
    fn play(&self, genome: &Genome) -> Result<f64> {
        let mut p = policy(genome, self.grammar, "search", self.catalog)?;
        let opts = RolloutOptions {
            run: "redteam-search".into(),
            reward_mode: RewardMode::Behavior,
            aggregate: Aggregate::Final,
            progress: false,
        };
        let mut total = 0.0;
        for jobs in &self.cells {
            let recs = rollout(self.sim, &mut p, jobs, &opts, |_| Ok(()))?;
            let n = recs.len().max(1) as f64;
            total += recs
                .iter()
                .map(|r| f64::from(r.final_emotion()))
                .sum::<f64>()
                / n;
        }
        Ok(total / self.cells.len().max(1) as f64)
    }

    /// The fitness of each of `genomes`, in order: a policy seen before is looked up, the others
    /// are played on up to `workers` threads at once. Since [`Evaluator::play`] depends on the
    /// genome alone, the scores are the same for any number of workers.
    fn fitness(&mut self, genomes: &[Genome]) -> Result<Vec<f64>> {
        let mut todo: Vec<&Genome> = genomes
            .iter()
            .filter(|g| !self.seen.contains_key(*g))
            .collect();
        todo.sort();
        todo.dedup();
        let next = AtomicUsize::new(0);
        let this = &*self;
        let mut played: Vec<(usize, Result<f64>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..this.workers.clamp(1, todo.len().max(1)))
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(g) = todo.get(i) else { break };
                            out.push((i, this.play(g)));
                        }
                        out
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        // The first failure in the genomes' order, whichever thread met it first.
        played.sort_by_key(|(i, _)| *i);
        for (i, f) in played {
            self.seen.insert(todo[i].clone(), f?);
        }
        Ok(genomes.iter().map(|g| self.seen[g]).collect())
    }

    /// `cp` with the policies seen and the time so far (`earlier` seconds from earlier parts of
    /// the run, plus this part's since `started`), handed to `on_generation`.
    fn checkpoint(
        &self,
        mut cp: SearchState,
        started: Instant,
        earlier: f64,
        on_generation: &mut impl FnMut(&SearchState) -> Result<()>,
    ) -> Result<SearchState> {
        cp.seen = self
            .seen
            .iter()
            .map(|(genome, &fitness)| Scored {
                genome: genome.clone(),
                fitness,
            })
            .collect();
        cp.seconds = earlier + started.elapsed().as_secs_f64();
        on_generation(&cp)?;
        Ok(cp)
    }
}

/// The better of two random members (ties: the first drawn).
fn tournament<'a>(pop: &'a [Scored], rng: &mut impl Rng) -> &'a Scored {
    let a = &pop[rng.random_range(0..pop.len())];
    let b = &pop[rng.random_range(0..pop.len())];
    if b.fitness > a.fitness {
        b
    } else {
        a
    }
}

/// Keeps the `n` fittest distinct genomes (ties: the smaller genome, so the order is total).
fn select(mut all: Vec<Scored>, n: usize) -> Vec<Scored> {
    all.sort_by(|a, b| {
        b.fitness
            .total_cmp(&a.fitness)
            .then_with(|| a.genome.cmp(&b.genome))
    });
    all.dedup_by(|a, b| a.genome == b.genome);
    all.truncate(n);
    all
}

/// The random stream of generation `index` (0: the starting population): each generation draws
/// from its own, so a search continued from a checkpoint draws as one that never stopped.
fn stream(seed: u64, index: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64);
    rng
}

/// Runs the search on the train split, or continues it from `resume`, a state and the file it was
/// read from (checked to be the same search by [`SearchState::check_continues`], whose errors name
/// the file); returns the final state, its population fittest first. `on_generation` sees the
/// state after each generation, the starting population's included, whose `trace` ends with
/// that generation's summary. `workers` policies are played at once (at least one); the result
/// does not depend on how many.
pub fn search(
    sim: &dyn Simulator,
    catalog: &Catalog,
    grammar: &Grammar,
    plan: &SearchPlan,
    workers: usize,
    resume: Option<(&std::path::Path, SearchState)>,
    mut on_generation: impl FnMut(&SearchState) -> Result<()>,
) -> Result<SearchState> {
    let started = Instant::now();
    let grammar_id = grammar_fingerprint(grammar)?;
    let rules = sim.info().data;
    let ids = pick_profiles(catalog, Split::Train, plan.limit);
    let mut cells = Vec::new();
    for &d in &plan.difficulties {
        let profiles = ids
            .iter()
            .map(|id| catalog.profile(id, d, &KnobOverrides::default()))
            .collect::<Result<Vec<Profile>>>()?;
        cells.push(EpisodeJob::grid(&profiles, plan.repeats, plan.seed));
    }
    let mut eval = Evaluator {
        sim,
        catalog,
        grammar,
        cells,
        seen: BTreeMap::new(),
        workers,
    };
    let population = plan.population.max(1);
    let report = |index: usize, pop: &[Scored], evaluated: usize| Generation {
        index,
        evaluated,
        best: pop[0].fitness,
        mean: pop.iter().map(|s| s.fitness).sum::<f64>() / pop.len() as f64,
        best_policy: pop[0].genome.describe(grammar),
    };
    let earlier = resume.as_ref().map_or(0.0, |(_, cp)| cp.seconds);
    let mut state = match resume {
        Some((path, cp)) => {
            cp.check_continues(path, plan, &grammar_id, rules.as_deref())?;
            eval.seen = cp
                .seen
                .iter()
                .map(|s| (s.genome.clone(), s.fitness))
                .collect();
            SearchState {
                plan: plan.clone(),
                ..cp
            }
        }
        None => {
            let mut rng = stream(plan.seed, 0);
            let mut start = vec![Genome::one_of_each(grammar)];
            for g in &plan.start {
                if !start.contains(g) {
                    start.push(g.clone());
                }
            }
            while start.len() < population {
                start.push(Genome::random(grammar, &mut rng));
            }
            let fitness = eval.fitness(&start)?;
            let pop = start
                .into_iter()
                .zip(fitness)
                .map(|(genome, fitness)| Scored { genome, fitness })
                .collect();
            let pop = select(pop, population);
            let cp = SearchState {
                plan: plan.clone(),
                grammar: grammar_id,
                rules,
                trace: vec![report(0, &pop, eval.seen.len())],
                population: pop,
                seen: Vec::new(),
                seconds: 0.0,
            };
            eval.checkpoint(cp, started, earlier, &mut on_generation)?
        }
    };
    for index in state.generation() + 1..=plan.generations {
        let mut rng = stream(plan.seed, index);
        let pop = &state.population;
        // The children are drawn first and played together: playing draws nothing from `rng`.
        let children: Vec<Genome> = (0..plan.children)
            .map(|_| {
                let parent = tournament(pop, &mut rng).genome.clone();
                let mut child = if rng.random_bool(0.3) {
                    let other = tournament(pop, &mut rng).genome.clone();
                    parent.cross(&other, grammar, &mut rng)
                } else {
                    parent
                };
                for _ in 0..rng.random_range(1..=2) {
                    child = child.mutate(grammar, &mut rng);
                }
                child
            })
            .collect();
        let fitness = eval.fitness(&children)?;
        let mut next = pop.clone();
        next.extend(
            children
                .into_iter()
                .zip(fitness)
                .map(|(genome, fitness)| Scored { genome, fitness }),
        );
        state.population = select(next, population);
        state
            .trace
            .push(report(index, &state.population, eval.seen.len()));
        state = eval.checkpoint(state, started, earlier, &mut on_generation)?;
    }
    Ok(state)
}

/// The `k` fittest of a population as red-team entries (`search-1` the fittest), class `search`.
pub fn entries(
    best: &[Scored],
    k: usize,
    grammar: &Grammar,
    catalog: &Catalog,
) -> Result<Vec<Entry>> {
    best.iter()
        .take(k)
        .enumerate()
        .map(|(i, s)| {
            let name = format!("search-{}", i + 1);
            Ok(Entry {
                policy: policy(&s.genome, grammar, &name, catalog)?,
                name,
                class: "search".into(),
                side: Side::Adversary,
            })
        })
        .collect()
}

/// The genome of a found policy's script at `path` (its `replies` as [`script_yaml`] wrote them),
/// read back into `grammar` ([`Genome::parse`]). A file that is not a rendering of this grammar
/// is refused, naming the file and the field.
pub fn read_found(path: &std::path::Path, grammar: &Grammar) -> Result<Genome> {
    #[derive(Deserialize)]
    struct Found {
        replies: Vec<String>,
    }
    let found: Found = crate::environment::profile::yaml::read_yaml(path)?;
    Genome::parse(&found.replies, grammar).ok_or_else(|| {
        crate::error::Error::input(
            path,
            "replies",
            "is not a rendering of this grammar: start only from found/*.yaml of a search run \
             with the same grammar",
        )
    })
}

/// A found policy as a script file of configs/redteam's form, which the suite can play.
pub fn script_yaml(s: &Scored, grammar: &Grammar, header: &str) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Script<'a> {
        class: &'a str,
        replies: Vec<String>,
        feelings: &'a [String],
        synonyms: &'a BTreeMap<String, String>,
    }
    let body = serde_yaml::to_string(&Script {
        class: "search",
        replies: s.genome.render(grammar, TURNS),
        feelings: &grammar.feelings,
        synonyms: &grammar.synonyms,
    })
    .map_err(|e| crate::error::Error::Other(format!("cannot write a found policy: {e}")))?;
    Ok(format!("{header}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(phrases: usize, fitness: f64) -> Scored {
        Scored {
            genome: Genome {
                opener: 0,
                phrases: vec![
                    Phrase {
                        bank: 0,
                        variant: 0
                    };
                    phrases
                ],
            },
            fitness,
        }
    }

    #[test]
    fn selection_keeps_the_fittest_distinct_in_a_total_order() {
        let all = vec![
            scored(1, 5.0),
            scored(2, 9.0),
            scored(2, 9.0),
            scored(3, 5.0),
        ];
        let kept = select(all, 3);
        let got: Vec<(usize, f64)> = kept
            .iter()
            .map(|s| (s.genome.phrases.len(), s.fitness))
            .collect();
        assert_eq!(got, [(2, 9.0), (1, 5.0), (3, 5.0)]);
    }
}
