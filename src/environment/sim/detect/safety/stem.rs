//! Text as the safety rules read it: words, lowercased, contractions spelled out, each word cut
//! to its Snowball (Porter 2) English stem after a table of irregular forms, reflexive pronouns as
//! one word, and filler words (articles, possessives) left out. The same function reads the rules'
//! phrases, so "ended your life", "ending my life" and "end your life" all read `end life`, and
//! "all of your pills" reads as "all your pills" does.

use std::collections::BTreeMap;

use rust_stemmers::{Algorithm, Stemmer};
use serde::Deserialize;

use crate::sim::text::normalize;

/// `data/safety.yaml`'s `normalize` section.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StemConfig {
    /// Contractions spelled out ("don't": "do not"), matched as whole words.
    #[serde(default)]
    pub contractions: BTreeMap<String, String>,
    /// Irregular forms and their base word ("took": "take"), before stemming.
    #[serde(default)]
    pub irregular: BTreeMap<String, String>,
    /// Words read as one word ("yourself", "myself": "self").
    #[serde(default)]
    pub same: BTreeMap<String, Vec<String>>,
    /// Words left out: articles, possessives, intensifiers.
    #[serde(default)]
    pub skip: Vec<String>,
}

/// The normalizer.
pub struct Stems {
    cfg: StemConfig,
    same: BTreeMap<String, String>,
    stemmer: Stemmer,
}

impl Stems {
    pub fn new(cfg: StemConfig) -> Self {
        let same = cfg
            .same
            .iter()
            .flat_map(|(to, froms)| froms.iter().map(move |f| (f.to_lowercase(), to.clone())))
            .collect();
        Stems {
            cfg,
            same,
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// The stems of a text, in order, with [`BOUNDARY`] where a comma, semicolon or colon stood.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, clause) in text.split([',', ';', ':']).enumerate() {
            if i > 0 {
                out.push(BOUNDARY.to_string());
            }
            for word in normalize(clause).split_whitespace() {
                let word = word.trim_matches('\'');
                match self.cfg.contractions.get(word) {
                    Some(full) => full.split_whitespace().for_each(|w| self.push(w, &mut out)),
                    None => self.push(word, &mut out),
                }
            }
        }
        out
    }

    fn push(&self, word: &str, out: &mut Vec<String>) {
        // "someone's" and "parents'" read as their owner.
        let word = word.strip_suffix("'s").unwrap_or(word).trim_matches('\'');
        if word.is_empty() || self.cfg.skip.iter().any(|s| s == word) {
            return;
        }
        let word = self.same.get(word).map_or(word, String::as_str);
        let base = self.cfg.irregular.get(word).map_or(word, String::as_str);
        out.push(self.stemmer.stem(base).into_owned());
    }
}

/// The token a clause break (comma, semicolon, colon) leaves: no phrase's gap crosses it, so
/// "get some sleep, drink water" does not read as "get drunk".
pub const BOUNDARY: &str = "|";

/// Where `phrase` occurs in `tokens` with at most `gap` other tokens between two of its words and
/// no [`BOUNDARY`] among them: the index of its first and one past its last token. Empty phrases
/// never match.
pub fn find(tokens: &[String], phrase: &[String], gap: usize) -> Option<(usize, usize)> {
    let first = phrase.first()?;
    'start: for start in (0..tokens.len()).filter(|&i| &tokens[i] == first) {
        let mut at = start;
        for word in &phrase[1..] {
            let until = (at + 2 + gap).min(tokens.len());
            let within = (at + 1..until).take_while(|&j| tokens[j] != BOUNDARY);
            match within.into_iter().find(|&j| &tokens[j] == word) {
                Some(j) => at = j,
                None => continue 'start,
            }
        }
        return Some((start, at + 1));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems() -> Stems {
        Stems::new(StemConfig {
            contractions: [("don't", "do not"), ("you'd", "you would")]
                .into_iter()
                .map(|(a, b)| (a.into(), b.into()))
                .collect(),
            irregular: [("took".to_string(), "take".to_string())].into(),
            same: [("self".to_string(), vec!["yourself".into(), "myself".into()])].into(),
            skip: vec!["the".into(), "your".into(), "my".into(), "of".into()],
        })
    }

    fn t(s: &str) -> Vec<String> {
        stems().tokens(s)
    }

    #[test]
    fn inflections_pronouns_and_fillers_read_alike() {
        assert_eq!(t("ended your life"), t("end my life"));
        assert_eq!(t("Ending the life"), vec!["end", "life"]);
        assert_eq!(t("all of your pills"), t("all pills"));
        assert_eq!(t("Don't hurt yourself"), vec!["do", "not", "hurt", "self"]);
        assert_eq!(t("she took them"), t("she takes them"));
    }

    #[test]
    fn phrases_match_with_a_bounded_gap() {
        let text = t("you could just take every one of the pills tonight");
        // "of" and "the" are left out: "every one" stands between.
        assert_eq!(find(&text, &t("take pills"), 2), Some((3, 7)));
        assert_eq!(find(&text, &t("take pills"), 1), None, "two words between");
        assert_eq!(find(&text, &t("pills take"), 5), None, "order matters");
        assert_eq!(find(&text, &[], 5), None);
        // A clause break stops the gap: a list of errands is not a phrase.
        let errands = t("get some sleep, drink water");
        assert_eq!(find(&errands, &t("get drink"), 2), None);
        assert_eq!(find(&t("get some drink"), &t("get drink"), 2), Some((0, 3)));
    }
}
