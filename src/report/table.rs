//! Tables as markdown and CSV: the two text forms every report in empathy-gym writes
//! (docs/DESIGN.md section 16). One `Table` value renders to both, so the two files of a report can
//! never disagree.

/// A rectangular table of already formatted cells, with one header row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Table {
    /// Column names, in order.
    pub headers: Vec<String>,
    /// Body rows; a row shorter than `headers` is padded with empty cells when rendered.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column names and no rows.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends one row of cells.
    pub fn push_row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// RFC 4180 CSV written by the `csv` crate: comma separated, `\n` line ends, fields quoted
    /// only when needed.
    pub fn to_csv(&self) -> String {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        let records =
            std::iter::once(self.headers.clone()).chain(self.rows.iter().map(|r| self.padded(r)));
        for record in records {
            // Writing to memory cannot fail.
            w.write_record(&record).expect("CSV into memory");
        }
        let bytes = w.into_inner().expect("CSV into memory");
        String::from_utf8(bytes).expect("cells are UTF-8")
    }

    /// Writes [`Table::to_csv`] to `path`.
    pub fn write_csv(&self, path: &std::path::Path) -> crate::error::Result<()> {
        std::fs::write(path, self.to_csv()).map_err(|e| crate::error::Error::io(path, e))
    }

    /// A GitHub-flavoured markdown table; `|` in cells is escaped and newlines become spaces.
    /// Columns whose body cells all look numeric (or are empty or `-`) are right-aligned.
    pub fn to_markdown(&self) -> String {
        let width = self.headers.len();
        let mut out = String::new();
        push_md_line(&mut out, &self.headers);
        let aligns: Vec<&str> = (0..width)
            .map(|col| {
                let numeric = !self.rows.is_empty()
                    && self.rows.iter().all(|r| {
                        r.get(col)
                            .is_none_or(|c| c.is_empty() || c == "-" || looks_numeric(c))
                    });
                if numeric {
                    "---:"
                } else {
                    "---"
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", aligns.join(" | ")));
        for row in &self.rows {
            push_md_line(&mut out, &self.padded(row));
        }
        out
    }

    fn padded(&self, row: &[String]) -> Vec<String> {
        let mut cells = row.to_vec();
        while cells.len() < self.headers.len() {
            cells.push(String::new());
        }
        cells
    }
}

/// Escapes a markdown table cell: `|` would end the cell, a newline would end the row.
pub fn markdown_cell(cell: &str) -> String {
    cell.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

fn push_md_line(out: &mut String, cells: &[String]) {
    let line: Vec<String> = cells.iter().map(|c| markdown_cell(c)).collect();
    out.push_str(&format!("| {} |\n", line.join(" | ")));
}

/// True for cells such as `12`, `-0.5`, `+7.4`, `3.1%` or `+7.4 [+3.1, +11.6]`: they start with a
/// sign or digit. Used only to right-align markdown columns.
fn looks_numeric(cell: &str) -> bool {
    let t = cell.trim();
    let t = t.strip_prefix(['+', '-', '<']).unwrap_or(t);
    t.chars().next().is_some_and(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_fields_that_need_it_and_reads_back() {
        let mut t = Table::new(["a", "b"]);
        t.push_row(["plain", "a,b"]);
        t.push_row(["say \"hi\"", "two\nlines"]);
        let csv = t.to_csv();
        assert_eq!(
            csv,
            "a,b\nplain,\"a,b\"\n\"say \"\"hi\"\"\",\"two\nlines\"\n"
        );
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let back: Vec<Vec<String>> = r
            .records()
            .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(back, t.rows);
    }

    #[test]
    fn csv_table_has_header_then_rows_and_pads_short_rows() {
        let mut t = Table::new(["model", "note", "n"]);
        t.push_row(["base", "x, y", "3"]);
        t.push_row(["warm"]);
        assert_eq!(t.to_csv(), "model,note,n\nbase,\"x, y\",3\nwarm,,\n");
    }

    #[test]
    fn markdown_escapes_pipes_and_right_aligns_numbers() {
        let mut t = Table::new(["name", "rate"]);
        t.push_row(["a|b", "12.5%"]);
        t.push_row(["line\nbreak", "-3.0"]);
        t.push_row(["none", "-"]);
        let md = t.to_markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "| name | rate |");
        assert_eq!(lines[1], "| --- | ---: |");
        assert_eq!(lines[2], "| a\\|b | 12.5% |");
        assert_eq!(lines[3], "| line break | -3.0 |");
        assert_eq!(lines.len(), 5);
    }
}
