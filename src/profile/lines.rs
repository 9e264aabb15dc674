//! Rules across files on the lines a user says (`empathy-gym validate`, docs/SCENARIOS.md, "How the
//! user talks"):
//! - a persona's own lines (`voice.landed`, `voice.reactions`, `voice.decline`) are its own: no sentence of them is
//!   another persona's or one of data/speaker.yaml's generic lines, so two users do not react in
//!   the same words;
//! - a scenario's mood lines (`utterances`) say how the user feels, never a complaint about the
//!   reply: no sentence of them of [`MIN_WORDS`] words or more is a reaction line's, which the
//!   speaker says only when the appraisal found that fault ("You're going round in circles." as a
//!   mood line answers replies that did not repeat). Shorter ones ("Maybe.") say nothing of the
//!   reply.

use std::collections::BTreeMap;
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
    let generic: BTreeMap<String, ()> = generic
        .into_iter()
        .flat_map(|l| sentences(l).map(normalize))
        .map(|s| (s, ()))
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
                if generic.contains_key(&key) {
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
        let u = &s.utterances;
        for (bucket, lines) in [
            ("S", &u.S),
            ("A", &u.A),
            ("B", &u.B),
            ("C", &u.C),
            ("F", &u.F),
        ] {
            for (i, line) in lines.iter().enumerate() {
                for sent in sentences(line) {
                    let key = normalize(sent);
                    if key.split_whitespace().count() < MIN_WORDS {
                        continue;
                    }
                    if let Some((file, field)) = reactions.get(&key) {
                        return Err(Error::input(
                            &s.source,
                            format!("utterances.{bucket}[{i}]"),
                            format!(
                                "`{sent}` is a reaction line ({} `{field}`), which the user says \
                                 only when the reply did that; a mood line says how the user \
                                 feels: reword it",
                                file.display()
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}
