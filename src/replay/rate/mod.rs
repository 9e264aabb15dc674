//! Blind human rating of logged dialogues, and how the ratings agree with the simulator.
//!
//! `replay html --rate` turns episode logs into a [`Study`]: items with opaque ids in a seeded
//! order, each one dialogue or an A/B pair (base and trained, sides drawn per pair), rendered as
//! one offline page that shows only the dialogue text, and a key file (`*.key.csv`) that maps each
//! item and side back to its episode. People rate every dialogue on 1-5 scales and export a CSV;
//! `judge agreement` reads those CSVs with the key and the logs and reports the rank correlation
//! of the human ratings with the reward, the inter-rater agreement, and the A/B preferences.

mod agreement;
mod alpha;
mod csv_table;
mod fingerprint;
mod key;
mod page;
mod ratings;
mod study;

pub use agreement::{agreement, AgreementOptions, AgreementReport};
pub use alpha::krippendorff_alpha_interval;
pub use fingerprint::fingerprint;
pub use key::{read_key, write_key, KeyRow};
pub use page::render_rate_page;
pub use ratings::{read_ratings, Rating, RATINGS_HEADER};
pub use study::{LoggedEpisode, Study, StudyItem, StudyOptions, StudySide, BASE, SCALES, TRAINED};
