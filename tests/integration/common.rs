//! Shared helpers for the integration tests: the catalog, the simulator (loaded once), and
//! scripted listeners written from a profile's own data.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use empathy_gym::environment::episode::{
    rollout, EpisodeJob, EpisodeRecord, FnPolicy, RolloutOptions, Turn,
};
use empathy_gym::environment::profile::FactualTurn;
use empathy_gym::environment::profile::{Catalog, Difficulty, KnobOverrides, ProfileId, Split};
use empathy_gym::environment::reward::RewardMode;
use empathy_gym::environment::sim::{Appraisal, AppraisalInput, Appraiser, Embedder};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The models folder the library resolves (`$EMPATHY_GYM_MODELS`, `./models`, the user cache):
/// tests run in the crate root, where scripts/fetch-models.sh puts them.
pub fn models() -> PathBuf {
    empathy_gym::model::models_dir()
}

pub fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| Catalog::load(&root()).expect("the shipped catalog loads"))
}

/// The built-in simulator with the real all-MiniLM-L6-v2 (fetched by scripts/fetch-models.sh).
pub fn simulator() -> &'static Appraiser {
    static S: OnceLock<Appraiser> = OnceLock::new();
    S.get_or_init(|| {
        let embedder = Embedder::load_default().unwrap_or_else(|e| panic!("{e}"));
        Appraiser::load(&root(), Arc::new(embedder)).expect("appraiser data loads")
    })
}

pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// One dialogue of the first test profile at moderate (behavior reward, seed 0) with a script that
/// says `reply` every turn.
pub fn play_script(reply: &str) -> EpisodeRecord {
    let id = test_profiles(1).remove(0);
    let mut policy = scripted(&[reply]);
    play(
        &[id],
        Difficulty::Moderate,
        RewardMode::Behavior,
        0,
        &mut policy,
    )
    .remove(0)
}

/// Plays `policy` on `ids` at `difficulty` and returns the records.
pub fn play(
    ids: &[ProfileId],
    difficulty: Difficulty,
    mode: RewardMode,
    seed: u64,
    policy: &mut dyn empathy_gym::environment::episode::Policy,
) -> Vec<EpisodeRecord> {
    let cases: Vec<(ProfileId, u64)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), empathy_gym::seed::derive(seed, i as u64)))
        .collect();
    play_seeded(&cases, difficulty, mode, policy)
}

/// Plays `policy` on each (profile, episode seed) of `cases` at `difficulty`.
pub fn play_seeded(
    cases: &[(ProfileId, u64)],
    difficulty: Difficulty,
    mode: RewardMode,
    policy: &mut dyn empathy_gym::environment::episode::Policy,
) -> Vec<EpisodeRecord> {
    let jobs: Vec<EpisodeJob> = cases
        .iter()
        .enumerate()
        .map(|(i, (id, seed))| EpisodeJob {
            profile: catalog()
                .profile(id, difficulty, &KnobOverrides::default())
                .unwrap(),
            seed: *seed,
            step: 0,
            group: i as u64,
            sample: 0,
        })
        .collect();
    let opts = RolloutOptions {
        run: "test".into(),
        reward_mode: mode,
        ..Default::default()
    };
    rollout(simulator(), policy, &jobs, &opts, |_| Ok(())).unwrap()
}

pub fn test_profiles(n: usize) -> Vec<ProfileId> {
    let mut seen = std::collections::BTreeSet::new();
    catalog()
        .split(Split::Test)
        .iter()
        .filter(|p| seen.insert(p.scenario.clone()))
        .take(n)
        .cloned()
        .collect()
}

fn last_user(turns: &[Turn]) -> &str {
    turns
        .iter()
        .rev()
        .find_map(|t| {
            if let Turn::User { text, .. } = t {
                Some(text.as_str())
            } else {
                None
            }
        })
        .unwrap_or("")
}

/// A few content words of the user's last message, to reflect back.
fn echo(turns: &[Turn]) -> String {
    let words: Vec<&str> = last_user(turns)
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| w.len() >= 5)
        .take(4)
        .collect();
    words.join(", ").to_lowercase()
}

/// An attuned listener: names the feeling, reflects specifics, asks open questions, holds advice back.
pub fn attuned() -> FnPolicy<impl FnMut(&ProfileId, u32, &[Turn]) -> String> {
    FnPolicy {
        name: "attuned".into(),
        f: |id: &ProfileId, turn: u32, turns: &[Turn]| {
            let s = &catalog().scenarios[&id.scenario];
            let sp = |i: usize| s.specifics[i % s.specifics.len()].clone();
            let fe = |i: usize| s.feelings[i % s.feelings.len()].clone();
            let e = echo(turns);
            match turn {
                1 => format!("{} and {}. That sounds really {} and {}. What has been the hardest part of this for you?", sp(0), sp(1), fe(0), fe(1)),
                2 => format!("It makes sense that you feel {}, with {} on top of it. How have you been holding up?", fe(1), sp(2)),
                3 => format!("You mentioned {e}. That sounds {}. What goes through your mind when you think about {}?", fe(2), sp(0)),
                4 => format!("So {} is still weighing on you, and you feel {}. What would help you most right now?", sp(3), fe(0)),
                5 => format!("I hear how {} this is, especially {}. Can you tell me more about {e}?", fe(3), sp(1)),
                6 => format!("Of course you feel {} after {}. What matters most to you in all of this?", fe(4), sp(4)),
                7 => format!("It sounds like {} has been on your mind a lot. How are you feeling about it now?", sp(5)),
                _ => format!("Thank you for telling me about {e}. It makes sense to feel {}. What would you like to do next?", fe(turn as usize)),
            }
        },
    }
}

pub fn scripted(replies: &[&str]) -> empathy_gym::environment::episode::ScriptedPolicy {
    empathy_gym::environment::episode::ScriptedPolicy::new(
        "script",
        replies.iter().map(|s| s.to_string()).collect(),
    )
    .unwrap()
}

pub fn mean_final(records: &[EpisodeRecord]) -> f64 {
    records
        .iter()
        .map(|r| f64::from(r.final_emotion()))
        .sum::<f64>()
        / records.len() as f64
}

pub fn mean_reward(records: &[EpisodeRecord]) -> f64 {
    records.iter().map(|r| r.reward.unwrap()).sum::<f64>() / records.len() as f64
}

#[allow(dead_code)]
pub fn path(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// Names that are CamelCase by themselves (McNemar's test in the factual report).
const PROPER_NAMES: [&str; 1] = ["McNemar"];

/// Lines that quote dialogue (user, policy, model text or the appraiser's reasons, and the two
/// dialogues side by side at the end of `train`) may hold any word; everything else a command
/// prints is checked.
fn is_dialogue(line: &str) -> bool {
    let t = line.trim_start();
    t.contains(" │ ")
        || t.starts_with("user [")
        || t.starts_with("policy")
        || t.starts_with("model:")
        || t.starts_with("why:")
        || t.starts_with("system:")
}

/// What is wrong with one word of output (letters and digits, split at `-` and `_`), if anything:
/// a CamelCase identifier (`MaxTurns`), a title-cased word running into digits (`Smollm2`,
/// `Lc100K`: a GGUF converter's build tags, or a Rust name such as `Qwen2`), or the Rust name
/// of a variant of a public enum whose values are words (read from src/, see source_enums.rs).
/// Numbers with units (`135M`, `8k`), brand spellings with digits (`SmolLM2`) and quant tags
/// (`Q4`) pass.
fn debug_word(w: &str) -> Option<&'static str> {
    let chars: Vec<char> = w.chars().collect();
    let has_digit = chars.iter().any(char::is_ascii_digit);
    let camel = chars
        .windows(2)
        .any(|p| p[0].is_lowercase() && p[1].is_uppercase());
    let lower_run = chars
        .iter()
        .skip(1)
        .take_while(|c| c.is_lowercase())
        .count();
    let title_then_digit = chars.first().is_some_and(|c| c.is_uppercase())
        && lower_run > 0
        && chars.get(1 + lower_run).is_some_and(char::is_ascii_digit);
    if super::source_enums::word_variant_names().contains(w) {
        Some("enum variant")
    } else if title_then_digit {
        Some("title-cased name with digits")
    } else if camel && !has_digit && !PROPER_NAMES.contains(&w) {
        Some("CamelCase")
    } else {
        None
    }
}

/// The start of a Debug-printed struct or struct variant on `line` (`Training { step: 1`).
fn debug_struct(line: &str) -> Option<&str> {
    line.match_indices(" { ").find_map(|(i, _)| {
        let before = line[..i].rsplit(|c: char| !c.is_alphanumeric()).next()?;
        let field: String = line[i + 3..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        let is_type = before.starts_with(|c: char| c.is_ascii_uppercase());
        let shows_field = !field.is_empty() && line[i + 3 + field.len()..].starts_with(": ");
        (is_type && shows_field).then(|| &line[i - before.len()..])
    })
}

/// The first Debug form in a command's human output, with its line: `Some(`/`None`, a Debug
/// struct, a CamelCase identifier, a title-cased name with digits, or a user-facing enum
/// variant's Rust name (words for people). Words holding `/` or `.` are paths, file
/// names (model file stems such as `SmolLM2-135M-Instruct.Q4_1`) or numbers, and pass.
pub fn debug_form(output: &str) -> Option<String> {
    for line in output.lines().filter(|l| !is_dialogue(l)) {
        if line.contains("Some(") || line.contains("None") {
            return Some(format!("Debug Option in: {line}"));
        }
        if let Some(s) = debug_struct(line) {
            return Some(format!("Debug struct `{s}` in: {line}"));
        }
        let words = line.split(|c: char| !(c.is_alphanumeric() || "/._-".contains(c)));
        for w in words.filter(|w| !w.contains(['/', '.'])) {
            for part in w.split(['-', '_']) {
                if let Some(why) = debug_word(part) {
                    return Some(format!("{why} `{part}` in: {line}"));
                }
            }
        }
    }
    None
}

/// Fails the test when `output` (of the command `what`) shows a Debug form ([`debug_form`]).
pub fn assert_words_for_people(what: &str, output: &str) {
    if let Some(problem) = debug_form(output) {
        panic!("{what}: {problem}");
    }
}

/// stdout and stderr of a finished command, for [`assert_words_for_people`].
#[allow(dead_code)]
pub fn output_of(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs the built binary with `args` against the shipped catalog and the resolved models.
pub fn eg(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .args(args)
        .arg("--catalog")
        .arg(root())
        .env("EMPATHY_GYM_MODELS", models())
        .output()
        .expect("run empathy-gym")
}

/// Writes a scripted policy with `replies` into `dir` and rolls it out over 8 test profiles (one
/// per scenario, `rollout --limit`) at `difficulty` with `seed` into `out`; fails the test with the
/// command's output otherwise.
pub fn scripted_rollout(dir: &Path, replies: &[&str], difficulty: &str, seed: u64, out: &Path) {
    let script = dir.join("script.yaml");
    let lines: String = replies.iter().map(|r| format!("  - {r:?}\n")).collect();
    std::fs::write(&script, format!("replies:\n{lines}")).expect("write the script");
    let o = eg(&[
        "rollout",
        "--policy",
        &format!("script:{}", script.display()),
        "--split",
        "test",
        "--limit",
        "8",
        "--difficulty",
        difficulty,
        "--seed",
        &seed.to_string(),
        "--out",
        out.to_str().expect("utf-8 path"),
    ]);
    assert!(o.status.success(), "{}", output_of(&o));
}

/// Fails when the committed file at `path` differs from `generated`, naming the first line that
/// differs, what `source` gives there, and the command that regenerates the file.
pub fn assert_generated_file_is_current(
    path: &Path,
    generated: &str,
    source: &str,
    regenerate: &str,
) {
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed == generated {
        return;
    }
    let line = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()))
        + 1;
    panic!(
        "{} is stale (first difference at line {line}: the file has {:?}, {source} give {:?}); \
         regenerate it with `{regenerate}`",
        path.display(),
        committed.lines().nth(line - 1).unwrap_or(""),
        generated.lines().nth(line - 1).unwrap_or("")
    );
}

/// The appraisals of a dialogue's user turns, in order.
pub fn appraisals(record: &EpisodeRecord) -> Vec<&empathy_gym::environment::sim::Appraisal> {
    record
        .turns
        .iter()
        .filter_map(|t| match t {
            Turn::User {
                appraisal: Some(a), ..
            } => Some(a),
            _ => None,
        })
        .collect()
}

/// The simulator's appraisal of `reply` as the answer to the last of `users` (each message of the
/// user so far, one policy turn each), on profile `(scenario, persona)` at moderate, with the
/// emotion at `emotion` and `factual` the question the user just asked, if any.
pub fn appraise_reply(
    (scenario, persona): (&str, &str),
    emotion: u8,
    users: &[&str],
    reply: &str,
    factual: Option<&FactualTurn>,
) -> Appraisal {
    let id = ProfileId {
        scenario: scenario.into(),
        persona: persona.into(),
    };
    let profile = catalog()
        .profile(&id, Difficulty::Moderate, &KnobOverrides::default())
        .unwrap();
    let input = AppraisalInput {
        profile: &profile,
        emotion,
        turn: users.len() as u32,
        reply,
        user_messages: users.to_vec(),
        previous_replies: Vec::new(),
        factual,
    };
    simulator().appraise(&[input]).unwrap().remove(0)
}
