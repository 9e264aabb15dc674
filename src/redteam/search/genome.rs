//! A policy of the search: an opener and a sequence of phrases, each drawn from a bank of the
//! grammar. Reply k takes every choice k steps further along its list, so no two replies share a
//! frame (the template detector compares a reply with the earlier ones). Rendering and mutation
//! are pure functions of the genome, the grammar and the random stream.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::grammar::Grammar;

/// One phrase: a bank and where in it the first reply starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Phrase {
    pub bank: usize,
    pub variant: usize,
}

/// A policy of the search.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Genome {
    pub opener: usize,
    pub phrases: Vec<Phrase>,
}

fn rotate(list: &[String], start: usize, k: usize) -> &str {
    if list.is_empty() {
        ""
    } else {
        &list[(start + k) % list.len()]
    }
}

impl Genome {
    /// The reply templates for `turns` replies (placeholders still in them).
    pub fn render(&self, g: &Grammar, turns: usize) -> Vec<String> {
        (0..turns)
            .map(|k| {
                let mut parts: Vec<&str> = vec![rotate(&g.openers, self.opener, k)];
                parts.extend(
                    self.phrases
                        .iter()
                        .map(|p| rotate(g.bank(p.bank), p.variant, k)),
                );
                parts
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    /// A short name: the banks in order (`validate+reflect+open_question`).
    pub fn describe(&self, g: &Grammar) -> String {
        let names = g.bank_names();
        self.phrases
            .iter()
            .map(|p| names.get(p.bank).copied().unwrap_or("?"))
            .collect::<Vec<_>>()
            .join("+")
    }

    /// One phrase of every bank, in the grammar's order: the weave the search starts from.
    pub fn one_of_each(g: &Grammar) -> Self {
        Genome {
            opener: 0,
            phrases: (0..g.banks.len().min(g.max_phrases))
                .map(|bank| Phrase { bank, variant: 0 })
                .collect(),
        }
    }

    /// A random genome of 1 to `max_phrases` phrases.
    pub fn random(g: &Grammar, rng: &mut impl Rng) -> Self {
        let n = rng.random_range(1..=g.max_phrases);
        Genome {
            opener: rng.random_range(0..g.openers.len()),
            phrases: (0..n).map(|_| random_phrase(g, rng)).collect(),
        }
    }

    /// The genome whose rendering is `replies` (a found policy's script, as [`Genome::render`]
    /// wrote it), if the grammar has one: the opener and phrases of the first reply, read left to
    /// right, and the first reading whose rendering gives every reply back. A script written
    /// from another grammar, or by hand, has none.
    pub fn parse(replies: &[String], g: &Grammar) -> Option<Self> {
        let first = replies.first()?;
        let fits = |genome: &Genome| genome.render(g, replies.len()) == replies;
        g.openers.iter().enumerate().find_map(|(opener, text)| {
            let rest = match text.is_empty() {
                true => Some(first.as_str()),
                false => first.strip_prefix(text.as_str()).and_then(after_space),
            }?;
            let mut genome = Genome {
                opener,
                phrases: Vec::new(),
            };
            read_phrases(rest, g, &mut genome, &fits)
        })
    }

    /// One random edit: another opener, a phrase added, removed, moved, re-drawn from its bank or
    /// from another bank. Never leaves the genome empty nor above `max_phrases`.
    pub fn mutate(&self, g: &Grammar, rng: &mut impl Rng) -> Self {
        let mut out = self.clone();
        let n = out.phrases.len();
        match rng.random_range(0..6) {
            0 => out.opener = rng.random_range(0..g.openers.len()),
            1 if n < g.max_phrases => {
                let at = rng.random_range(0..=n);
                out.phrases.insert(at, random_phrase(g, rng));
            }
            2 if n > 1 => {
                out.phrases.remove(rng.random_range(0..n));
            }
            3 if n > 1 => {
                let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
                out.phrases.swap(a, b);
            }
            4 => {
                let i = rng.random_range(0..n);
                let len = g.bank(out.phrases[i].bank).len().max(1);
                out.phrases[i].variant = rng.random_range(0..len);
            }
            _ => {
                let i = rng.random_range(0..n);
                out.phrases[i] = random_phrase(g, rng);
            }
        }
        out
    }

    /// A child of two parents: `self`'s phrases up to a cut, `other`'s after theirs.
    pub fn cross(&self, other: &Genome, g: &Grammar, rng: &mut impl Rng) -> Self {
        let a = rng.random_range(0..=self.phrases.len());
        let b = rng.random_range(0..=other.phrases.len());
        let mut phrases: Vec<Phrase> = self.phrases[..a].to_vec();
        phrases.extend_from_slice(&other.phrases[b..]);
        phrases.truncate(g.max_phrases);
        if phrases.is_empty() {
            phrases.push(self.phrases[0]);
        }
        Genome {
            opener: if rng.random_bool(0.5) {
                self.opener
            } else {
                other.opener
            },
            phrases,
        }
    }
}

/// `rest` after the space that separates rendered parts; the end of the text is the end too.
fn after_space(rest: &str) -> Option<&str> {
    match rest.is_empty() {
        true => Some(rest),
        false => rest.strip_prefix(' '),
    }
}

/// Reads `rest` as phrases after `genome`'s, depth first in the grammar's order; returns the
/// first complete reading that `fits`.
fn read_phrases(
    rest: &str,
    g: &Grammar,
    genome: &mut Genome,
    fits: &impl Fn(&Genome) -> bool,
) -> Option<Genome> {
    if rest.is_empty() {
        return (!genome.phrases.is_empty() && fits(genome)).then(|| genome.clone());
    }
    if genome.phrases.len() == g.max_phrases {
        return None;
    }
    for bank in 0..g.banks.len() {
        for (variant, text) in g.bank(bank).iter().enumerate() {
            let Some(after) = rest.strip_prefix(text.as_str()).and_then(after_space) else {
                continue;
            };
            genome.phrases.push(Phrase { bank, variant });
            if let Some(found) = read_phrases(after, g, genome, fits) {
                return Some(found);
            }
            genome.phrases.pop();
        }
    }
    None
}

fn random_phrase(g: &Grammar, rng: &mut impl Rng) -> Phrase {
    let bank = rng.random_range(0..g.banks.len());
    Phrase {
        bank,
        variant: rng.random_range(0..g.bank(bank).len().max(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn grammar() -> Grammar {
        Grammar {
            openers: vec!["".into(), "Oh.".into()],
            banks: [
                ("a".to_string(), vec!["A1 {word}.".into(), "A2.".into()]),
                ("b".to_string(), vec!["B1?".into()]),
            ]
            .into(),
            max_phrases: 3,
            feelings: vec![],
            synonyms: Default::default(),
        }
    }

    #[test]
    fn each_reply_turns_every_list_one_step() {
        let g = grammar();
        let genome = Genome {
            opener: 1,
            phrases: vec![
                Phrase {
                    bank: 0,
                    variant: 1,
                },
                Phrase {
                    bank: 1,
                    variant: 0,
                },
            ],
        };
        assert_eq!(
            genome.render(&g, 3),
            ["Oh. A2. B1?", "A1 {word}. B1?", "Oh. A2. B1?"]
        );
        assert_eq!(genome.describe(&g), "a+b");
        assert_eq!(Genome::one_of_each(&g).render(&g, 1), ["A1 {word}. B1?"]);
    }

    #[test]
    fn a_rendered_script_parses_back_to_its_genome() {
        let g = grammar();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..200 {
            let genome = Genome::random(&g, &mut rng);
            let replies = genome.render(&g, 4);
            let parsed = Genome::parse(&replies, &g).expect("a rendering parses");
            // Another reading may render the same replies (a one-variant bank turns with any
            // start), but none renders them otherwise.
            assert_eq!(parsed.render(&g, 4), replies, "{genome:?}");
        }
        let two = Genome {
            opener: 0,
            phrases: vec![
                Phrase {
                    bank: 0,
                    variant: 1,
                },
                Phrase {
                    bank: 0,
                    variant: 0,
                },
            ],
        };
        assert_eq!(Genome::parse(&two.render(&g, 2), &g), Some(two));
        // Text the grammar cannot write, or replies that do not turn as a rendering does.
        assert_eq!(Genome::parse(&["Hello there.".into()], &g), None);
        assert_eq!(
            Genome::parse(&["A2. B1?".into(), "A2. B1?".into()], &g),
            None
        );
        assert_eq!(Genome::parse(&[], &g), None);
    }

    #[test]
    fn mutation_keeps_the_bounds_and_is_seeded() {
        let g = grammar();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut x = Genome::random(&g, &mut rng);
        for _ in 0..500 {
            let y = x.mutate(&g, &mut rng);
            let z = y.cross(&x, &g, &mut rng);
            for c in [&y, &z] {
                assert!((1..=3).contains(&c.phrases.len()), "{c:?}");
                assert!(c.opener < 2);
                for p in &c.phrases {
                    assert!(p.bank < 2 && p.variant < g.bank(p.bank).len());
                }
            }
            x = z;
        }
        let again = |seed| {
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            let a = Genome::random(&g, &mut r);
            a.mutate(&g, &mut r)
        };
        assert_eq!(again(3), again(3));
    }
}
