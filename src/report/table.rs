//! Tables as markdown and CSV: the two text forms every report in empathy-gym writes (DESIGN.md
//! section 7: "CSV plus a markdown table"). One `Table` value renders to both, so the two files of a
//! report can never disagree.

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

    /// RFC 4180 CSV: comma separated, `\n` line ends, fields quoted only when needed.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        push_csv_line(&mut out, &self.headers);
        for row in &self.rows {
            push_csv_line(&mut out, &self.padded(row));
        }
        out
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

/// Quotes one CSV field when it holds a comma, a quote, a CR or LF, or leading/trailing spaces;
/// inner quotes are doubled (RFC 4180 section 2, rules 6 and 7).
pub fn csv_field(field: &str) -> String {
    let needs_quotes =
        field.contains([',', '"', '\n', '\r']) || field.starts_with(' ') || field.ends_with(' ');
    if needs_quotes {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// Escapes a markdown table cell: `|` would end the cell, a newline would end the row.
pub fn markdown_cell(cell: &str) -> String {
    cell.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

fn push_csv_line(out: &mut String, cells: &[String]) {
    let line: Vec<String> = cells.iter().map(|c| csv_field(c)).collect();
    out.push_str(&line.join(","));
    out.push('\n');
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
    fn csv_quotes_only_fields_that_need_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field(" padded"), "\" padded\"");
        assert_eq!(csv_field(""), "");
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
