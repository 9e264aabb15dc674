//! A tiny SVG writer without dependencies: the shared drawing surface of the charts in this module
//! (line charts for the trainer's reward curves, grouped bars for evaluations). It only knows the
//! handful of elements those charts use, escapes all text, and prints coordinates with two
//! decimals so the same chart always gives the same bytes.

use std::fmt::Write as _;

/// Okabe-Ito colours (colour-blind safe), used in order for series and bar groups.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// The colour of the `i`-th series; cycles through [`PALETTE`].
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for XML content and attribute values (`&`, `<`, `>`, `"`, `'`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {} // not allowed in XML 1.0
            c => out.push(c),
        }
    }
    out
}

/// Formats a coordinate with at most two decimals and no trailing zeros (`12`, `3.5`, `-0.25`).
pub fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{:.2}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Horizontal anchor of a text element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Text starts at x.
    Start,
    /// Text is centred on x.
    Middle,
    /// Text ends at x.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// `x,y x,y ...` for a `points` attribute.
fn points_attr(points: &[(f64, f64)]) -> String {
    let pts: Vec<String> = points
        .iter()
        .map(|&(x, y)| format!("{},{}", num(x), num(y)))
        .collect();
    pts.join(" ")
}

/// An SVG document being written: elements are appended in paint order.
#[derive(Debug, Clone)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

impl Svg {
    /// An empty document of `width` x `height` pixels with a white background.
    pub fn new(width: f64, height: f64) -> Self {
        let mut svg = Svg {
            width,
            height,
            body: String::new(),
        };
        svg.rect(0.0, 0.0, width, height, "#ffffff", None);
        svg
    }

    /// A filled rectangle, optionally with a 1 px stroke.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>) {
        let stroke = stroke
            .map(|s| format!(" stroke=\"{}\"", escape(s)))
            .unwrap_or_default();
        let _ = writeln!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            escape(fill),
            stroke
        );
    }

    /// A straight line; `dash` is an SVG dash array such as `"4 3"`.
    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        color: &str,
        width: f64,
        dash: Option<&str>,
    ) {
        let dash = dash
            .map(|d| format!(" stroke-dasharray=\"{}\"", escape(d)))
            .unwrap_or_default();
        let _ = writeln!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            escape(color),
            num(width),
            dash
        );
    }

    /// An open polyline through `points` (pixel coordinates).
    pub fn polyline(&mut self, points: &[(f64, f64)], color: &str, width: f64) {
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"/>",
            points_attr(points),
            escape(color),
            num(width)
        );
    }

    /// A closed polygon through `points` (pixel coordinates), filled with `fill` at `opacity`.
    pub fn polygon(&mut self, points: &[(f64, f64)], fill: &str, opacity: f64) {
        let _ = writeln!(
            self.body,
            "<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"{}\" stroke=\"none\"/>",
            points_attr(points),
            escape(fill),
            num(opacity)
        );
    }

    /// A filled circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/>",
            num(cx),
            num(cy),
            num(r),
            escape(fill)
        );
    }

    /// Text at (x, y) (baseline), `size` in px, rotated by `rotate` degrees around (x, y).
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        anchor: Anchor,
        rotate: f64,
        bold: bool,
    ) {
        let rot = if rotate != 0.0 {
            format!(
                " transform=\"rotate({} {} {})\"",
                num(rotate),
                num(x),
                num(y)
            )
        } else {
            String::new()
        };
        let weight = if bold { " font-weight=\"bold\"" } else { "" };
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{}{}>{}</text>",
            num(x),
            num(y),
            num(size),
            anchor.as_str(),
            weight,
            rot,
            escape(text)
        );
    }

    /// The finished document, with an XML declaration and a font family for all text.
    pub fn finish(self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
             width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n{}</svg>\n",
            self.body,
            w = num(self.width),
            h = num(self.height),
        )
    }
}

/// Checks that `xml` is well formed enough for our writers: every tag closes in order, attribute
/// values are quoted, and every `&` starts a known entity. Returns a message on the first problem.
#[cfg(test)]
pub(crate) fn check_xml(xml: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        check_text(&rest[..open])?;
        let close = rest[open..].find('>').ok_or("unterminated tag")? + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(top) if top == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        if !tag.matches('"').count().is_multiple_of(2) {
            return Err(format!("unbalanced quotes in <{tag}>"));
        }
        check_text(tag)?;
        let name = tag
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        if !tag.ends_with('/') {
            stack.push(name.to_string());
        }
    }
    check_text(rest)?;
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed tags {stack:?}"))
    }
}

#[cfg(test)]
fn check_text(text: &str) -> Result<(), String> {
    for (i, _) in text.match_indices('&') {
        let ent = &text[i..];
        if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
            .iter()
            .any(|e| ent.starts_with(e))
        {
            return Err(format!("raw & in {text:?}"));
        }
    }
    if text.contains('<') {
        return Err(format!("raw < in {text:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_characters() {
        assert_eq!(
            escape("a < b & c > \"d\" 'e'"),
            "a &lt; b &amp; c &gt; &quot;d&quot; &apos;e&apos;"
        );
        assert_eq!(escape("bell\u{7}"), "bell");
    }

    #[test]
    fn num_trims_and_never_prints_minus_zero() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(3.5), "3.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(1.005), "1"); // 1.005 is 1.00499.. in binary
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn document_is_balanced_and_text_escaped() {
        let mut svg = Svg::new(100.0, 50.0);
        svg.text(10.0, 20.0, "R&D <loss>", 12.0, Anchor::Start, -45.0, true);
        svg.line(0.0, 0.0, 10.0, 10.0, "#000", 1.0, Some("4 3"));
        let doc = svg.finish();
        assert!(doc.contains("R&amp;D &lt;loss&gt;"));
        assert!(doc.contains("rotate(-45 10 20)"));
        check_xml(&doc).unwrap();
    }

    #[test]
    fn checker_rejects_broken_documents() {
        assert!(check_xml("<svg><g></svg>").is_err());
        assert!(check_xml("<svg>a & b</svg>").is_err());
        assert!(check_xml("<svg><text>").is_err());
        assert!(check_xml("<svg><rect x=\"1/></svg>").is_err());
    }
}
