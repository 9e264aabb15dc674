//! Specificity's PMI reading (`specificity.pmi`, src/environment/sim/pmi.rs) with the fluency
//! judge's language model as shipped: on messages and replies of the never-tuned bank
//! (data/responsive/never-tuned.yaml), a reply that answers this message in its own words gains
//! probability from it, and stock comfort, which some generic message of distress predicts as well,
//! does not. Only bank items whose every reply results/validation/pmi.md read are used.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use empathy_gym::environment::sim::fluency::Fluency;
use empathy_gym::environment::sim::lexicon::Lexicon;
use empathy_gym::environment::sim::pmi::{gains, load_setting, pmi, PmiUse};
use empathy_gym::environment::sim::responsive::content_words;

use super::common::*;

fn judge() -> &'static Fluency {
    static F: OnceLock<Fluency> = OnceLock::new();
    F.get_or_init(|| {
        Fluency::load(&root().join("data/fluency.yaml"), &candle_core::Device::Cpu)
            .expect("the judge loads")
    })
}

/// The setting the first honest set was re-scored with (six generic messages, written before any
/// reading; floor 0, ceiling 0.3).
fn reading() -> PmiUse {
    load_setting(&root().join("results/validation/pmi/specificity-pmi-best-of-six.yaml"))
        .expect("the setting loads")
}

fn read(user: &str, reply: &str) -> f64 {
    let lexicon = Lexicon::load(&root().join("data/lexicon.yaml")).unwrap();
    let words: BTreeSet<String> = content_words([user], &lexicon.stopwords);
    let g = gains(judge(), &reading(), &[user], reply, &words).unwrap();
    assert_eq!(g.len(), 6, "one gain per generic message");
    pmi(&g).expect("the reply has words of its own")
}

#[test]
fn replies_that_answer_this_message_gain_and_stock_comfort_does_not() {
    let cases = [
        (
            "My sister stopped talking to me after the wedding and I don't even know what I did.",
            "Not knowing what went wrong with someone that close must leave you replaying every \
             moment of the day.",
            "That sounds really hard. I'm here for you.",
        ),
        (
            "I moved to a new city for work and I eat dinner alone every night.",
            "Starting over somewhere you don't know anyone makes the evenings long. Has work given \
             you any chance to meet people?",
            "That's tough. You're doing your best.",
        ),
    ];
    let bank = std::fs::read_to_string(root().join("data/responsive/never-tuned.yaml")).unwrap();
    for (user, specific, generic) in cases {
        for text in [user, specific, generic] {
            assert!(bank.contains(text), "not in the bank: {text}");
        }
        let (s, g) = (read(user, specific), read(user, generic));
        assert!(s > 0.1, "{specific}: {s:.3}");
        assert!(g < 0.0, "{generic}: {g:.3}");
        assert!(reading().score(g) == 0.0 && reading().score(s) > 0.3);
    }
}
