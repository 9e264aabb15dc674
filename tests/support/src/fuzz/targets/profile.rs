//! The catalog's files: a scenario and a persona (each loaded with its own loader and validated,
//! then put into the repository's catalog in place of none or its namesake, resolved into
//! profiles and played), the train/test split (loaded, every profile resolved, a few played),
//! the difficulty presets (loaded, profiles resolved and played at each preset and at levels of
//! the auto controller's interpolation) and the speaker's rules (loaded, profiles played).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use empathy_gym::environment::profile::auto::knobs_at;
use empathy_gym::environment::profile::{
    Catalog, Difficulty, KnobOverrides, Persona, Presets, ProfileId, Scenario, SpeakerRules, Splits,
};

use super::dialogue::play;
use crate::fuzz::context::{files_in, read_all};
use crate::fuzz::{FuzzContext, Kind, Target};

/// Catalog files are small; a larger file is not a useful seed.
const MAX_SEED: u64 = 256 << 10;

/// The `id:` of a YAML document as a file stem the loaders accept (lowercase letters, digits,
/// dashes), so that a mutant is not rejected only for its file name; `fuzz` when there is none.
pub fn id_stem(input: &[u8]) -> String {
    let text = String::from_utf8_lossy(input);
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\''))
        .unwrap_or("");
    let stem: String = id
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .take(64)
        .collect();
    if stem.is_empty() {
        "fuzz".into()
    } else {
        stem
    }
}

/// Writes `input` as `dir/<stem>.yaml`, runs `f` on the path, and removes the file.
fn with_file<T>(
    dir: &Path,
    input: &[u8],
    f: impl FnOnce(&Path) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let path: PathBuf = dir.join(format!("{}.yaml", id_stem(input)));
    std::fs::write(&path, input)?;
    let out = f(&path);
    let _ = std::fs::remove_file(&path);
    out
}

/// A seed-dependent number from the input, to vary difficulty and reply order per input.
fn mix(input: &[u8]) -> u64 {
    empathy_gym::seed::fnv1a64(input)
}

/// Resolves `id` in `catalog` at `difficulty` and plays it.
fn resolve_and_play(
    catalog: &Catalog,
    id: &ProfileId,
    difficulty: Difficulty,
    seed: u64,
) -> anyhow::Result<()> {
    let profile = catalog.profile(id, difficulty, &KnobOverrides::default())?;
    play(profile, seed)
}

/// `scenario_yaml`: a scenario file.
pub fn scenario(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("scenario_yaml")?;
    let base = Catalog::load(&ctx.repo_root)?;
    let seeds = read_all(&files_in(&ctx.repo("scenarios"), ".yaml"), MAX_SEED);
    Target::new("scenario_yaml", Kind::Yaml, seeds, move |input| {
        let s = with_file(&dir, input, |p| Ok(Scenario::load(p)?))?;
        let mut catalog = base.clone();
        let personas: Vec<String> = s.personas.iter().take(3).cloned().collect();
        let scenario_id = s.id.clone();
        catalog.scenarios.insert(scenario_id.clone(), Arc::new(s));
        let h = mix(input);
        for (i, persona) in personas.into_iter().enumerate() {
            anyhow::ensure!(
                catalog.personas.contains_key(&persona),
                "persona `{persona}` does not exist"
            );
            let id = ProfileId {
                scenario: scenario_id.clone(),
                persona,
            };
            let d = Difficulty::ALL[(h as usize + i) % 3];
            resolve_and_play(&catalog, &id, d, h.wrapping_add(i as u64))?;
        }
        Ok(())
    })
}

/// `persona_yaml`: a persona file.
pub fn persona(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("persona_yaml")?;
    let base = Catalog::load(&ctx.repo_root)?;
    let seeds = read_all(&files_in(&ctx.repo("personas"), ".yaml"), MAX_SEED);
    Target::new("persona_yaml", Kind::Yaml, seeds, move |input| {
        let p = with_file(&dir, input, |path| Ok(Persona::load(path)?))?;
        let mut catalog = base.clone();
        let persona_id = p.id.clone();
        catalog.personas.insert(persona_id.clone(), Arc::new(p));
        let h = mix(input);
        let mut scenarios: Vec<String> = catalog
            .scenarios
            .values()
            .filter(|s| s.personas.contains(&persona_id))
            .map(|s| s.id.clone())
            .take(2)
            .collect();
        if scenarios.is_empty() {
            scenarios.extend(catalog.scenarios.keys().take(1).cloned());
        }
        for (i, scenario) in scenarios.into_iter().enumerate() {
            let id = ProfileId {
                scenario,
                persona: persona_id.clone(),
            };
            let d = Difficulty::ALL[(h as usize + i) % 3];
            resolve_and_play(&catalog, &id, d, h.wrapping_add(i as u64))?;
        }
        Ok(())
    })
}

/// `split_yaml`: the train/test split file.
pub fn split(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("split_yaml")?;
    let catalog = Catalog::load(&ctx.repo_root)?;
    let seeds = read_all(&[ctx.repo("data/splits.yaml")], MAX_SEED);
    let path = dir.join("splits.yaml");
    Target::new("split_yaml", Kind::Yaml, seeds, move |input| {
        std::fs::write(&path, input)?;
        let splits = Splits::load(&path)?;
        let h = mix(input);
        for (list, played) in [(&splits.train, 2), (&splits.test, 1)] {
            for (i, id) in list.iter().enumerate() {
                let profile =
                    catalog.profile(id, Difficulty::Moderate, &KnobOverrides::default())?;
                if i < played {
                    play(profile, h.wrapping_add(i as u64))?;
                }
            }
        }
        Ok(())
    })
}

/// `preset_yaml`: the difficulty presets file.
pub fn preset(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("preset_yaml")?;
    let base = Catalog::load(&ctx.repo_root)?;
    let seeds = read_all(&[ctx.repo("data/difficulty.yaml")], MAX_SEED);
    let path = dir.join("difficulty.yaml");
    let ids: Vec<ProfileId> = base.splits.train.iter().take(2).cloned().collect();
    Target::new("preset_yaml", Kind::Yaml, seeds, move |input| {
        std::fs::write(&path, input)?;
        let presets = Presets::load(&path)?;
        let mut catalog = base.clone();
        catalog.presets = presets;
        let h = mix(input);
        for (i, id) in ids.iter().enumerate() {
            for d in Difficulty::ALL {
                resolve_and_play(&catalog, id, d, h.wrapping_add(i as u64))?;
            }
        }
        // As training at `difficulty: auto` does: knobs interpolated between the presets.
        if let Some(id) = ids.first() {
            for (i, level) in [0.0, 0.3, 0.5, 0.8, 1.0].into_iter().enumerate() {
                let mut profile =
                    catalog.profile(id, Difficulty::Auto, &KnobOverrides::default())?;
                profile.knobs = knobs_at(&catalog.presets, level);
                play(profile, h.wrapping_add(i as u64))?;
            }
        }
        Ok(())
    })
}

/// `speaker_yaml`: the speaker's rules (generic reactions, question phrases, fillers).
pub fn speaker(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("speaker_yaml")?;
    let base = Catalog::load(&ctx.repo_root)?;
    let seeds = read_all(&[ctx.repo("data/speaker.yaml")], MAX_SEED);
    let path = dir.join("speaker.yaml");
    let ids: Vec<ProfileId> = base.splits.train.iter().take(3).cloned().collect();
    Target::new("speaker_yaml", Kind::Yaml, seeds, move |input| {
        std::fs::write(&path, input)?;
        let rules = SpeakerRules::load(&path)?;
        let mut catalog = base.clone();
        catalog.speaker = Arc::new(rules);
        let h = mix(input);
        for (i, id) in ids.iter().enumerate() {
            let d = Difficulty::ALL[(h as usize + i) % 3];
            resolve_and_play(&catalog, id, d, h.wrapping_add(i as u64))?;
        }
        Ok(())
    })
}
