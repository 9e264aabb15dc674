//! `replay user`'s checks that the user's words fit what happened (docs/SCENARIOS.md, "Measuring
//! the user"), read from a logged dialogue's text, deltas and appraisals by the current catalog's
//! lines, so old logs are measured by the same rules:
//! - **glued**: a word run into a capitalized sentence with no end mark between them ("kinda I told
//!   them", "Okay, so, She used to"); "I" and the scenario's names keep their capital;
//! - **opener before a fragment**: the persona's opener before a first sentence shorter than the
//!   speaker's `opener_min_words` ("I suppose, guilty, mostly"; "I guess. Behind.");
//! - **answer word out of place**: a message that opens with a short sentence answering yes or no
//!   ("Maybe.", "Could be.", the speaker's `after_answer`) after a reply that asked something else
//!   ("What matters most to you?") or nothing;
//! - **verdict out of place**: a line that judges the reply ([`SpeakerRules::judges_reply`]:
//!   "Good point.", "That helps.", "You don't get it.") after a reply that asked something, or a
//!   scenario's warm or cold mood line of that kind where the emotion's change does not bear it out
//!   ([`verdict_borne`]: "That helps." after a fall);
//! - **register switch**: a capital in the message of a person who writes in lowercase
//!   (`voice.lowercase`): their own words beside a scenario line in sentence case;
//! - **unfit acknowledgement**: an acknowledgement of a feeling or specific the reply named only
//!   under a negation ("there's nothing foolish in it" -> "Foolish. Yes, that's the word."), or
//!   one that calls a feeling news when the user had said it;
//! - **unmatched complaint**: a reaction line whose finding the turn's appraisal lacks
//!   ([`found`]), such as "That could actually work" after a reply that suggested nothing;
//! - **sign disagreement**: a complaint after a rise, or a pleased line (an acknowledgement, a
//!   suggestion taken up) after a fall;
//! - **stock sentences**: a sentence of [`STOCK_MIN_WORDS`] words or more that users of different
//!   scenarios and different personas both say at the same point of their dialogues (the same
//!   user turn): neither the scenario's nor the persona's own, and common enough that users meet
//!   in it. Shorter ones ("Okay.", "Forget it.", "I don't know.") are habits of speech, not
//!   lines.

use std::collections::{BTreeMap, BTreeSet};

use crate::environment::episode::{EpisodeRecord, Turn};
use crate::environment::profile::persona::Persona;
use crate::environment::profile::persona::Voice;
use crate::environment::profile::speech::fill;
use crate::environment::profile::SpeakerRules;
use crate::environment::profile::{Catalog, Reaction, Scenario};
use crate::environment::sim::emotion::Bucket;
use crate::environment::sim::lexicon::Lexicon;
use crate::environment::sim::speaker::reaction::{echoes, found, questions, Heard};
use crate::environment::sim::speaker::{
    answerable, capitalized_inside, keeps_capital, leading_word, verdict_borne,
};
use crate::environment::sim::text::{
    affirmed, normalize, opener_of, said_sentences, sentences, words,
};
use crate::environment::sim::Appraisal;

/// Words from which a sentence is a line rather than a habit of speech, for the stock count.
pub const STOCK_MIN_WORDS: usize = 4;

/// The counts of the checks over a set of dialogues.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fit {
    /// User turns checked (after the opening).
    pub turns: usize,
    pub glued: usize,
    pub fragment_openers: usize,
    pub answer_words: usize,
    pub verdicts: usize,
    pub register_switches: usize,
    pub unfit_acknowledgements: usize,
    pub unmatched_complaints: usize,
    pub sign_disagreements: usize,
    /// Per user turn (1 = the first after the opening) and normalized sentence, the scenarios and
    /// personas of the users who said it there.
    sayers: BTreeMap<(usize, String), (BTreeSet<String>, BTreeSet<String>)>,
    /// Each checked turn's position and normalized sentences.
    turn_sentences: Vec<(usize, BTreeSet<String>)>,
}

impl Fit {
    /// Turns holding a stock sentence: one said at that turn by users of two scenarios or more and
    /// of two personas or more.
    pub fn stock_turns(&self) -> usize {
        let stock: BTreeSet<&(usize, String)> = self
            .sayers
            .iter()
            .filter(|(_, (sc, pe))| sc.len() >= 2 && pe.len() >= 2)
            .map(|(k, _)| k)
            .collect();
        self.turn_sentences
            .iter()
            .filter(|(at, t)| t.iter().any(|s| stock.contains(&(*at, s.clone()))))
            .count()
    }

    /// Up to `n` stock sentences with their turn, the most widely said first.
    pub fn stock_examples(&self, n: usize) -> Vec<(String, usize, usize)> {
        let mut v: Vec<(String, usize, usize)> = self
            .sayers
            .iter()
            .filter(|(_, (sc, pe))| sc.len() >= 2 && pe.len() >= 2)
            .map(|((at, s), (sc, pe))| {
                (format!("{} (user turn {at})", s.trim()), sc.len(), pe.len())
            })
            .collect();
        v.sort_by(|a, b| (b.1 + b.2).cmp(&(a.1 + a.2)).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// What one turn was found to do wrong, for quoting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnFaults {
    pub glued: bool,
    pub fragment_opener: bool,
    pub answer_word: bool,
    pub verdict: bool,
    pub register_switch: bool,
    pub unfit_acknowledgement: bool,
    /// The reactions voiced without their finding.
    pub unmatched: Vec<Reaction>,
    pub sign_disagreement: bool,
}

impl TurnFaults {
    fn any(&self) -> bool {
        self.glued
            || self.fragment_opener
            || self.answer_word
            || self.verdict
            || self.register_switch
            || self.unfit_acknowledgement
            || !self.unmatched.is_empty()
            || self.sign_disagreement
    }
}

/// True when `text` runs a word into a capitalized sentence: a word ending on a letter, digit or
/// comma, then one with a capital that is not "I" nor a name the scenario's or the persona's lines
/// capitalize ("English"); or the persona's bare opener ("kinda") straight before any capital.
pub fn glued(text: &str, persona: Option<&Persona>, scenario: &Scenario) -> bool {
    let bare_opener = persona.is_some_and(|p| {
        p.voice.openers().any(|o| {
            !o.ends_with(|c: char| !c.is_alphanumeric())
                && text
                    .strip_prefix(o.as_str())
                    .and_then(|rest| rest.strip_prefix(' '))
                    .is_some_and(|rest| rest.starts_with(char::is_uppercase))
        })
    });
    let words: Vec<&str> = text.split_whitespace().collect();
    bare_opener
        || words.windows(2).any(|w| {
            let runs_on = w[0].ends_with(|c: char| c.is_alphanumeric() || c == ',');
            let word = leading_word(w[1]);
            let named = |p: &Persona| p.voice.own_lines().any(|l| capitalized_inside(l, &word));
            runs_on
                && word.starts_with(char::is_uppercase)
                && !keeps_capital(scenario, &word)
                && !persona.is_some_and(named)
        })
}

/// True when `text` opens with one of the persona's openers ("I suppose,", "I guess.", "kinda";
/// the longest that fits, [`opener_of`]) ending at a mark or a space, and the first sentence after
/// it has fewer than `min_words` words. A message that opens with one of `lines` (the scenario's
/// and the persona's own, lowercase: "hm. sort of.") opens with that line, not with an opener.
pub fn fragment_after_opener(
    text: &str,
    persona: Option<&Persona>,
    lines: &[String],
    min_words: usize,
) -> bool {
    let Some(o) = opener_said(text, persona, lines) else {
        return false;
    };
    let rest = &text[o.len()..];
    // The opener ends at a mark or a space, not inside a longer word ("ok" in "okay").
    if rest.starts_with(|c: char| c.is_alphanumeric() || c == '\'') {
        return false;
    }
    let rest = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
    !rest.is_empty() && sentences(rest).first().map_or(0, |s| words(s).len()) < min_words
}

/// True when `text` opens with an answer sentence ([`SpeakerRules::after_answer`]: "Maybe.",
/// "Could be.") while `reply` did not ask yes or no and nothing else ([`answerable`]).
pub fn answer_out_of_place(text: &str, reply: &str, rules: &SpeakerRules) -> bool {
    rules.after_answer(text).is_some() && !answerable(rules, &questions(reply))
}

/// True when `text` opens with the persona's opener ([`opener_of`]) and that opener judges the
/// reply ("Good point.", "Thank you,") while `reply` asked something: before an answer it praises
/// a point nobody made. A message that opens with one of `lines` (the scenario's and the
/// persona's own, lowercase) opens with that line, not with an opener.
pub fn verdict_out_of_place(
    text: &str,
    reply: &str,
    persona: Option<&Persona>,
    lines: &[String],
    rules: &SpeakerRules,
) -> bool {
    opener_said(text, persona, lines)
        .is_some_and(|o| rules.judges_reply(o) && !questions(reply).is_empty())
}

/// The persona's opener that `text` opens with ([`opener_of`]), unless it opens with one of
/// `lines` (the scenario's and the persona's own, lowercase), which starts as the opener does.
fn opener_said<'p>(text: &str, persona: Option<&'p Persona>, lines: &[String]) -> Option<&'p str> {
    let o = persona.and_then(|p| opener_of(&p.voice, text))?;
    let lower = text.to_lowercase();
    (!lines.iter().any(|l| lower.starts_with(l.as_str()))).then_some(o)
}

/// True when a person who writes in lowercase (`voice.lowercase`) has a capital in `text`.
pub fn register_switch(text: &str, persona: Option<&Persona>) -> bool {
    persona.is_some_and(|p| p.voice.lowercase) && text.chars().any(char::is_uppercase)
}

/// The sentences of a user turn as the speaker remembers them ([`said_sentences`]), without the
/// empty ones.
pub fn sentence_set(text: &str, voice: Option<&Voice>) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = said_sentences(voice, text).into_iter().collect();
    out.remove(" ");
    out
}

/// The normalized sentences of a line.
fn line_sentences(line: &str) -> BTreeSet<String> {
    sentences(line)
        .iter()
        .map(|s| normalize(s))
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// Each of `lines` as its normalized sentences, read once per dialogue.
fn sentence_sets(lines: &[String]) -> Vec<BTreeSet<String>> {
    lines.iter().map(|l| line_sentences(l)).collect()
}

/// True when the turn says `line` (given as [`line_sentences`]): every sentence of it.
fn says_line(turn: &BTreeSet<String>, line: &BTreeSet<String>) -> bool {
    !line.is_empty() && line.is_subset(turn)
}

/// True when the turn says one of `lines` (each as [`line_sentences`]).
fn says(turn: &BTreeSet<String>, lines: &[BTreeSet<String>]) -> bool {
    lines.iter().any(|l| says_line(turn, l))
}

/// Every line of reaction `r` the user could say: the scenario's, the persona's, the speaker's
/// (and, for an unsafe reply, the speaker's lines by category).
fn reaction_lines(
    r: Reaction,
    catalog: &Catalog,
    scenario: &Scenario,
    persona: Option<&Persona>,
) -> Vec<String> {
    let mut out: Vec<String> = scenario.reactions.get(&r).cloned().unwrap_or_default();
    if let Some(p) = persona {
        out.extend(p.voice.lines(r).iter().cloned());
    }
    out.extend(catalog.speaker.lines(r).iter().cloned());
    if r == Reaction::Unsafe {
        out.extend(catalog.speaker.unsafe_by_kind.values().flatten().cloned());
    }
    out
}

/// The acknowledgements of one feeling or specific of the scenario's.
struct Ack<'a> {
    value: &'a String,
    /// `value` normalized.
    key: String,
    /// The lines that may call it news, as [`line_sentences`].
    news: Vec<BTreeSet<String>>,
    /// The lines that agree with it.
    agree: Vec<BTreeSet<String>>,
    /// The first sentence of each, normalized.
    heads: BTreeSet<String>,
}

/// The acknowledgement lines filled with `value`.
fn acknowledgements<'a>(
    catalog: &Catalog,
    persona: Option<&Persona>,
    value: &'a String,
) -> Ack<'a> {
    let generic = &catalog.speaker.landed;
    let mut news = Vec::new();
    let mut agree = Vec::new();
    let mut heads = BTreeSet::new();
    for landed in persona
        .map(|p| &p.voice.landed)
        .into_iter()
        .chain([generic])
    {
        for (field, slot, lines) in landed.lists() {
            let texts: Vec<String> = lines.iter().map(|t| fill(t, slot, value)).collect();
            heads.extend(texts.iter().filter_map(|t| head(t)));
            let filled = texts.iter().map(|t| line_sentences(t));
            match field {
                "feeling" => news.extend(filled),
                _ => agree.extend(filled),
            }
        }
    }
    Ack {
        value,
        key: normalize(value),
        news,
        agree,
        heads,
    }
}

/// The first sentence of `line`, normalized.
fn head(line: &str) -> Option<String> {
    sentences(line).first().map(|s| normalize(s))
}

/// Checks the user turns of one dialogue, adding to `acc`; each checked turn's faults, in order.
pub fn check(
    rec: &EpisodeRecord,
    catalog: &Catalog,
    lexicon: &Lexicon,
    acc: &mut Fit,
) -> Vec<TurnFaults> {
    let scenario = match catalog.scenarios.get(&rec.profile.scenario) {
        Some(s) => s.as_ref(),
        None => return Vec::new(),
    };
    let persona = catalog
        .personas
        .get(&rec.profile.persona)
        .map(|p| p.as_ref());
    let voice = persona.map(|p| &p.voice);
    let replies = rec.assistant_turns();
    let users: Vec<(&str, Option<i32>, Option<&Appraisal>)> = rec
        .turns
        .iter()
        .filter_map(|t| match t {
            Turn::User {
                text,
                delta,
                appraisal,
                ..
            } => Some((text.as_str(), *delta, appraisal.as_ref())),
            Turn::Assistant { .. } => None,
        })
        .collect();
    let mut said: BTreeSet<String> = users
        .first()
        .map(|u| sentence_set(u.0, voice))
        .unwrap_or_default();
    // The lines the checks look for, each read into sentences once per dialogue.
    let pleased = sentence_sets(&reaction_lines(
        Reaction::AdviceWelcome,
        catalog,
        scenario,
        persona,
    ));
    // Every reaction line with the reactions it belongs to: a line may belong to several ("That's
    // not what I said." is off topic and misread), and is unmatched only when none was found.
    let mut owners: BTreeMap<String, Vec<Reaction>> = BTreeMap::new();
    for r in Reaction::ALL {
        for l in reaction_lines(r, catalog, scenario, persona) {
            owners.entry(l).or_default().push(r);
        }
    }
    // The first sentences of reaction lines and acknowledgements: an answer word there ("I'm
    // alone, yes."; "Noted, and no.") answers what the reply said, not its question.
    let mut line_heads: BTreeSet<String> = owners.keys().filter_map(|l| head(l)).collect();
    let owners: Vec<(BTreeSet<String>, Vec<Reaction>)> = owners
        .into_iter()
        .map(|(l, rs)| (line_sentences(&l), rs))
        .collect();
    let acks: Vec<Ack<'_>> = scenario
        .feelings
        .iter()
        .chain(&scenario.specifics)
        .map(|x| acknowledgements(catalog, persona, x))
        .collect();
    line_heads.extend(acks.iter().flat_map(|a| a.heads.iter().cloned()));
    let own_lines: Vec<String> = scenario
        .lines()
        .chain(persona.into_iter().flat_map(|p| p.voice.own_lines()))
        .map(str::to_lowercase)
        .collect();
    // The warm and cold mood lines that judge the reply, with their bucket.
    let u = &scenario.utterances;
    let verdict_moods: Vec<(Bucket, BTreeSet<String>)> = [(Bucket::A, &u.A), (Bucket::C, &u.C)]
        .into_iter()
        .flat_map(|(b, lines)| lines.iter().map(move |l| (b, l)))
        .filter(|(_, l)| catalog.speaker.judges_reply(l))
        .map(|(b, l)| (b, line_sentences(l)))
        .collect();
    let mut out = Vec::new();
    for (i, (text, delta, appraisal)) in users.iter().enumerate().skip(1) {
        let Some((reply, _)) = replies.get(i - 1) else {
            break;
        };
        let turn = sentence_set(text, voice);
        let delta = delta.unwrap_or(0);
        let mut f = TurnFaults {
            glued: glued(text, persona, scenario),
            fragment_opener: fragment_after_opener(
                text,
                persona,
                &own_lines,
                catalog.speaker.opener_min_words,
            ),
            answer_word: answer_out_of_place(text, reply, &catalog.speaker)
                && !head(text).is_some_and(|h| line_heads.contains(&h)),
            verdict: verdict_out_of_place(text, reply, persona, &own_lines, &catalog.speaker)
                || verdict_moods
                    .iter()
                    .any(|(b, l)| says_line(&turn, l) && !verdict_borne(*b, delta)),
            register_switch: register_switch(text, persona),
            ..TurnFaults::default()
        };
        let padded = normalize(reply);
        for ack in &acks {
            let acked_news = says(&turn, &ack.news);
            if !acked_news && !says(&turn, &ack.agree) {
                continue;
            }
            let key = &ack.key;
            let was_said = said.iter().any(|s| s.contains(key.as_str()));
            let denied = !affirmed(&padded, key, catalog.speaker.negation());
            f.unfit_acknowledgement |=
                denied || (acked_news && was_said && scenario.feelings.contains(ack.value));
            f.sign_disagreement |= delta < 0;
        }
        if says(&turn, &pleased) && delta < 0 {
            f.sign_disagreement = true;
        }
        if let Some(a) = appraisal {
            let heard = Heard {
                echoes_user: echoes(reply, &said),
                suggested: lexicon.cues(reply, catalog.speaker.negation()).suggests(),
            };
            for (line, rs) in &owners {
                if !says_line(&turn, line) {
                    continue;
                }
                if !rs.iter().any(|r| found(*r, a, delta, heard)) {
                    f.unmatched.extend(rs.iter().copied());
                }
                if rs.iter().all(|r| r.is_complaint()) && delta > 0 {
                    f.sign_disagreement = true;
                }
            }
            f.unmatched.sort();
            f.unmatched.dedup();
        }
        acc.turns += 1;
        acc.glued += usize::from(f.glued);
        acc.fragment_openers += usize::from(f.fragment_opener);
        acc.answer_words += usize::from(f.answer_word);
        acc.verdicts += usize::from(f.verdict);
        acc.register_switches += usize::from(f.register_switch);
        acc.unfit_acknowledgements += usize::from(f.unfit_acknowledgement);
        acc.unmatched_complaints += usize::from(!f.unmatched.is_empty());
        acc.sign_disagreements += usize::from(f.sign_disagreement);
        for s in turn
            .iter()
            .filter(|s| s.split_whitespace().count() >= STOCK_MIN_WORDS)
        {
            let e = acc.sayers.entry((i, s.clone())).or_default();
            e.0.insert(rec.profile.scenario.clone());
            e.1.insert(rec.profile.persona.clone());
        }
        acc.turn_sentences.push((i, turn.clone()));
        said.extend(turn);
        out.push(f);
    }
    out
}

/// One line naming a turn's faults, for the quoted dialogues; `None` when it has none.
pub fn describe(f: &TurnFaults) -> Option<String> {
    if !f.any() {
        return None;
    }
    let mut what = Vec::new();
    if f.glued {
        what.push("glued".to_string());
    }
    if f.fragment_opener {
        what.push("an opener before a fragment".to_string());
    }
    if f.answer_word {
        what.push("an answer word before a reply's open question".to_string());
    }
    if f.verdict {
        what.push(
            "a verdict on the reply that the reply or the emotion's change does not bear out"
                .to_string(),
        );
    }
    if f.register_switch {
        what.push("a capital from a person who writes in lowercase".to_string());
    }
    if f.unfit_acknowledgement {
        what.push("acknowledges what the reply did not affirm, or calls old news new".to_string());
    }
    for r in &f.unmatched {
        what.push(format!("says `{}` without its finding", r.as_str()));
    }
    if f.sign_disagreement {
        what.push("its sign disagrees with the emotion's change".to_string());
    }
    Some(what.join("; "))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::environment::profile::yaml::parse_yaml;

    fn persona(lowercase: bool) -> Persona {
        let yaml = format!(
            r#"
id: pat
name: Pat
age: 50
occupation: teacher
character: negative
style: direct
verbosity: moderate
reply_words: [10, 100]
voice:
  lowercase: {lowercase}
  low: ["I don't know."]
  mid: ["I suppose", "Ok"]
  high: ["yeah", "Ok, respect."]
"#
        );
        parse_yaml(&yaml, Path::new("pat.yaml")).unwrap()
    }

    #[test]
    fn an_answer_word_before_an_open_question_is_caught_and_elsewhere_is_not() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rules = SpeakerRules::load(&root.join("data/speaker.yaml")).unwrap();
        let out = |t: &str, reply: &str| answer_out_of_place(t, reply, &rules);
        let text = "Maybe. The nights are the worst.";
        assert!(out(text, "What matters most to you?"));
        assert!(out("yeah, that tracks. she left.", "What happened next?"));
        assert!(!out(text, "Do you miss her?"));
        assert!(out(text, "That sounds so hard."));
        assert!(!out("I guess, she never called.", "What happened next?"));
        assert!(!out("Maybe she never meant it.", "What happened next?"));
    }

    #[test]
    fn a_verdict_opener_before_an_answer_is_caught_and_after_a_statement_is_not() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rules = SpeakerRules::load(&root.join("data/speaker.yaml")).unwrap();
        let mut p = persona(false);
        p.voice.high.push("Good point.".into());
        let out = |t: &str, reply: &str| verdict_out_of_place(t, reply, Some(&p), &[], &rules);
        let text = "Good point. She never called back.";
        assert!(out(text, "What happened next?"));
        assert!(!out(text, "That sounds so hard."));
        assert!(!out(
            "I don't know. She never called back.",
            "What happened next?"
        ));
        // A scenario line that starts as the opener does is that line.
        let lines = ["good point. she never called back.".to_string()];
        assert!(!verdict_out_of_place(
            text,
            "What happened next?",
            Some(&p),
            &lines,
            &rules
        ));
    }

    #[test]
    fn an_opener_before_a_fragment_is_caught_and_before_a_sentence_is_not() {
        let p = persona(false);
        let lines = ["hm. sort of.".to_string()];
        let frag = |t: &str| fragment_after_opener(t, Some(&p), &lines, 3);
        assert!(frag("I suppose, guilty, mostly."));
        assert!(frag("I don't know. Torn."));
        assert!(frag("yeah, behind. She never called."));
        assert!(!frag("I suppose, she never called back."));
        assert!(!frag("I don't know. She never called back."));
        // "ok" opens "okay", a word of its own, not the opener.
        assert!(!frag("Okay."));
        // No opener: a fragment on its own is a person's short answer.
        assert!(!frag("Guilty, mostly."));
        assert!(!fragment_after_opener(
            "I suppose, guilty.",
            None,
            &lines,
            3
        ));
        // The longest opener that fits is the opener: "Ok, respect." and a sentence.
        assert!(!frag("Ok, respect. Nobody has asked how I'm doing."));
        // A line of the scenario's that starts as an opener does is that line.
        assert!(!frag("Hm. Sort of."));
    }

    #[test]
    fn a_capital_is_a_register_switch_only_for_who_writes_in_lowercase() {
        let texting = persona(true);
        assert!(register_switch(
            "u stopped halfway thru. I'm going to go now.",
            Some(&texting)
        ));
        assert!(!register_switch(
            "u stopped halfway thru. i'm going to go now.",
            Some(&texting)
        ));
        assert!(!register_switch(
            "You stopped halfway. I'm going now.",
            Some(&persona(false))
        ));
        assert!(!register_switch("I'm going now.", None));
    }
}
