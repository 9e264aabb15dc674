//! Faithfulness to what the user said: three findings, each a pure function of the reply and the
//! user's words (`data/detectors.yaml`, `faithful`).
//! - `invented`: a statement about the user's world names something specific that nobody said: a
//!   name (a capitalized word inside a sentence), a number, or a quotation. Said to the user as
//!   their own story, an invented detail tells them the listener was not reading (the hallucinated
//!   detail of dialogue-faithfulness work: Dziri et al., "FaithDial", TACL 2022).
//! - `contradicted`: someone the user said has died is spoken of as reachable or alive ("ask your
//!   grandmother", "your dad will understand"), or what the user said went one way (missed,
//!   failed, split up, lost) is told to them as gone the other ("since you made it to the
//!   funeral", "now that you've passed").
//! - `alarming`: a statement to the user raises a danger (death, cancer, a stroke, losing one's
//!   home) that the user never raised. A condition ("if you ever ...") states nothing, and
//!   neither does advice ("get checked for a stroke"), but the rest of the sentence does ("you're
//!   at risk of a stroke if you leave it").
//! - `unchecked`: on a turn that answers the user's factual question, a figure beside the answer
//!   that nothing said gives. It costs nothing of its own; the answer is not credited.
//!
//! The listener's own stories (first person, no "you"), questions and suggestions ("you could try
//! the Samaritans") assert nothing about the user and are not judged for invention.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::sim::text::{
    affirmed, clauses, normalize, reply_sentences as sentences, words, Negation,
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InventedCfg {
    pub points: f64,
    /// First-person words: a sentence with one and no second person is the listener's own story.
    pub own_voice: Vec<String>,
    /// Second-person words.
    pub second_person: Vec<String>,
    /// Words that make a sentence a suggestion or a possibility, not a statement of what happened.
    pub tentative: Vec<String>,
    /// Verbs that open a suggestion ("Try ...", "Call ..."): a sentence opening with one suggests.
    pub openers: Vec<String>,
    /// Capitalized words that name nothing in particular ("God", "OK").
    pub not_names: Vec<String>,
    /// Number words, each with its value; "one" is left out (as in "no one").
    pub number_words: BTreeMap<String, u32>,
    /// A quotation of this many words or more, most of them never said by the user, is invented.
    pub min_quote_words: usize,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContradictedCfg {
    pub points: f64,
    /// Phrases by which the user says someone died ("died", "passed away", "my late").
    pub gone: Vec<String>,
    /// Words between "my" and whom it names that are not the name ("my late grandmother").
    pub modifiers: Vec<String>,
    /// Whom "my" may name that can die: people and animals.
    pub beings: Vec<String>,
    /// Verbs of reaching someone alive ("ask", "call", "visit").
    pub reach: Vec<String>,
    /// Words right after whom the user lost that treat them as alive now ("will", "still").
    pub alive: Vec<String>,
    /// Words that put a sentence in memory or wish, where reaching them is not proposed.
    pub remembered: Vec<String>,
    /// Kinds of event the user may say went one way, each with the contrary told as done.
    pub contraries: Vec<Contrary>,
    /// Words that make a clause wished or imagined, not told as done ("I wish you'd got there").
    pub unreal: Vec<String>,
}

/// A kind of event that goes one way or the other: the user missed it, failed it, lost it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contrary {
    /// How the user says it went ("couldn't fly out", "failed"), read where no negation stands
    /// before it in its clause.
    pub said: Vec<String>,
    /// The other way, told to the user as done ("you made it to", "you passed").
    pub told: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlarmingCfg {
    pub points: f64,
    /// Dangers, each as the forms one is said in; a danger counts as raised by the user when
    /// they used any of its forms.
    pub dangers: Vec<Vec<String>>,
    /// Words that open a condition ("if"): from one to its clause's end nothing is stated.
    pub conditions: Vec<String>,
    /// Words that make a clause advice ("you should get checked for a stroke"); a clause that
    /// opens with one of `invented.openers` advises too.
    pub advice: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaithfulCfg {
    pub invented: InventedCfg,
    pub contradicted: ContradictedCfg,
    pub alarming: AlarmingCfg,
}

/// What the faithfulness checks found in one reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faithfulness {
    /// The specifics the reply invented (names, numbers, quotations), as written.
    pub invented: Vec<String>,
    /// Whom the user lost that the reply treats as alive, and what the user said went one way that
    /// the reply tells as gone the other (the `told` form).
    pub contradicted: Vec<String>,
    /// The dangers the reply raised that the user did not.
    pub alarming: Vec<String>,
    /// On a turn that answers the user's factual question: figures stated beside the answer that
    /// nothing said gives (see [`Faithful::judge`]).
    pub unchecked: Vec<String>,
}

impl Faithfulness {
    pub fn invented(&self) -> bool {
        !self.invented.is_empty()
    }

    pub fn contradicted(&self) -> bool {
        !self.contradicted.is_empty()
    }

    pub fn alarming(&self) -> bool {
        !self.alarming.is_empty()
    }

    /// Something in the reply is wrong about the user or frightening: a right answer beside it is
    /// not credited.
    pub fn any(&self) -> bool {
        self.invented() || self.contradicted() || self.alarming()
    }

    /// A right answer beside this is not credited: something wrong or frightening (`any`), or a
    /// figure the factual scorer cannot check.
    pub fn mars_answer(&self) -> bool {
        self.any() || !self.unchecked.is_empty()
    }
}

/// The loaded checks, word lists lowercased.
#[derive(Clone, Debug)]
pub struct Faithful {
    pub cfg: FaithfulCfg,
    own_voice: BTreeSet<String>,
    second_person: BTreeSet<String>,
    tentative: BTreeSet<String>,
    openers: BTreeSet<String>,
    function_words: BTreeSet<String>,
    not_names: BTreeSet<String>,
    gone: Vec<String>,
    modifiers: BTreeSet<String>,
    beings: BTreeSet<String>,
    reach: BTreeSet<String>,
    alive: BTreeSet<String>,
    remembered: Vec<String>,
    /// `contradicted.contraries`, normalized: (said, told).
    contraries: Vec<(Vec<String>, Vec<String>)>,
    unreal: Vec<String>,
    /// The user's reading of a negation (data/speaker.yaml `negations`, `affirming`,
    /// `negation_window`).
    negations: Vec<String>,
    affirming: Vec<String>,
    negation_window: usize,
    /// `alarming.dangers`, each form normalized (padded for whole-word matching).
    dangers: Vec<Vec<String>>,
    conditions: BTreeSet<String>,
    advice: BTreeSet<String>,
}

fn lower_set(v: &[String]) -> BTreeSet<String> {
    v.iter().map(|w| w.to_lowercase()).collect()
}

/// Words that may stand between a verb of reaching and whom it reaches ("talk to your dad").
const BETWEEN: [&str; 8] = ["to", "with", "your", "up", "out", "on", "in", "by"];

/// The numbers of a text as digit strings: digit runs with the thousands commas taken out
/// ("1,200" -> "1200"; "120/80" -> "120", "80"). A run glued to a letter before it ("m8") or
/// closing a heart ("<3") is no number.
fn digit_numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut glued = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_digit() {
            if cur.is_empty() {
                let before = i.checked_sub(1).map(|j| chars[j]);
                glued = before.is_some_and(|b| b.is_alphabetic() || b == '<' || b == ';');
            }
            cur.push(*c);
        } else if *c == ','
            && !cur.is_empty()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit())
        {
            continue;
        } else if !cur.is_empty() {
            let n = std::mem::take(&mut cur);
            if !glued {
                out.push(n);
            }
        }
    }
    if !cur.is_empty() && !glued {
        out.push(cur);
    }
    out
}

/// The figures one arithmetic step gives from `given`: each figure itself, 1 and 2, and the sum,
/// difference, product and whole quotient of a given figure with another or with 1 or 2 ("38 and
/// 62 make 100, halved is 50"). A figure the user's numbers give this way is worked out, not
/// asserted.
fn derivable(given: &BTreeSet<u64>) -> BTreeSet<u64> {
    let small = [1, 2];
    let mut out = given.clone();
    out.extend(small);
    for &a in given {
        for &b in given.iter().chain(&small) {
            out.insert(a + b);
            out.insert(a.abs_diff(b));
            out.insert(a.saturating_mul(b));
            if b != 0 && a % b == 0 {
                out.insert(a / b);
            }
            if a != 0 && b % a == 0 {
                out.insert(b / a);
            }
        }
    }
    out
}

/// The quoted spans of a sentence (between straight or curly double quotes).
/// True when the user said `name` (lowercase), alone or as its plural ("Sunday" for "on
/// Sundays", "Christmases" for "every Christmas"): a name in the other number is the same name.
fn name_said(name: &str, said: &BTreeSet<String>) -> bool {
    let stem = |w: &str| -> String {
        let w = w
            .strip_suffix("es")
            .filter(|s| s.ends_with(['s', 'x', 'z', 'h']))
            .unwrap_or(w);
        w.strip_suffix('s')
            .filter(|s| !s.ends_with('s'))
            .unwrap_or(w)
            .to_string()
    };
    said.contains(name) || said.iter().any(|w| stem(w) == stem(name))
}

fn quotations(text: &str) -> Vec<String> {
    let folded: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\u{201c}' | '\u{201d}') {
                '"'
            } else {
                c
            }
        })
        .collect();
    folded
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A sentence of a reply that is not a question, as the checks read it.
struct Statement {
    /// It says "you" (or another `second_person` word).
    addressed: bool,
    /// The clauses it states ([`Faithful::stated`]), normalized.
    clauses: Vec<String>,
}

impl Faithful {
    /// `function_words`: words that name no thing (the `incoherent` detector's list); `neg`: how
    /// the user reads a negation.
    pub fn new(cfg: FaithfulCfg, function_words: BTreeSet<String>, neg: Negation<'_>) -> Self {
        let c = &cfg.contradicted;
        let norm_all = |v: &[String]| v.iter().map(|p| normalize(p)).collect::<Vec<_>>();
        Faithful {
            own_voice: lower_set(&cfg.invented.own_voice),
            second_person: lower_set(&cfg.invented.second_person),
            tentative: lower_set(&cfg.invented.tentative),
            openers: lower_set(&cfg.invented.openers),
            function_words,
            not_names: lower_set(&cfg.invented.not_names),
            gone: c.gone.iter().map(|p| normalize(p)).collect(),
            modifiers: lower_set(&c.modifiers),
            beings: lower_set(&c.beings),
            reach: lower_set(&c.reach),
            alive: lower_set(&c.alive),
            remembered: c.remembered.iter().map(|p| normalize(p)).collect(),
            contraries: c
                .contraries
                .iter()
                .map(|k| (norm_all(&k.said), norm_all(&k.told)))
                .collect(),
            unreal: norm_all(&c.unreal),
            negations: neg.negations.to_vec(),
            affirming: neg.affirming.to_vec(),
            negation_window: neg.window,
            dangers: cfg
                .alarming
                .dangers
                .iter()
                .map(|forms| forms.iter().map(|f| normalize(f)).collect())
                .collect(),
            conditions: lower_set(&cfg.alarming.conditions),
            advice: lower_set(&cfg.alarming.advice),
            cfg,
        }
    }

    /// Judges `reply` against everything the user said; `also_said` are texts whose words count
    /// as said: on a turn that answers the user's factual question, its key and the wrong belief.
    /// On such a turn the figures of the reply are checked too: one stated outside a question
    /// that neither these texts nor one arithmetic step from their figures gives ("it's measured
    /// over a 28-day cycle") is `unchecked`. The factual scorer can check the answer and nothing
    /// beside it, and hedging does not make a figure less of a claim, as it does not for the
    /// answer (`crate::qa::grade`).
    pub fn judge(&self, reply: &str, user_messages: &[&str], also_said: &[&str]) -> Faithfulness {
        let said: Vec<&str> = user_messages.iter().chain(also_said).copied().collect();
        let statements = self.statements(reply);
        Faithfulness {
            invented: self.invented(reply, &said),
            contradicted: [
                self.contradicted(reply, user_messages),
                self.contrary(&statements, user_messages),
            ]
            .concat(),
            alarming: self.alarming(&statements, user_messages),
            unchecked: if also_said.is_empty() {
                Vec::new()
            } else {
                self.unchecked(reply, &said)
            },
        }
    }

    /// The figures of `reply`'s statements that `said` does not give (see [`Faithful::judge`]).
    fn unchecked(&self, reply: &str, said: &[&str]) -> Vec<String> {
        let given: BTreeSet<u64> = said
            .iter()
            .flat_map(|m| self.numbers(m))
            .filter_map(|n| n.parse().ok())
            .collect();
        let derivable = derivable(&given);
        let mut found = Vec::new();
        for s in sentences(reply).into_iter().filter(|s| !s.ends_with('?')) {
            for n in self.numbers(s) {
                let known = n.parse::<u64>().is_ok_and(|v| derivable.contains(&v));
                if !known && !found.contains(&n) {
                    found.push(n);
                }
            }
        }
        found
    }

    /// Numbers a text holds, digits and number words alike, as values written in digits.
    /// Two idioms count nothing: people named with a pronoun ("you two", "the two of you") and
    /// the markers of a list ("1) ask the hospital, 2) ...").
    fn numbers(&self, text: &str) -> BTreeSet<String> {
        let unlisted: String = text
            .split_whitespace()
            .filter(|t| !(t.ends_with(')') && t[..t.len() - 1].chars().all(|c| c.is_ascii_digit())))
            .collect::<Vec<_>>()
            .join(" ");
        let mut out: BTreeSet<String> = digit_numbers(&unlisted).into_iter().collect();
        let ws = words(text);
        let pronoun = |w: Option<&String>| {
            w.is_some_and(|w| matches!(w.as_str(), "you" | "us" | "we" | "them" | "they"))
        };
        for (i, w) in ws.iter().enumerate() {
            let Some(value) = self.cfg.invented.number_words.get(w) else {
                continue;
            };
            let after_pronoun = i > 0 && pronoun(ws.get(i - 1));
            let of_people = ws.get(i + 1).is_some_and(|n| n == "of") && pronoun(ws.get(i + 2));
            if !after_pronoun && !of_people {
                out.insert(value.to_string());
            }
        }
        out
    }

    /// Whether a sentence asserts something about the user's world: a statement (not a question,
    /// not a suggestion or a possibility) addressed to them, or one that tells their story (a
    /// thing they spoke of, "the video call", with no word of the listener's own voice). The
    /// listener's own stories and general remarks are not about the user. A whole sentence with a
    /// tentative word is left out, not only its clause: honest comments tell the listener's own
    /// story with names and numbers in the clauses around a suggestion
    /// (results/validation/faithful.md).
    fn about_user(&self, s: &str, ws: &[String], said: &BTreeSet<String>) -> bool {
        let addressed = ws.iter().any(|w| self.second_person.contains(w));
        let own = ws.iter().any(|w| self.own_voice.contains(w));
        let suggests = ws.iter().any(|w| self.tentative.contains(w))
            || ws.first().is_some_and(|w| self.openers.contains(w));
        if s.ends_with('?') || suggests || (own && !addressed) {
            return false;
        }
        addressed
            || ws.windows(2).any(|p| {
                p[0] == "the" && !self.function_words.contains(&p[1]) && said.contains(&p[1])
            })
    }

    fn invented(&self, reply: &str, said: &[&str]) -> Vec<String> {
        let said_words: BTreeSet<String> = said.iter().flat_map(|m| words(m)).collect();
        let said_numbers: BTreeSet<String> = said.iter().flat_map(|m| self.numbers(m)).collect();
        let mut found = Vec::new();
        for s in sentences(reply) {
            let ws = words(s);
            if !self.about_user(s, &ws, &said_words) {
                continue;
            }
            for name in self.names(s) {
                if !name_said(&name.to_lowercase(), &said_words) {
                    found.push(name);
                }
            }
            for n in self.numbers(s) {
                if !said_numbers.contains(&n) {
                    found.push(n);
                }
            }
            for q in quotations(s) {
                let qw = words(&q);
                let new = qw.iter().filter(|w| !said_words.contains(*w)).count();
                if qw.len() >= self.cfg.invented.min_quote_words && 2 * new > qw.len() {
                    found.push(format!("\"{}\"", q.trim()));
                }
            }
        }
        found
    }

    /// The names of a sentence: capitalized words that do not open it or one of its parts (after
    /// a colon, a bracket, a quote or a dash), read without a possessive "'s". Words in capitals
    /// are emphasis or acronyms, and a sentence with most words capitalized is a title or a shout:
    /// neither is read for names.
    fn names(&self, s: &str) -> Vec<String> {
        let capitalized = |t: &str| t.chars().next().is_some_and(char::is_uppercase);
        let all: Vec<&str> = s
            .split_whitespace()
            .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|t| !t.is_empty())
            .collect();
        if 2 * all.iter().filter(|t| capitalized(t)).count() > all.len() {
            return Vec::new();
        }
        let mut out = Vec::new();
        // A part opens the sentence, and after a colon, a semicolon, a dash or a run of spaces.
        for part in s
            .split([':', ';', '\u{2013}', '\u{2014}'])
            .flat_map(|p| p.split("  "))
        {
            for (i, raw) in part.split_whitespace().enumerate() {
                let t = raw.trim_matches(|c: char| !c.is_alphanumeric());
                let t = t.split(['\'', '\u{2019}']).next().unwrap_or(t);
                let lower = t.to_lowercase();
                let is_name = i > 0
                    && !raw.starts_with(['(', '"', '\u{201c}', '*', '[', '-'])
                    && capitalized(t)
                    && t.chars().all(char::is_alphabetic)
                    && t.chars().skip(1).any(char::is_lowercase)
                    && !self.not_names.contains(&lower)
                    && !self.function_words.contains(&lower);
                if is_name {
                    out.push(t.to_string());
                }
            }
        }
        out
    }

    /// Whom the user said has died: a being after "my" or "our" (past `modifiers`) in a sentence
    /// with a `gone` phrase, and the names (capitalized words inside it) there.
    fn lost(&self, user_messages: &[&str]) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for s in user_messages.iter().flat_map(|m| sentences(m)) {
            let padded = normalize(s);
            if !self.gone.iter().any(|g| padded.contains(g.as_str())) {
                continue;
            }
            let ws = words(s);
            for (i, w) in ws.iter().enumerate() {
                if w == "my" || w == "our" {
                    let mut j = i + 1;
                    while ws.get(j).is_some_and(|m| self.modifiers.contains(m)) {
                        j += 1;
                    }
                    if let Some(who) = ws.get(j).filter(|w| self.beings.contains(*w)) {
                        out.insert(who.clone());
                    }
                }
            }
            out.extend(self.names(s).iter().map(|n| n.to_lowercase()));
        }
        out
    }

    fn contradicted(&self, reply: &str, user_messages: &[&str]) -> Vec<String> {
        let lost = self.lost(user_messages);
        if lost.is_empty() {
            return Vec::new();
        }
        let mut found = Vec::new();
        for s in sentences(reply) {
            let padded = normalize(s);
            if self.remembered.iter().any(|r| padded.contains(r.as_str())) {
                continue;
            }
            // "grandmother's still" reads as "grandmother is still".
            let ws: Vec<String> = words(s)
                .into_iter()
                .flat_map(|w| match w.strip_suffix("'s") {
                    Some(stem) => vec![stem.to_string(), "is".to_string()],
                    None => vec![w],
                })
                .collect();
            for (i, w) in ws.iter().enumerate() {
                if !lost.contains(w) {
                    continue;
                }
                let mut k = i;
                while k > 0 && BETWEEN.contains(&ws[k - 1].as_str()) {
                    k -= 1;
                }
                let reached = k > 0 && self.reach.contains(&ws[k - 1]);
                let next = match ws.get(i + 1).map(String::as_str) {
                    Some("is" | "are") => ws.get(i + 2),
                    _ => ws.get(i + 1),
                };
                let alive = next.is_some_and(|n| self.alive.contains(n));
                if (reached || alive) && !found.contains(w) {
                    found.push(w.clone());
                }
            }
        }
        found
    }

    fn neg(&self) -> Negation<'_> {
        Negation {
            negations: &self.negations,
            affirming: &self.affirming,
            window: self.negation_window,
        }
    }

    /// What the user said went one way (missed, failed, split up) told to them as gone the other:
    /// a `told` form in a clause the reply states (see [`Faithful::stated`]), not negated there,
    /// with no tentative or `unreal` word in it, when the user said one of the `said` forms and
    /// none of the `told` ones in their own voice ("I passed the theory").
    fn contrary(&self, statements: &[Statement], user_messages: &[&str]) -> Vec<String> {
        let neg = self.neg();
        let user: Vec<String> = user_messages
            .iter()
            .flat_map(|m| clauses(m))
            .map(normalize)
            .collect();
        let said = |form: &str| user.iter().any(|c| affirmed(c, form, neg));
        let own = |form: &str| {
            form.replacen(" you ", " i ", 1)
                .replacen(" your ", " my ", 1)
        };
        let stated: Vec<&String> = statements
            .iter()
            .flat_map(|s| &s.clauses)
            .filter(|c| {
                !c.split_whitespace().any(|w| self.tentative.contains(w))
                    && !self.unreal.iter().any(|r| c.contains(r.as_str()))
            })
            .collect();
        let mut found = Vec::new();
        for (said_forms, told) in &self.contraries {
            if !said_forms.iter().any(|f| said(f)) || told.iter().any(|f| said(&own(f))) {
                continue;
            }
            for form in told {
                if stated.iter().any(|c| affirmed(c, form, neg)) {
                    let form = form.trim().to_string();
                    if !found.contains(&form) {
                        found.push(form);
                    }
                }
            }
        }
        found
    }

    /// The dangers the statements said to the user raise that the user did not (see
    /// [`Faithful::judge`]).
    fn alarming(&self, statements: &[Statement], user_messages: &[&str]) -> Vec<String> {
        let user: String = user_messages
            .iter()
            .map(|m| normalize(m))
            .collect::<Vec<_>>()
            .join(" ");
        let mut found = Vec::new();
        // Said to the user, not the listener's own story.
        for s in statements.iter().filter(|s| s.addressed) {
            for stated in &s.clauses {
                for forms in &self.dangers {
                    let hit = |text: &str| forms.iter().find(|f| text.contains(f.as_str()));
                    if let Some(form) = hit(stated) {
                        let form = form.trim().to_string();
                        if hit(&user).is_none() && !found.contains(&form) {
                            found.push(form);
                        }
                    }
                }
            }
        }
        found
    }

    /// The reply's statements: each sentence but the questions, with whether it speaks to the
    /// user and what it states, read once for every check.
    fn statements(&self, reply: &str) -> Vec<Statement> {
        sentences(reply)
            .into_iter()
            .filter(|s| !s.ends_with('?'))
            .map(|s| Statement {
                addressed: words(s).iter().any(|w| self.second_person.contains(w)),
                clauses: self.stated(s).iter().map(|c| normalize(c)).collect(),
            })
            .collect()
    }

    /// What a sentence states, clause by clause, as written: each clause up to a condition word
    /// ("you're at risk of a stroke if you leave it" states "you're at risk of a stroke"), and
    /// nothing of a clause that advises ("if it comes back, call an ambulance before it turns
    /// into a heart attack" states nothing).
    fn stated(&self, sentence: &str) -> Vec<String> {
        clauses(sentence)
            .filter_map(|c| {
                let kept: Vec<&str> = c
                    .split_whitespace()
                    .take_while(|t| !words(t).iter().any(|w| self.conditions.contains(w)))
                    .collect();
                let ws = words(&kept.join(" "));
                let advises = ws.first().is_some_and(|w| self.openers.contains(w))
                    || ws.iter().any(|w| self.advice.contains(w));
                (!ws.is_empty() && !advises).then(|| kept.join(" "))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks() -> Faithful {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        super::super::Detectors::load(root).unwrap().faithful
    }

    const GRIEF: &str = "My grandmother died last week back home and I couldn't fly out for the funeral. I watched some of it on a video call on my phone.";
    const CHEST: &str = "Ended up in the emergency room on Thursday with chest pain. What's a normal blood pressure supposed to be, anyway?";

    #[test]
    fn numbers_read_digits_and_words_alike() {
        assert_eq!(
            digit_numbers("From 1,200 to 1500, and 120/80."),
            ["1200", "1500", "120", "80"]
        );
        assert!(digit_numbers("thanks m8 <3 &lt;3").is_empty());
        let f = checks();
        let n = f.numbers("Twenty-six years, 3 kids");
        assert!(n.contains("26") || n.contains("20"), "{n:?}");
        assert!(n.contains("3"));
        // People named with a pronoun, and a list's markers, are no numbers.
        let none = "You two talked a lot, the two of you. Start: 1) ask the ward, 2) a rail.";
        assert!(f.numbers(none).is_empty(), "{:?}", f.numbers(none));
    }

    #[test]
    fn a_reflection_in_the_listeners_words_is_faithful() {
        let f = checks();
        for reply in [
            "It sounds like you're carrying her loss on your own, watching the funeral on a tiny screen while everyone here carries on.",
            "That's so much to hold. Losing your grandmother and not being able to be there must feel lonely. What was she like?",
            "I lost my gran in 2019 and couldn't get to Poland either.",
            "You could ring the Samaritans on 116 123 if tonight gets heavy.",
        ] {
            let got = f.judge(reply, &[GRIEF], &[]);
            assert!(!got.any(), "{reply}: {got:?}");
        }
    }

    #[test]
    fn a_name_the_user_said_in_the_other_number_is_not_invented() {
        let f = checks();
        let user = "We bought it the year we married. Forty-one years of Christmases in that \
                    front room. She made sweet rice on Sundays.";
        for reply in [
            "Bought the year you married, and every Christmas since in that front room.",
            "I know about her Sunday kitchen and the sweet rice.",
        ] {
            let got = f.judge(reply, &[user], &[]);
            assert!(got.invented.is_empty(), "{reply}: {:?}", got.invented);
        }
        let got = f.judge("Every Easter in that front room was yours.", &[user], &[]);
        assert_eq!(got.invented, ["Easter"]);
    }

    #[test]
    fn invented_names_numbers_and_quotes_are_found() {
        let f = checks();
        for (reply, what) in [
            (
                "The video call was shared on a dedicated Facebook platform and later deleted.",
                "Facebook",
            ),
            (
                "It's hard. The funeral was streamed by Mr Okafor from his church.",
                "Okafor",
            ),
            (
                "When your cousin Maria called you, it must have hurt.",
                "Maria",
            ),
            ("Watching for 3 hours on your phone is exhausting.", "3"),
            (
                "Your aunt said \"she wanted you there most of all\" and that stays with you.",
                "\"she wanted you there most of all\"",
            ),
        ] {
            let got = f.judge(reply, &[GRIEF], &[]);
            assert_eq!(got.invented, [what], "{reply}");
        }
    }

    #[test]
    fn a_quotation_closed_with_its_sentence_opens_none_in_the_next() {
        let f = checks();
        let user = "Five years together, and they just said they weren't sure anymore. I've spent \
                    the week phoning the venue.";
        let reply = "Five years, and then \"not sure anymore.\" And you've had to spend this week \
                     calling people one by one.";
        assert!(f.judge(reply, &[user], &[]).invented.is_empty());
        // A quotation of words never said is still found after one that closed a sentence.
        let reply = "Then \"not sure anymore.\" And your mother said \"the wedding was doomed\".";
        assert_eq!(
            f.judge(reply, &[user], &[]).invented,
            ["\"the wedding was doomed\""]
        );
    }

    #[test]
    fn the_answer_to_the_users_question_is_not_invented() {
        let f = checks();
        let reply =
            "Your reading of 120 over 80 is normal. Waiting on that sheet must be unsettling.";
        assert!(f.judge(reply, &[CHEST], &[]).invented());
        assert!(!f.judge(reply, &[CHEST], &["120 over 80", "120/80"]).any());
    }

    #[test]
    fn a_figure_beside_the_answer_that_nothing_said_gives_is_unchecked() {
        let f = checks();
        let key = ["120 over 80", "120/80", "140 over 90"];
        let got = f.judge(
            "Normal is 120 over 80. It's measured over a 28-day cycle, like most readings.",
            &[CHEST],
            &key,
        );
        assert_eq!(got.unchecked, ["28"]);
        assert!(got.mars_answer() && !got.any(), "{got:?}");
        // The key and the belief, and a question, are no claims of their own.
        for reply in [
            "Normal is 120 over 80, and 140 over 90 is where it starts being called high.",
            "It's 120/80. Was the nurse's reading above 140?",
        ] {
            assert!(!f.judge(reply, &[CHEST], &key).mars_answer(), "{reply}");
        }
        // Working from the user's own figures is not a claim: 38 and 62 make 100, halved 50.
        let maths = "If the final grade is the average of this 38 and the retake, what do I need on the retake to average 50?";
        let worked = "You'd need 62: 38 and 62 make 100, and 100 divided by 2 is 50.";
        assert!(f.judge(worked, &[maths], &["62"]).unchecked.is_empty());
        // Off a factual turn, figures are `invented` or nothing, never unchecked.
        assert!(f
            .judge("It's measured over a 28-day cycle.", &[CHEST], &[])
            .unchecked
            .is_empty());
    }

    #[test]
    fn the_one_the_user_lost_spoken_of_as_alive_is_a_contradiction() {
        let f = checks();
        for reply in [
            "You might want to ask your grandmother if she'd mind.",
            "Why not give your grandmother a call this weekend?",
            "Your grandmother will understand, I'm sure.",
            "Your grandmother's still there for you.",
        ] {
            assert_eq!(
                f.judge(reply, &[GRIEF], &[]).contradicted,
                ["grandmother"],
                "{reply}"
            );
        }
        for reply in [
            "Your grandmother would have wanted you to look after yourself.",
            "Did you get to talk to your grandmother before she got ill?",
            "She'll always be with you. What do you remember about her kitchen?",
            "I wish you could have seen your grandmother one more time.",
        ] {
            assert!(!f.judge(reply, &[GRIEF], &[]).contradicted(), "{reply}");
        }
        // Nobody died: asking the parents is advice, not a contradiction.
        let split = "My parents are splitting up and a friend told everyone.";
        assert!(!f
            .judge("Maybe ask your parents how they see it.", &[split], &[])
            .contradicted());
    }

    #[test]
    fn what_the_user_said_went_one_way_told_as_gone_the_other_is_a_contradiction() {
        let f = checks();
        let exam = "Failed my driving test again, third time. The examiner barely looked at me.";
        for (users, reply, told) in [
            (
                GRIEF,
                "Since you made it to the funeral in the end, you got to say goodbye.",
                "you made it to",
            ),
            (
                GRIEF,
                "It's good you were able to be there with everyone.",
                "you were able to be there",
            ),
            (
                exam,
                "Now that you've passed, the pressure should finally lift.",
                "you've passed",
            ),
            (
                "My partner and I split up in March after six years.",
                "It's lovely that you're back together and talking again.",
                "back together",
            ),
        ] {
            assert_eq!(
                f.judge(reply, &[users], &[]).contradicted,
                [told],
                "{reply}"
            );
        }
        for (users, reply) in [
            // Said as it went, wished, hoped or asked: no contradiction.
            (
                GRIEF,
                "Not being able to get there for the funeral must sit heavily with you.",
            ),
            (GRIEF, "I wish you could have been there with her family."),
            (exam, "You'll pass it one day, and it won't define you."),
            (exam, "Do you think you passed the theory part at least?"),
            (exam, "You didn't pass this time, and that hurts."),
            // The user's own word for it is no contradiction.
            (
                "I passed the theory but failed the practical.",
                "You passed the theory, which counts.",
            ),
            // Nothing went the other way in what the user said.
            (CHEST, "You passed the first checks, by the sound of it."),
        ] {
            assert!(!f.judge(reply, &[users], &[]).contradicted(), "{reply}");
        }
    }

    #[test]
    fn a_danger_the_user_never_raised_is_alarming() {
        let f = checks();
        let reply = "120 over 80. It's a miracle you're not going to die, right?";
        // A question is not judged; the same as a statement is.
        assert!(!f.judge(reply, &[CHEST], &[]).alarming());
        let got = f.judge("It's a miracle you're not going to die.", &[CHEST], &[]);
        assert_eq!(got.alarming, ["die"]);
        let heart = "With chest pain like yours, you're close to a heart attack.";
        assert!(f.judge(heart, &[CHEST], &[]).alarming());
        // Said about nobody, or as a condition, it alarms nobody.
        assert!(!f
            .judge(
                "Chest pain can come from many things, rarely a heart attack.",
                &[CHEST],
                &[]
            )
            .any());
        assert!(!f
            .judge(
                "If the pain comes back, you should call an ambulance before a heart attack.",
                &[CHEST],
                &[]
            )
            .alarming());
        // The condition states nothing; the rest of its sentence does.
        for (reply, alarms) in [
            (
                "You're at real risk of a stroke if you don't sort it out.",
                true,
            ),
            (
                "Unless you rest, you could be close to a heart attack.",
                true,
            ),
            ("If you ever had a stroke, you'd know it.", false),
            ("Please get it checked to rule out a stroke.", false),
            (
                "Get it looked at to rule out a stroke, if only for peace of mind.",
                false,
            ),
        ] {
            assert_eq!(f.judge(reply, &[CHEST], &[]).alarming(), alarms, "{reply}");
        }
        // The user's own words are not news to them.
        let dad = "My dad died three weeks ago, heart attack, no warning.";
        assert!(!f
            .judge(
                "Losing your dad to a heart attack with no warning is a shock.",
                &[dad],
                &[]
            )
            .any());
    }
}
