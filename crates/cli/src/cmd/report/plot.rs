//! The figure kinds of a report, drawn as SVG strings with plotters' SVG
//! backend: x/y line charts (log2-size, linear or percentile x axis),
//! horizontal stacked bars, horizontal interval charts, and a pass/fail
//! matrix (hand-written SVG: a grid of labelled cells). Legends are drawn
//! in a column of their own to the right of the plot, so they never hide
//! data however many series there are.

use plotters::coord::Shift;
use plotters::prelude::*;

pub use iiopbench_engine::report::{Bar, Chart, Series, Style, XAxis};

/// Width and height of every chart, pixels.
const W: u32 = 900;
const H: u32 = 480;
/// Width of the legend column.
const LEGEND_W: u32 = 260;

fn err<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {what}: {e}")
}

fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// Largest percentile shown on a percentile axis: 99.9999 %.
const PCT_X_MAX: f64 = 6.0;

fn x_of(axis: XAxis, x: f64) -> f64 {
    match axis {
        XAxis::Log2Size => x.max(1.0).log2(),
        XAxis::Linear => x,
        XAxis::Percentile => {
            let rest = (1.0 - x / 100.0).max(10f64.powf(-PCT_X_MAX));
            -rest.log10()
        }
    }
}

/// Draw marker shape `m` centred on `at` (any coordinate system).
fn marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    pts: &[CT::From],
    m: usize,
    col: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    CT: plotters::coord::CoordTranslate,
    CT::From: Clone,
{
    for p in pts {
        let at = EmptyElement::at(p.clone());
        match m % 4 {
            0 => area.draw(&(at + Circle::new((0, 0), 3, col.filled())))?,
            1 => area.draw(&(at + TriangleMarker::new((0, 0), 5, col.filled())))?,
            2 => area.draw(&(at + Rectangle::new([(-3, -3), (3, 3)], col.filled())))?,
            _ => area.draw(&(at + Cross::new((0, 0), 4, col.stroke_width(2))))?,
        }
    }
    Ok(())
}

/// Legend rows: label, colour index, marker index, style.
type LegendItem = (String, usize, usize, Style);

fn legend(area: &DrawingArea<SVGBackend, Shift>, items: &[LegendItem]) -> anyhow::Result<()> {
    let e = err("legend");
    for (i, (label, c, m, style)) in items.iter().enumerate() {
        let y = 40 + i as i32 * 18;
        let col = color(*c);
        if *style != Style::Markers {
            area.draw(&PathElement::new(
                vec![(6, y), (30, y)],
                col.stroke_width(2),
            ))
            .map_err(&e)?;
        }
        if *style != Style::Line {
            marker(area, &[(18, y)], *m, col).map_err(&e)?;
        }
        area.draw(&Text::new(label.clone(), (36, y - 7), ("sans-serif", 13)))
            .map_err(&e)?;
    }
    Ok(())
}

/// Height that fits a legend of `n` rows.
fn height_for(n: usize, min: u32) -> u32 {
    min.max(60 + 18 * n as u32)
}

/// A title that fits the chart's width (the full title is in the page).
fn caption(t: &str) -> String {
    const MAX: usize = 80;
    if t.chars().count() <= MAX {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(MAX - 1).collect::<String>())
    }
}

/// A number for an axis: `0` for zero, else the tables' format.
fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        crate::table::num(v)
    }
}

/// The label of position `v` on the percentile axis: 0%, 90%, 99%, 99.9%…
fn percent_label(v: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-v));
    let decimals = (v.round() as i64 - 2).max(0) as usize;
    format!("{p:.decimals$}%")
}

fn format_size(v: f64) -> String {
    iiopbench_engine::units::format_size(v.exp2().round() as u64)
}

/// Draw an x/y chart.
pub fn chart(c: &Chart) -> anyhow::Result<String> {
    let e = err(&c.title);
    let y_of = |y: f64| if c.log_y { y.max(1e-3).log10() } else { y };
    let pts: Vec<(f64, f64)> = c
        .series
        .iter()
        .flat_map(|s| {
            let ends = s
                .whiskers
                .iter()
                .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
            s.points.iter().copied().chain(ends)
        })
        .map(|(x, y)| (x_of(c.x, x), y_of(y)))
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    anyhow::ensure!(!pts.is_empty(), "figure {:?} has no data", c.title);
    let (mut x0, mut x1) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (ylo, yhi) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    match c.x {
        XAxis::Log2Size => {
            x0 = x0.floor() - 0.3;
            x1 = x1.ceil() + 0.3;
        }
        XAxis::Percentile => {
            x0 = 0.0;
            x1 = x1.ceil().max(2.0);
        }
        XAxis::Linear => {
            let pad = ((x1 - x0) * 0.05).max(1.0);
            x0 = (x0 - pad).min(0.0);
            x1 += pad;
        }
    }
    let (y0, y1) = if c.log_y {
        (ylo.floor(), yhi.ceil().max(ylo.floor() + 1.0))
    } else {
        (0.0, if yhi > 0.0 { yhi * 1.1 } else { 1.0 })
    };
    let h = height_for(c.series.len(), H);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        root.fill(&WHITE).map_err(&e)?;
        let (left, right) = root.split_horizontally(W - LEGEND_W);
        let (left, _) = left.split_vertically(H);
        let mut ch = ChartBuilder::on(&left)
            .caption(caption(&c.title), ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(&e)?;
        let axis = c.x;
        let fmt = move |v: &f64| match axis {
            XAxis::Log2Size => format_size(*v),
            XAxis::Linear => num(*v),
            XAxis::Percentile => percent_label(*v),
        };
        let log_y = c.log_y;
        let yfmt = move |v: &f64| if log_y { num(10f64.powf(*v)) } else { num(*v) };
        let n_x = match c.x {
            XAxis::Log2Size => ((x1 - x0).round() as usize + 1).max(2),
            XAxis::Percentile => (x1 - x0).round() as usize + 1,
            XAxis::Linear => 8,
        };
        let n_y = if log_y {
            (y1 - y0).round() as usize + 1
        } else {
            8
        };
        ch.configure_mesh()
            .x_desc(&c.x_desc)
            .y_desc(&c.y_desc)
            .x_labels(n_x)
            .y_labels(n_y)
            .x_label_formatter(&fmt)
            .y_label_formatter(&yfmt)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(&e)?;
        for s in &c.series {
            let col = color(s.color);
            let p: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|&(x, y)| (x_of(c.x, x), y_of(y)))
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            if s.style != Style::Markers {
                ch.draw_series(LineSeries::new(p.clone(), col.stroke_width(2)))
                    .map_err(&e)?;
            }
            if s.style != Style::Line {
                marker(ch.plotting_area(), &p, s.marker, col).map_err(&e)?;
            }
            // Whiskers: a vertical line from lo to hi with short caps
            // (cap width in x units: a tenth of a size step on a log2
            // axis, else a hundredth of the axis).
            let cap = match c.x {
                XAxis::Log2Size => 0.1,
                _ => (x1 - x0) * 0.01,
            };
            for &(x, lo, hi) in &s.whiskers {
                let (x, lo, hi) = (x_of(c.x, x), y_of(lo), y_of(hi));
                if !(x.is_finite() && lo.is_finite() && hi.is_finite()) {
                    continue;
                }
                let lines = [
                    vec![(x, lo), (x, hi)],
                    vec![(x - cap, lo), (x + cap, lo)],
                    vec![(x - cap, hi), (x + cap, hi)],
                ];
                ch.draw_series(
                    lines
                        .into_iter()
                        .map(|l| PathElement::new(l, col.stroke_width(1))),
                )
                .map_err(&e)?;
            }
        }
        let items: Vec<_> = c
            .series
            .iter()
            .map(|s| (s.label.clone(), s.color, s.marker, s.style))
            .collect();
        legend(&right, &items)?;
        root.present().map_err(&e)?;
    }
    Ok(svg)
}

/// Horizontal (stacked) bars, one row per bar; segment colours by name.
pub fn bars(title: &str, x_desc: &str, rows: &[Bar]) -> anyhow::Result<String> {
    let e = err(title);
    anyhow::ensure!(!rows.is_empty(), "figure {title:?} has no data");
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        for (n, _) in &r.segments {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let xmax = rows
        .iter()
        .map(|r| {
            let s: f64 = r.segments.iter().map(|s| s.1).sum();
            s.max(r.interval.map(|i| i.1).unwrap_or(0.0))
        })
        .fold(0.0f64, f64::max);
    let xmax = if xmax > 0.0 { xmax * 1.1 } else { 1.0 };
    let n = rows.len();
    let h = (90 + 26 * n as u32)
        .max(200)
        .max(height_for(names.len(), 0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        root.fill(&WHITE).map_err(&e)?;
        let (left, right) = root.split_horizontally(W - LEGEND_W);
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        let mut ch = ChartBuilder::on(&left)
            .caption(caption(title), ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(230)
            .build_cartesian_2d(0.0..xmax, -0.5..(n as f64 - 0.5))
            .map_err(&e)?;
        let yfmt = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        };
        ch.configure_mesh()
            .x_desc(x_desc)
            .y_labels(n)
            .y_label_formatter(&yfmt)
            .x_label_formatter(&|v| num(*v))
            .disable_y_mesh()
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(&e)?;
        for (i, r) in rows.iter().enumerate() {
            let y = i as f64;
            let mut x = 0.0;
            for (name, v) in &r.segments {
                let c = names.iter().position(|n| n == name).unwrap_or(0);
                ch.draw_series(std::iter::once(Rectangle::new(
                    [(x, y - 0.35), (x + v, y + 0.35)],
                    color(c).filled(),
                )))
                .map_err(&e)?;
                x += v;
            }
            if let Some((lo, hi)) = r.interval {
                ch.draw_series(std::iter::once(PathElement::new(
                    vec![(lo, y), (hi, y)],
                    BLACK.stroke_width(2),
                )))
                .map_err(&e)?;
                for b in [lo, hi] {
                    ch.draw_series(std::iter::once(PathElement::new(
                        vec![(b, y - 0.2), (b, y + 0.2)],
                        BLACK.stroke_width(2),
                    )))
                    .map_err(&e)?;
                }
            }
        }
        let items: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i, 0, Style::Line))
            .collect();
        legend(&right, &items)?;
        root.present().map_err(&e)?;
    }
    Ok(svg)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A grid of cells (rows × columns), each with short text; cells whose
/// text starts with `pass` are green, `note` yellow, empty grey, anything
/// else red.
pub fn matrix(title: &str, rows: &[String], cols: &[String], cells: &[Vec<String>]) -> String {
    let (cw, ch, lw, th) = (120u32, 24u32, 300u32, 110u32);
    let w = lw + cw * cols.len() as u32 + 20;
    let h = th + ch * rows.len() as u32 + 20;
    let mut s = format!(
        r#"<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>
<text x="10" y="22" font-family="sans-serif" font-size="17">{}</text>
"#,
        esc(title)
    );
    for (j, c) in cols.iter().enumerate() {
        let x = lw + j as u32 * cw + cw / 2;
        s.push_str(&format!(
            r#"<text x="{x}" y="{}" font-family="sans-serif" font-size="12" transform="rotate(-30 {x} {})">{}</text>
"#,
            th - 8,
            th - 8,
            esc(c)
        ));
    }
    for (i, r) in rows.iter().enumerate() {
        let y = th + i as u32 * ch;
        s.push_str(&format!(
            r#"<text x="10" y="{}" font-family="sans-serif" font-size="12">{}</text>
"#,
            y + 16,
            esc(r)
        ));
        for j in 0..cols.len() {
            let t = cells
                .get(i)
                .and_then(|r| r.get(j))
                .map(String::as_str)
                .unwrap_or("");
            let lower = t.to_ascii_lowercase();
            let fill = if t.is_empty() {
                "#E0E0E0"
            } else if lower.starts_with("pass") {
                "#A5D6A7"
            } else if lower.starts_with("note") {
                "#FFE082"
            } else {
                "#EF9A9A"
            };
            let x = lw + j as u32 * cw;
            s.push_str(&format!(
                r#"<rect x="{x}" y="{y}" width="{}" height="{}" fill="{fill}" stroke="white"/><text x="{}" y="{}" font-family="sans-serif" font-size="12" text-anchor="middle">{}</text>
"#,
                cw - 2,
                ch - 2,
                x + cw / 2,
                y + 16,
                esc(t)
            ));
        }
    }
    s.push_str("</svg>\n");
    s
}
