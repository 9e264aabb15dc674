//! The study's key, `*.key.csv` beside the page: one row per item and side, naming the episode it
//! shows. The page itself never carries it, so a rater cannot tell a pair's trained side.
//!
//! Columns: `item,side,arm,log,line,episode`. `side` is `A` or `B` in a pair and empty for a single
//! dialogue; `arm` is `base` or `trained` in a pair and the log's file name otherwise; `log` and
//! `line` say where the episode was read (for people, and for finding the logs again); `episode` is
//! its fingerprint, which the join uses.

use std::path::Path;

use super::csv_table::CsvTable;
use super::study::Study;
use crate::error::{Error, Result};
use crate::report::table::Table;

/// The key's columns, in order.
pub const KEY_HEADER: [&str; 6] = ["item", "side", "arm", "log", "line", "episode"];

/// One row of the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub item: String,
    pub side: String,
    pub arm: String,
    pub log: String,
    pub line: usize,
    pub episode: String,
    /// The key file's line this row was read from (0 when made in memory).
    pub key_line: usize,
}

impl Study {
    /// The key of this study, in page order.
    pub fn key_rows(&self) -> Vec<KeyRow> {
        self.items
            .iter()
            .flat_map(|item| {
                item.sides.iter().map(|s| KeyRow {
                    item: item.id.clone(),
                    side: s.side.clone(),
                    arm: s.arm.clone(),
                    log: s.log.clone(),
                    line: s.line,
                    episode: s.episode.clone(),
                    key_line: 0,
                })
            })
            .collect()
    }
}

/// Writes the key as CSV.
pub fn write_key(path: &Path, rows: &[KeyRow]) -> Result<()> {
    let mut t = Table::new(KEY_HEADER);
    for r in rows {
        t.push_row([
            r.item.clone(),
            r.side.clone(),
            r.arm.clone(),
            r.log.clone(),
            r.line.to_string(),
            r.episode.clone(),
        ]);
    }
    t.write_csv(path)
}

/// Reads a key written by [`write_key`]; a missing column, a bad line number or an item and side
/// listed twice is an error naming the file, line and field.
pub fn read_key(path: &Path) -> Result<Vec<KeyRow>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let table = CsvTable::parse(path, &text)?;
    let cols: Vec<usize> = KEY_HEADER
        .iter()
        .map(|c| table.column(c, "the key `replay html --rate` wrote"))
        .collect::<Result<_>>()?;
    let mut rows: Vec<KeyRow> = Vec::new();
    for (line, rec) in &table.rows {
        let field = |i: usize| rec.get(cols[i]).unwrap_or("").to_string();
        let log_line = field(4);
        let row = KeyRow {
            item: field(0),
            side: field(1),
            arm: field(2),
            log: field(3),
            line: log_line.trim().parse().map_err(|_| {
                Error::input(
                    path,
                    format!("line {line}, field line"),
                    format!("`{log_line}` is not a line number"),
                )
            })?,
            episode: field(5),
            key_line: *line,
        };
        if row.item.is_empty() || row.episode.is_empty() {
            let which = if row.item.is_empty() {
                "item"
            } else {
                "episode"
            };
            return Err(Error::input(
                path,
                format!("line {line}, field {which}"),
                "is empty; use the key `replay html --rate` wrote, unedited",
            ));
        }
        if let Some(first) = rows
            .iter()
            .find(|r| r.item == row.item && r.side == row.side)
        {
            return Err(Error::input(
                path,
                format!("line {line}, field item"),
                format!(
                    "item {} side `{}` is listed twice (also line {}); use the key `replay html \
                     --rate` wrote, unedited",
                    row.item, row.side, first.key_line
                ),
            ));
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_reads_back_and_names_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key.csv");
        let row = KeyRow {
            item: "0a1b2c3d".into(),
            side: "A".into(),
            arm: "trained".into(),
            log: "runs/a, b.jsonl".into(),
            line: 7,
            episode: "00ff00ff00ff00ff".into(),
            key_line: 0,
        };
        write_key(&path, std::slice::from_ref(&row)).unwrap();
        let back = read_key(&path).unwrap();
        assert_eq!(back, vec![KeyRow { key_line: 2, ..row }]);

        std::fs::write(
            &path,
            "item,side,arm,log,line,episode\nx,A,base,l,seven,e\n",
        )
        .unwrap();
        let e = read_key(&path).unwrap_err().to_string();
        assert!(e.contains("k.key.csv: line 2, field line: `seven`"), "{e}");
        std::fs::write(&path, "item,side,arm,log,episode\n").unwrap();
        let e = read_key(&path).unwrap_err().to_string();
        assert!(e.contains("line 1: no column `line`"), "{e}");
    }
}
