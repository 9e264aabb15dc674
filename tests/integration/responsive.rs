//! The responsiveness head as shipped (data/responsive.*) with the real embedder, on the replies
//! written before its first fit (data/responsive/never-tuned.yaml): it ranks the replies that
//! answer a message above the stock lines that could follow any, and reads plain stock comfort at
//! even odds or below (responsiveness 0).

use std::sync::OnceLock;

use empathy_gym::environment::sim::lexicon::Lexicon;
use empathy_gym::environment::sim::responsive::{own_words, responsiveness, Responsive};
use empathy_gym::report::stats::auc;

use super::common::*;

fn head() -> &'static Responsive {
    static R: OnceLock<Responsive> = OnceLock::new();
    R.get_or_init(|| {
        Responsive::load(&root().join("data/responsive.yaml")).expect("the head loads")
    })
}

/// The reply's responsiveness to `user`, read in its own words as the fit reads it.
fn read(lexicon: &Lexicon, user: &str, reply: &str) -> f64 {
    let own = own_words(reply, [user], &lexicon.stopwords, &lexicon.feelings);
    let e = simulator().embedder();
    let m = e.embed(&[user]).unwrap().remove(0);
    let r = e.embed(&[own.as_str()]).unwrap().remove(0);
    responsiveness(head().probability(&m, &r))
}

#[derive(serde::Deserialize)]
struct Bank {
    items: Vec<Item>,
}

#[derive(serde::Deserialize)]
struct Item {
    user: String,
    specific: Vec<String>,
    generic: Vec<String>,
}

#[test]
fn answers_rank_above_stock_lines_and_plain_comfort_reads_zero() {
    let lexicon = Lexicon::load(&root().join("data/lexicon.yaml")).unwrap();
    let text = std::fs::read_to_string(root().join("data/responsive/never-tuned.yaml")).unwrap();
    let bank: Bank = serde_yaml::from_str(&text).unwrap();
    let (mut scores, mut specific) = (Vec::new(), Vec::new());
    for item in &bank.items {
        for (replies, is) in [(&item.specific, true), (&item.generic, false)] {
            for reply in replies {
                scores.push(read(&lexicon, &item.user, reply));
                specific.push(is);
            }
        }
    }
    let a = auc(&scores, &specific);
    assert!(a >= 0.8, "specific above generic: AUC {a:.3}");
    let user = "My landlord is selling the flat and I have six weeks to find somewhere I can \
                afford, with two kids in school nearby.";
    for stock in [
        "That sounds really hard. I'm here for you.",
        "You're not alone in this. Everything will work out.",
    ] {
        let v = read(&lexicon, user, stock);
        assert_eq!(v, 0.0, "{stock}: {v:.3}");
    }
}
