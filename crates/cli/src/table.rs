//! Human output: aligned tables and number formatting, pure functions from
//! data to strings (tested by comparing strings, as hyperfine does). The
//! number formats are the engine's (case names use them too).

pub use iiopbench_engine::units::{micros, num};

/// A table with a header row; columns after the first are right-aligned.
#[derive(Debug, Default, Clone)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns (besides the first) that hold text and align left.
    left: Vec<usize>,
}

impl Table {
    /// A table with these column titles.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(header: I) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
            left: Vec::new(),
        }
    }

    /// Left-align these columns too (text rather than numbers).
    pub fn left_align(mut self, cols: &[usize]) -> Self {
        self.left.extend_from_slice(cols);
        self
    }

    /// Append a row (missing cells are blank).
    pub fn row<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, cells: I) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Whether no rows were added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Render with two spaces between columns and a rule under the header.
    pub fn render(&self) -> String {
        let ncol = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut width = vec![0usize; ncol];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let fmt_row = |r: &[String]| {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let pad = w - c.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                if i == 0 || self.left.contains(&i) {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            line.trim_end().to_string() + "\n"
        };
        let mut out = fmt_row(&self.header);
        let total: usize = width.iter().sum::<usize>() + 2 * width.len().saturating_sub(1);
        out.push_str(&"─".repeat(total));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&fmt_row(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned() {
        let mut t = Table::new(["case", "Mbit/s", "p50"]);
        t.row(["oneway long", "12345", "1.5 µs"]);
        t.row(["echo", "7", "12.25 µs"]);
        let expected = "case         Mbit/s       p50\n\
                        ─────────────────────────────\n\
                        oneway long   12345    1.5 µs\n\
                        echo              7  12.25 µs\n";
        assert_eq!(t.render(), expected);
    }
}
