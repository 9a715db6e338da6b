//! Human output: aligned tables and number formatting, pure functions from
//! data to strings (tested by comparing strings, as hyperfine does). The
//! number formats are the engine's (case names use them too).

pub use iiopbench_engine::units::{micros, num};

/// The decimals that show `v` to three significant digits (none for
/// 100 and more).
fn decimals3(v: f64) -> usize {
    let a = v.abs();
    if !a.is_finite() || a == 0.0 || a >= 100.0 {
        return 0;
    }
    (2 - a.log10().floor() as i32).max(0) as usize
}

/// `v` to three significant digits: `0.823`, `12.3`, `5430`.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        let unit = 10f64.powi(a.log10().floor() as i32 - 2);
        return format!("{:.0}", (v / unit).round() * unit);
    }
    format!("{v:.*}", decimals3(v))
}

/// A count or rate to three significant digits, with k or M beyond
/// a thousand: `812`, `12.3k`, `1.05M`.
pub fn count3(v: f64) -> String {
    let a = v.abs();
    if a >= 999.5e3 {
        format!("{}M", sig3(v / 1e6))
    } else if a >= 999.5 {
        format!("{}k", sig3(v / 1e3))
    } else {
        sig3(v)
    }
}

/// `ci` to two significant digits, and no more decimals than `max_dec`.
fn sig2(c: f64, max_dec: usize) -> String {
    let a = c.abs();
    if a >= 100.0 {
        let unit = 10f64.powi(a.log10().floor() as i32 - 1);
        return format!("{:.0}", (c / unit).round() * unit);
    }
    let d = if a > 0.0 {
        (1 - a.log10().floor() as i32).max(0) as usize
    } else {
        max_dec
    };
    format!("{c:.*}", d.min(max_dec))
}

/// `v ± ci`: `v` to three significant digits, `ci` to two and no finer
/// than `v`: `5430 ± 120`, `0.823 ± 0.031`.
pub fn pm(v: f64, ci: Option<f64>) -> String {
    match ci.filter(|c| c.is_finite()) {
        Some(c) => format!("{} ± {}", sig3(v), sig2(c, decimals3(v))),
        None => sig3(v),
    }
}

/// A ratio as [`pm`] writes it, `x` after the ratio: `0.823x ± 0.031`.
pub fn ratio_pm(q: f64, ci: Option<f64>) -> String {
    match ci.filter(|c| c.is_finite()) {
        Some(c) => format!("{}x ± {}", sig3(q), sig2(c, decimals3(q))),
        None => format!("{}x", sig3(q)),
    }
}

/// Microseconds to three significant digits in µs, ms or s, with an
/// interval in the same unit: `123 ± 4 µs`, `1.23 ms`.
pub fn micros3(us: f64, ci: Option<f64>) -> String {
    let (div, unit) = if us >= 999.5e3 {
        (1e6, "s")
    } else if us >= 999.5 {
        (1e3, "ms")
    } else {
        (1.0, "µs")
    };
    format!("{} {unit}", pm(us / div, ci.map(|c| c / div)))
}

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

    /// The rendered width in characters (two spaces between columns).
    pub fn width(&self) -> usize {
        let ncol = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        (0..ncol)
            .map(|i| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .sum::<usize>()
            + 2 * ncol.saturating_sub(1)
    }

    /// Drop columns, in the order `droppable` names them (by their
    /// title), until the table is at most `max` characters wide or none
    /// is left to drop; returns the titles dropped.
    pub fn fit(&mut self, max: usize, droppable: &[&str]) -> Vec<String> {
        let mut dropped = Vec::new();
        for title in droppable {
            if self.width() <= max {
                break;
            }
            let Some(i) = self.header.iter().position(|h| h == title) else {
                continue;
            };
            self.header.remove(i);
            for r in &mut self.rows {
                if i < r.len() {
                    r.remove(i);
                }
            }
            self.left = self
                .left
                .iter()
                .filter(|&&c| c != i)
                .map(|&c| if c > i { c - 1 } else { c })
                .collect();
            dropped.push(title.to_string());
        }
        dropped
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

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(5432.1), "5430");
        assert_eq!(sig3(123456.0), "123000");
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(0.82345), "0.823");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(count3(812.4), "812");
        assert_eq!(count3(12345.0), "12.3k");
        assert_eq!(count3(1_049_999.0), "1.05M");
        assert_eq!(pm(5432.1, Some(123.4)), "5430 ± 120");
        assert_eq!(pm(55.3, Some(2.34)), "55.3 ± 2.3");
        assert_eq!(pm(15.0, Some(18.7)), "15.0 ± 19");
        assert_eq!(ratio_pm(0.0832, Some(0.0553)), "0.0832x ± 0.055");
        assert_eq!(ratio_pm(1.5, None), "1.50x");
        assert_eq!(pm(0.82345, Some(0.0312)), "0.823 ± 0.031");
        assert_eq!(micros3(123.4, Some(4.4)), "123 ± 4 µs");
        assert_eq!(micros3(1234.0, None), "1.23 ms");
    }

    #[test]
    fn fit_drops_the_named_columns_in_turn_until_the_table_fits() {
        let mut t = Table::new(["case", "a", "bbbbbbbbbb", "c"]);
        t.row(["x", "1", "2", "3"]);
        assert_eq!(t.width(), 4 + 2 + 1 + 2 + 10 + 2 + 1);
        assert!(t.fit(100, &["bbbbbbbbbb"]).is_empty());
        assert_eq!(t.fit(12, &["nope", "bbbbbbbbbb", "a"]), ["bbbbbbbbbb"]);
        assert_eq!(t.render(), "case  a  c\n──────────\nx     1  3\n");
    }
}
