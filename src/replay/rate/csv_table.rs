//! A CSV file read whole, with the line each record starts on, so that the key and the ratings
//! readers can name the file, line and column of whatever is wrong.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The header and the records of one CSV file.
pub(super) struct CsvTable {
    path: PathBuf,
    header: Vec<String>,
    /// (line the record starts on, its fields).
    pub rows: Vec<(usize, csv::StringRecord)>,
}

impl CsvTable {
    /// Parses `text` (read from `path`); a record with another number of fields than the header is
    /// an error naming its line.
    pub fn parse(path: &Path, text: &str) -> Result<CsvTable> {
        let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let header = reader
            .headers()
            .map_err(|e| csv_error(path, &e))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        let mut rows = Vec::new();
        for rec in reader.records() {
            let rec = rec.map_err(|e| csv_error(path, &e))?;
            let line = rec.position().map_or(0, |p| p.line() as usize);
            rows.push((line, rec));
        }
        Ok(CsvTable {
            path: path.to_path_buf(),
            header,
            rows,
        })
    }

    /// The index of column `name`; its absence is an error that says the file should be `what`.
    pub fn column(&self, name: &str, what: &str) -> Result<usize> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            Error::input(
                &self.path,
                "line 1",
                format!(
                    "no column `{name}` in the header ({}); give {what}",
                    self.header.join(",")
                ),
            )
        })
    }

    /// The index of column `name`, if the file has it.
    pub fn optional_column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

fn csv_error(path: &Path, e: &csv::Error) -> Error {
    let line = e.position().map_or(0, |p| p.line() as usize);
    let what = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields where the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".to_string(),
        _ => e.to_string(),
    };
    Error::input(
        path,
        format!("line {line}"),
        format!("{what}; is this the CSV the page exported?"),
    )
}
