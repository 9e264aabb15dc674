//! The ratings CSV the page exports: `rater,item,side,empathy,relevance,naturalness,rated_at`, one
//! row per dialogue a rater rated. A scale left empty was not rated; a rating is a whole number
//! from 1 to 5. Whatever is wrong is reported with the file, line and column.

use std::path::{Path, PathBuf};

use super::csv_table::CsvTable;
use super::study::SCALES;
use crate::error::{Error, Result};

/// The columns the page writes, in order (`rated_at` may be missing from hand-made files).
pub const RATINGS_HEADER: [&str; 7] = [
    "rater",
    "item",
    "side",
    "empathy",
    "relevance",
    "naturalness",
    "rated_at",
];

/// One rater's ratings of one dialogue (an item, and its side in a pair).
#[derive(Debug, Clone, PartialEq)]
pub struct Rating {
    /// The file and line it was read from, for messages.
    pub file: PathBuf,
    pub line: usize,
    pub rater: String,
    pub item: String,
    /// `A` or `B` in a pair; empty for a single dialogue.
    pub side: String,
    /// One per [`SCALES`]; `None` where the rater left the scale empty.
    pub scores: [Option<u8>; 3],
    /// When the rater last changed it (ISO 8601, the browser's clock), as written.
    pub rated_at: String,
}

/// Reads one ratings CSV.
pub fn read_ratings(path: &Path) -> Result<Vec<Rating>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let table = CsvTable::parse(path, &text)?;
    let what = "the CSV the rating page exported";
    let rater = table.column("rater", what)?;
    let item = table.column("item", what)?;
    let side = table.column("side", what)?;
    let scales: Vec<usize> = SCALES
        .iter()
        .map(|s| table.column(s, what))
        .collect::<Result<_>>()?;
    let rated_at = table.optional_column("rated_at");
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let field = |i: usize| rec.get(i).unwrap_or("").trim().to_string();
        let at = |name: &str| format!("line {line}, field {name}");
        let r = Rating {
            file: path.to_path_buf(),
            line: *line,
            rater: field(rater),
            item: field(item),
            side: field(side),
            scores: [0, 1, 2].map(|k| score(&field(scales[k]))),
            rated_at: rated_at.map(field).unwrap_or_default(),
        };
        for (k, name) in SCALES.iter().enumerate() {
            let cell = field(scales[k]);
            if !cell.is_empty() && r.scores[k].is_none() {
                return Err(Error::input(
                    path,
                    at(name),
                    format!("`{cell}` is not a rating; write a whole number from 1 to 5, or leave it empty"),
                ));
            }
        }
        for (name, value) in [("rater", &r.rater), ("item", &r.item)] {
            if value.is_empty() {
                return Err(Error::input(
                    path,
                    at(name),
                    "is empty; every row needs the rater's name and the item it rates",
                ));
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// A rating cell: a whole number from 1 to 5.
fn score(cell: &str) -> Option<u8> {
    cell.parse::<u8>().ok().filter(|v| (1..=5).contains(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Rating>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("alice.csv");
        std::fs::write(&path, text).unwrap();
        read_ratings(&path)
    }

    fn err(text: &str) -> String {
        read(text).unwrap_err().to_string()
    }

    const HEAD: &str = "rater,item,side,empathy,relevance,naturalness,rated_at\n";

    #[test]
    fn rows_read_with_empty_scales_as_unrated() {
        let r = read(&format!(
            "{HEAD}alice,0a1b2c3d,A,4,,5,2026-01-02T03:04:05Z\n\"bo, b\",ffff0000,,1,2,3,\n"
        ))
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].scores, [Some(4), None, Some(5)]);
        assert_eq!((r[0].line, r[0].side.as_str()), (2, "A"));
        assert_eq!(
            (r[1].rater.as_str(), r[1].side.as_str(), r[1].line),
            ("bo, b", "", 3)
        );
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let e = err(&format!("{HEAD}alice,x,A,4,6,5,t\n"));
        assert!(
            e.contains("alice.csv: line 2, field relevance: `6` is not a rating"),
            "{e}"
        );
        let e = err(&format!("{HEAD}alice,x,A,4,5,5,t\nalice,y,A,four,5,5,t\n"));
        assert!(e.contains("line 3, field empathy: `four`"), "{e}");
        let e = err(&format!("{HEAD}alice,x,A,4.5,5,5,t\n"));
        assert!(e.contains("line 2, field empathy: `4.5`"), "{e}");
        let e = err(&format!("{HEAD},x,A,4,5,5,t\n"));
        assert!(e.contains("line 2, field rater: is empty"), "{e}");
        let e = err("rater,item,side,empathy,naturalness\nalice,x,A,4,5\n");
        assert!(
            e.contains("alice.csv: line 1: no column `relevance`"),
            "{e}"
        );
        let e = err(&format!("{HEAD}alice,x,A,4,5\n"));
        assert!(e.contains("line 2: 5 fields where the header has 7"), "{e}");
    }
}
