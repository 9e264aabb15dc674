//! Rules across files on the lines a user says (`empathy-gym validate`, docs/SCENARIOS.md, "How the
//! user talks"):
//! - a persona's own lines (`voice.landed`, `voice.reactions`, `voice.decline`) are its own: no sentence of them is
//!   another persona's or one of data/speaker.yaml's generic lines, so two users do not react in
//!   the same words;
//! - a scenario's mood lines (`utterances`) say how the user feels, never a complaint about the
//!   reply: no sentence of them of [`MIN_WORDS`] words or more is a reaction line's, which the
//!   speaker says only when the appraisal found that fault ("You're going round in circles." as a
//!   mood line answers replies that did not repeat). Shorter ones ("Maybe.") say nothing of the
//!   reply;
//! - each warm and cold mood list (`utterances.A`, `utterances.C`) holds a line on how the user
//!   feels, not only verdicts on the reply ("That helps.", "You don't get it."), which the speaker
//!   says only where the emotion's change bears them out;
//! - a scenario's questions (`factual`, `asks`) each stand as a sentence of their own: the speaker
//!   says them after other parts of a message, so one that opens with a connective ("And a normal
//!   resting heart rate ...?") reads as glued to what came before.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::persona::Persona;
use super::scenario::Scenario;
use super::speech::{normalize, sentences, Reaction, SpeakerRules};
use crate::error::{Error, Result};

/// Words from which a mood line's sentence that is a reaction line's says something of the reply.
pub const MIN_WORDS: usize = 3;

/// Every reaction line of data/speaker.yaml and of each persona, as normalized sentences, with
/// where each comes from (`data/speaker.yaml` or the persona's file) and its field.
fn reaction_sentences(
    personas: &BTreeMap<String, Arc<Persona>>,
    speaker: &SpeakerRules,
) -> BTreeMap<String, (PathBuf, String)> {
    let mut out = BTreeMap::new();
    for r in Reaction::ALL {
        for line in speaker.lines(r) {
            for s in sentences(line) {
                out.entry(normalize(s)).or_insert_with(|| {
                    (
                        PathBuf::from("data/speaker.yaml"),
                        format!("reactions.{}", r.as_str()),
                    )
                });
            }
        }
    }
    for p in personas.values() {
        for (r, lines) in &p.voice.reactions {
            for s in lines.iter().flat_map(|l| sentences(l)) {
                out.entry(normalize(s)).or_insert_with(|| {
                    (p.source.clone(), format!("voice.reactions.{}", r.as_str()))
                });
            }
        }
    }
    out
}

/// Checks that no sentence of a persona's own lines is another persona's or a generic line.
pub fn check_personas(
    personas: &BTreeMap<String, Arc<Persona>>,
    speaker: &SpeakerRules,
) -> Result<()> {
    let mut generic: Vec<&String> = Reaction::ALL
        .into_iter()
        .flat_map(|r| speaker.lines(r))
        .collect();
    generic.extend(speaker.landed.lists().into_iter().flat_map(|(_, _, l)| l));
    generic.extend(&speaker.decline);
    generic.extend(&speaker.said_all);
    generic.extend(speaker.said_all_by_kind.values().flatten());
    let generic: BTreeSet<String> = generic
        .into_iter()
        .flat_map(|l| sentences(l).map(normalize))
        .collect();
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for p in personas.values() {
        let landed = p.voice.landed.lists();
        let own = landed
            .iter()
            .flat_map(|(field, _, lines)| {
                lines
                    .iter()
                    .map(move |l| (format!("voice.landed.{field}"), l))
            })
            .chain(
                p.voice
                    .decline
                    .iter()
                    .map(|l| ("voice.decline".to_string(), l)),
            )
            .chain(p.voice.said_all_by_kind.iter().flat_map(|(k, lines)| {
                lines
                    .iter()
                    .map(move |l| (format!("voice.said_all_by_kind.{}", k.as_str()), l))
            }))
            .chain(p.voice.reactions.iter().flat_map(|(r, lines)| {
                lines
                    .iter()
                    .map(move |l| (format!("voice.reactions.{}", r.as_str()), l))
            }));
        for (field, line) in own {
            for s in sentences(line) {
                let key = normalize(s);
                if key.trim().is_empty() {
                    continue;
                }
                if generic.contains(&key) {
                    return Err(Error::input(
                        &p.source,
                        field,
                        format!(
                            "`{s}` is a line of data/speaker.yaml: a persona's own lines are its \
                             own, reword it"
                        ),
                    ));
                }
                match owner.get(&key) {
                    Some(other) if *other != p.id => {
                        return Err(Error::input(
                            &p.source,
                            field,
                            format!(
                                "`{s}` is also persona `{other}`'s: a persona's own lines are its \
                                 own, reword one of them"
                            ),
                        ))
                    }
                    _ => {
                        owner.insert(key, &p.id);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks that no mood line of a scenario is a reaction line.
pub fn check_mood_lines(
    scenarios: &BTreeMap<String, Arc<Scenario>>,
    personas: &BTreeMap<String, Arc<Persona>>,
    speaker: &SpeakerRules,
) -> Result<()> {
    let reactions = reaction_sentences(personas, speaker);
    for s in scenarios.values() {
        for (at, lines) in [
            ("utterances.A", &s.utterances.A),
            ("utterances.C", &s.utterances.C),
        ] {
            if lines.iter().all(|l| speaker.judges_reply(l)) {
                return Err(Error::input(
                    &s.source,
                    at,
                    "every line passes a verdict on the reply (data/speaker.yaml's `verdict`: \
                     \"That helps.\", \"You don't get it.\"), which the user says only where the \
                     emotion's change bears it out: add one that says how the user feels",
                ));
            }
        }
        let moods = s
            .user_lines()
            .into_iter()
            .filter(|(at, _)| at.starts_with("utterances."));
        for (at, line) in moods {
            for sent in sentences(line) {
                let key = normalize(sent);
                if key.split_whitespace().count() < MIN_WORDS {
                    continue;
                }
                if let Some((file, field)) = reactions.get(&key) {
                    return Err(Error::input(
                        &s.source,
                        at,
                        format!(
                            "`{sent}` is a reaction line ({} `{field}`), which the user says only \
                             when the reply did that; a mood line says how the user feels: \
                             reword it",
                            file.display()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Checks that no question a scenario's user asks opens with one of `question_leads`.
pub fn check_questions(
    scenarios: &BTreeMap<String, Arc<Scenario>>,
    speaker: &SpeakerRules,
) -> Result<()> {
    for s in scenarios.values() {
        let factual = s
            .factual
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("factual[{i}].question"), &f.question));
        let asks = s
            .asks
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("asks[{i}]"), a));
        for (at, q) in factual.chain(asks) {
            let first = normalize(q).split_whitespace().next().map(str::to_string);
            if let Some(lead) = first.filter(|w| speaker.question_leads.contains(w)) {
                return Err(Error::input(
                    &s.source,
                    at,
                    format!(
                        "`{q}` opens with `{lead}`, but the user asks it after other sentences, \
                         where it reads as glued on: word it as a question of its own"
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Catalog;

    fn catalog() -> Catalog {
        Catalog::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../.."
        )))
        .unwrap()
    }

    #[test]
    fn a_mood_line_that_is_a_complaint_is_named_and_a_short_one_is_not() {
        let c = catalog();
        check_mood_lines(&c.scenarios, &c.personas, &c.speaker).unwrap();
        let mut scenarios = c.scenarios.clone();
        let (id, s) = scenarios.iter_mut().next().unwrap();
        let id = id.clone();
        let mut edited = (**s).clone();
        edited.utterances.C.push("Maybe.".into());
        *s = Arc::new(edited.clone());
        check_mood_lines(&scenarios, &c.personas, &c.speaker).unwrap();
        edited.utterances.C.push("You said that already.".into());
        scenarios.insert(id, Arc::new(edited));
        let err = check_mood_lines(&scenarios, &c.personas, &c.speaker)
            .unwrap_err()
            .to_string();
        assert!(err.contains("utterances.C["), "{err}");
        assert!(err.contains("reactions.repeated"), "{err}");
    }

    #[test]
    fn a_mood_list_of_verdicts_alone_is_named() {
        let c = catalog();
        let mut scenarios = c.scenarios.clone();
        let (id, s) = scenarios.iter().next().unwrap();
        let (id, mut edited) = (id.clone(), (**s).clone());
        edited.utterances.C = vec!["You don't get it.".into(), "That's not helping.".into()];
        scenarios.insert(id, Arc::new(edited));
        let err = check_mood_lines(&scenarios, &c.personas, &c.speaker)
            .unwrap_err()
            .to_string();
        assert!(err.contains("utterances.C"), "{err}");
        assert!(err.contains("verdict"), "{err}");
    }

    #[test]
    fn a_question_that_opens_with_a_connective_is_named() {
        let c = catalog();
        check_questions(&c.scenarios, &c.speaker).unwrap();
        let mut scenarios = c.scenarios.clone();
        let (id, s) = scenarios.iter().next().unwrap();
        let (id, mut edited) = (id.clone(), (**s).clone());
        edited.asks.push("And is that normal?".into());
        scenarios.insert(id, Arc::new(edited));
        let err = check_questions(&scenarios, &c.speaker)
            .unwrap_err()
            .to_string();
        assert!(err.contains("asks["), "{err}");
        assert!(err.contains("`and`"), "{err}");
    }

    #[test]
    fn a_persona_line_that_is_anothers_or_generic_is_named() {
        let c = catalog();
        check_personas(&c.personas, &c.speaker).unwrap();
        let ids: Vec<String> = c.personas.keys().take(2).cloned().collect();
        // Personas are read in id order: the later one's file is named, with the earlier owner.
        let theirs = c.personas[&ids[0]].voice.reactions[&Reaction::Hollow][0].clone();
        for (line, says) in [
            (theirs, format!("persona `{}`", ids[0])),
            (
                "You said that already.".to_string(),
                "data/speaker.yaml".to_string(),
            ),
        ] {
            let mut personas = c.personas.clone();
            let mut p = (*personas[&ids[1]]).clone();
            p.voice.reactions.insert(Reaction::Platitude, vec![line]);
            personas.insert(ids[1].clone(), Arc::new(p));
            let err = check_personas(&personas, &c.speaker)
                .unwrap_err()
                .to_string();
            assert!(err.contains("voice.reactions.platitude"), "{err}");
            assert!(err.contains(&says), "{err}");
        }
    }
}
