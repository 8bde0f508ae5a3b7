//! Charts as inline SVG: bars, horizontal bars, a log-log scatter and
//! lines, each with a title, labelled axes and ticks. No script and no
//! external style: the page opens offline in any browser.
//!
//! Each chart is `<svg class="chart" data-chart="NAME">`, its marks
//! `class="bar"` or `class="point"`, so tests (and users' scripts) can
//! count them.

use std::fmt::Write;

/// Plot area and margins, in SVG units.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 52.0;
/// Where a title starts: at the left, so that on a phone, where a chart
/// keeps its width and scrolls in its box, the title shows whole.
const TITLE_X: f64 = 8.0;

/// Colours of the series, in order.
const COLOURS: [&str; 4] = ["#3b6ea5", "#c8553d", "#4f9d69", "#8e6c8a"];

/// The colour of series `s`, its line's and its legend's.
fn series_colour(s: usize) -> &'static str {
    COLOURS[s % COLOURS.len()]
}

/// Escapes text for HTML and SVG.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number as a tick or a label shows it: `1.2M`, `35k`, `0.25`.
pub(crate) fn short(x: f64) -> String {
    let abs = x.abs();
    let (value, unit) = match abs {
        a if a >= 1e9 => (x / 1e9, "G"),
        a if a >= 1e6 => (x / 1e6, "M"),
        a if a >= 1e4 => (x / 1e3, "k"),
        _ => (x, ""),
    };
    let text = match value.fract() == 0.0 {
        true => format!("{value:.0}"),
        false if value.abs() >= 10.0 => format!("{value:.0}"),
        false if value.abs() >= 1.0 => format!("{value:.1}"),
        false => format!("{value:.2}"),
    };
    format!("{text}{unit}")
}

/// Ticks from 0 to at least `max`: steps of 1, 2 or 5 times a power of ten,
/// about five of them; whole steps when the values are `counts`.
fn linear_ticks(max: f64, counts: bool) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let rough = max / 5.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= rough)
        .unwrap_or(10.0 * power);
    let step = if counts { step.max(1.0) } else { step };
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// The start of a chart: the frame, its title and its axis labels.
fn open(name: &str, title: &str, x_label: &str, y_label: &str) -> String {
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<div class="chart-box"><svg class="chart" data-chart="{name}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}"><title>{t}</title>"#,
        t = escape(title)
    );
    let _ = write!(
        svg,
        r#"<text x="{TITLE_X}" y="20" class="title">{}</text>"#,
        escape(title)
    );
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" class="axis-label" text-anchor="middle">{}</text>"#,
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        HEIGHT - 8.0,
        escape(x_label)
    );
    let _ = write!(
        svg,
        r#"<text x="14" y="{y}" class="axis-label" text-anchor="middle" transform="rotate(-90 14 {y})">{}</text>"#,
        escape(y_label),
        y = TOP + (HEIGHT - TOP - BOTTOM) / 2.0
    );
    svg
}

/// Horizontal grid lines and labels at `ticks` of a linear y axis up to
/// `top`.
fn y_axis(svg: &mut String, ticks: &[f64], top: f64, label: impl Fn(f64) -> String) {
    for &tick in ticks {
        y_grid_line(svg, y_of(tick, top), &label(tick), "#ddd");
    }
}

/// A horizontal grid line at `y` with its label left of the axis.
fn y_grid_line(svg: &mut String, y: f64, label: &str, colour: &str) {
    let _ = write!(
        svg,
        r#"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="{colour}"/><text x="{}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
        WIDTH - RIGHT,
        LEFT - 6.0,
        y + 4.0,
        escape(label)
    );
}

fn y_of(value: f64, top: f64) -> f64 {
    let plot = HEIGHT - TOP - BOTTOM;
    HEIGHT - BOTTOM - plot * (value / top).clamp(0.0, 1.0)
}

fn close(mut svg: String) -> String {
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" x2="{}" y1="{b}" y2="{b}" stroke="#333"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{b}" stroke="#333"/></svg></div>"##,
        WIDTH - RIGHT,
        b = HEIGHT - BOTTOM
    );
    svg
}

/// Vertical bars, one per `(label, value)`, each with its value on top.
pub(crate) fn bars(
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    bars: &[(String, f64)],
) -> String {
    let mut svg = open(name, title, x_label, y_label);
    let ticks = linear_ticks(bars.iter().map(|b| b.1).fold(0.0, f64::max), true);
    let top = *ticks.last().unwrap_or(&1.0);
    y_axis(&mut svg, &ticks, top, short);
    let slot = (WIDTH - LEFT - RIGHT) / bars.len().max(1) as f64;
    let labels = bars.iter().map(|b| b.0.as_str());
    let every = label_every(labels, slot);
    for (i, (label, value)) in bars.iter().enumerate() {
        let x = LEFT + slot * i as f64 + slot * 0.15;
        let y = y_of(*value, top);
        let _ = write!(
            svg,
            r#"<rect class="bar" data-label="{l}" data-value="{value}" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{l}: {value}</title></rect>"#,
            slot * 0.7,
            HEIGHT - BOTTOM - y,
            COLOURS[0],
            l = escape(label),
        );
        let centre = x + slot * 0.35;
        if i % every == 0 {
            x_tick(&mut svg, centre, label);
        }
        if every == 1 {
            let _ = write!(
                svg,
                r#"<text x="{centre:.1}" y="{:.1}" class="value" text-anchor="middle">{}</text>"#,
                y - 4.0,
                short(*value)
            );
        }
    }
    close(svg)
}

/// Every how many categories a label is written under the x axis, for
/// labels of these lengths in slots `slot` wide not to overprint.
fn label_every<'a>(labels: impl Iterator<Item = &'a str>, slot: f64) -> usize {
    let widest = labels.map(|l| l.chars().count()).max().unwrap_or(0);
    let needed = widest as f64 * 6.5 + 8.0;
    (needed / slot.max(1.0)).ceil().max(1.0) as usize
}

/// A category's label under the x axis at `x`.
fn x_tick(svg: &mut String, x: f64, label: &str) {
    let _ = write!(
        svg,
        r#"<text x="{x:.1}" y="{}" class="tick" text-anchor="middle">{}</text>"#,
        HEIGHT - BOTTOM + 16.0,
        escape(label)
    );
}

/// Horizontal bars, one per `(label, value, note)`, largest first as given;
/// the note (a rate, say) is written after the bar.
pub(crate) fn horizontal_bars(
    name: &str,
    title: &str,
    x_label: &str,
    rows: &[(String, f64, String)],
) -> String {
    let row_height = 18.0;
    let height = TOP + BOTTOM + row_height * rows.len().max(1) as f64;
    let left = 260.0;
    let right = 150.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<div class="chart-box"><svg class="chart" data-chart="{name}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{t}"><title>{t}</title><text x="{TITLE_X}" y="20" class="title">{t}</text>"#,
        t = escape(title)
    );
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let ticks = linear_ticks(max, true);
    let top = *ticks.last().unwrap_or(&1.0);
    let span = WIDTH - left - right;
    let bottom = height - BOTTOM;
    for &tick in &ticks {
        let x = left + span * tick / top;
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{bottom}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"##,
            bottom + 14.0,
            short(tick)
        );
    }
    for (i, (label, value, note)) in rows.iter().enumerate() {
        let y = TOP + row_height * i as f64;
        let width = span * value / top;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><rect class="bar" data-label="{l}" data-value="{value}" x="{left}" y="{:.1}" width="{width:.1}" height="{:.1}" fill="{}"><title>{l}: {value}</title></rect><text x="{:.1}" y="{:.1}" class="value">{}</text>"#,
            left - 6.0,
            y + 13.0,
            escape(&truncate(label, 40)),
            y + 2.0,
            row_height - 4.0,
            COLOURS[1],
            left + width + 4.0,
            y + 13.0,
            escape(note),
            l = escape(label),
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis-label" text-anchor="middle">{}</text>"#,
        left + span / 2.0,
        height - 10.0,
        escape(x_label)
    );
    let _ = write!(
        svg,
        r##"<line x1="{left}" x2="{left}" y1="{TOP}" y2="{bottom}" stroke="#333"/></svg></div>"##
    );
    svg
}

fn truncate(text: &str, chars: usize) -> String {
    match text.chars().count() > chars {
        true => text.chars().take(chars - 1).chain(['…']).collect(),
        false => text.to_string(),
    }
}

/// Points on log-log axes, one per `(x, y)`, both positive.
pub(crate) fn log_log(
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[(f64, f64)],
) -> String {
    let mut svg = open(name, title, x_label, y_label);
    let decades = |max: f64| max.max(1.0).log10().ceil().max(1.0);
    let x_decades = decades(points.iter().map(|p| p.0).fold(1.0, f64::max));
    let y_decades = decades(points.iter().map(|p| p.1).fold(1.0, f64::max));
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x_of = |x: f64| LEFT + plot_w * x.max(1.0).log10() / x_decades;
    let y_of = |y: f64| HEIGHT - BOTTOM - plot_h * y.max(1.0).log10() / y_decades;
    for d in 0..=x_decades as i32 {
        let x = x_of(10f64.powi(d));
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" class="tick" text-anchor="middle">{}</text>"##,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 16.0,
            short(10f64.powi(d))
        );
    }
    for d in 0..=y_decades as i32 {
        let value = 10f64.powi(d);
        y_grid_line(&mut svg, y_of(value), &short(value), "#eee");
    }
    for &(x, y) in points {
        let _ = write!(
            svg,
            r#"<circle class="point" data-x="{x}" data-y="{y}" cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"><title>{x}: {y}</title></circle>"#,
            x_of(x),
            y_of(y),
            COLOURS[0],
        );
    }
    close(svg)
}

/// Lines over the same categories (nights), one per `(name, values)`, with
/// a point at each value and a legend; a missing value (`None`) is a gap,
/// not a zero.
pub(crate) fn lines(
    name: &str,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
    percent: bool,
) -> String {
    let mut svg = open(name, title, "night", y_label);
    let max = series
        .iter()
        .flat_map(|s| s.1.iter().flatten().copied())
        .fold(0.0, f64::max);
    let ticks = linear_ticks(max, !percent);
    let top = *ticks.last().unwrap_or(&1.0);
    let label = |v: f64| match percent {
        true => format!("{:.1}%", v * 100.0),
        false => short(v),
    };
    y_axis(&mut svg, &ticks, top, label);
    let slot = (WIDTH - LEFT - RIGHT) / categories.len().max(1) as f64;
    let x_of = |i: usize| LEFT + slot * (i as f64 + 0.5);
    let every = label_every(categories.iter().map(String::as_str), slot);
    for (i, category) in categories.iter().enumerate().step_by(every) {
        x_tick(&mut svg, x_of(i), category);
    }
    for (s, (series_name, values)) in series.iter().enumerate() {
        let colour = series_colour(s);
        for run in present_runs(values).iter().filter(|run| run.len() > 1) {
            let path: Vec<String> = run
                .iter()
                .map(|&(i, v)| format!("{:.1},{:.1}", x_of(i), y_of(v, top)))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
        }
        for (i, v) in values.iter().enumerate() {
            let Some(v) = *v else { continue };
            let _ = write!(
                svg,
                r#"<circle class="point" data-series="{}" data-x="{}" data-y="{v}" cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"><title>{} {}: {}</title></circle>"#,
                escape(series_name),
                escape(&categories[i]),
                x_of(i),
                y_of(v, top),
                escape(series_name),
                escape(&categories[i]),
                label(v)
            );
        }
    }
    let mut chart = close(svg);
    // The legend under the chart, outside its box: on a phone the box
    // scrolls, and a legend inside it was scrolled out of sight.
    chart.push_str("<p class=\"legend\">");
    for (s, (series_name, _)) in series.iter().enumerate() {
        let _ = write!(
            chart,
            r#"<span><span class="swatch" style="background:{}"></span>{}</span>"#,
            series_colour(s),
            escape(series_name)
        );
    }
    chart.push_str("</p>");
    chart
}

/// The runs of consecutive values present, each value with its place.
fn present_runs(values: &[Option<f64>]) -> Vec<Vec<(usize, f64)>> {
    let mut runs: Vec<Vec<(usize, f64)>> = vec![Vec::new()];
    for (i, value) in values.iter().enumerate() {
        match value {
            Some(v) => runs.last_mut().expect("a run").push((i, *v)),
            None => runs.push(Vec::new()),
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_cover_the_maximum_in_round_steps() {
        assert_eq!(linear_ticks(7.0, true), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(
            linear_ticks(100.0, true),
            [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(linear_ticks(0.0, false).len(), 6);
        // Counts step by whole numbers: no tick at 0.2 pairs.
        assert_eq!(linear_ticks(0.0, true), [0.0, 1.0]);
        assert_eq!(linear_ticks(3.0, true), [0.0, 1.0, 2.0, 3.0]);
        assert!(*linear_ticks(12_345.0, true).last().unwrap() >= 12_345.0);
    }

    #[test]
    fn every_mark_is_drawn_and_text_is_escaped() {
        let svg = bars(
            "d",
            "a <b>",
            "x",
            "y",
            &[("0".into(), 3.0), ("1".into(), 0.0)],
        );
        assert_eq!(svg.matches(r#"class="bar""#).count(), 2);
        assert!(svg.contains("a &lt;b&gt;") && !svg.contains("<b>"));
        let svg = log_log("s", "t", "x", "y", &[(2.0, 10.0), (1000.0, 1.0)]);
        assert_eq!(svg.matches(r#"class="point""#).count(), 2);
        let svg = lines(
            "l",
            "t",
            "y",
            &["a".into(), "b".into()],
            &[("p".into(), vec![Some(1.0), Some(2.0)])],
            false,
        );
        assert_eq!(svg.matches(r#"class="point""#).count(), 2);
        // A missing value is a gap: no point, and no line through it.
        let nights: Vec<String> = (1..=4).map(|d| format!("2026-11-0{d}")).collect();
        let values = vec![Some(1.0), None, Some(2.0), Some(3.0)];
        let svg = lines("l", "t", "y", &nights, &[("p".into(), values)], false);
        assert_eq!(svg.matches(r#"class="point""#).count(), 3);
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(!svg.contains(r#"data-x="2026-11-02""#));
        // Thirty nights' labels would overprint: every few is written.
        let nights: Vec<String> = (1..=30).map(|d| format!("2026-11-{d:02}")).collect();
        let svg = lines(
            "l",
            "t",
            "y",
            &nights,
            &[("p".into(), vec![Some(1.0); 30])],
            false,
        );
        let labels = nights
            .iter()
            .filter(|n| svg.contains(&format!(">{n}</text>")));
        assert!((5..=10).contains(&labels.count()));
        assert_eq!(short(1_234_567.0), "1.2M");
        assert_eq!(short(35_000.0), "35k");
    }
}
