//! The burndown chart: a self-contained, deterministic 720×360 SVG. No scripts, no fonts, no
//! timestamps: the bytes are a pure function of the series, so a chart committed to a
//! repository changes only when the work does.

use std::fmt::Write;

use crate::policy::plan::BurnPoint;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 48.0;
const SCOPE_COLOR: &str = "#8c959f";
const REMAINING_COLOR: &str = "#0969da";

/// The chart of `series` for `project`: axes, one tick per day (labelled every few days),
/// the scope and remaining lines, and a legend.
pub(super) fn burndown_svg(project: &str, series: &[BurnPoint]) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let bottom = TOP + plot_h;
    let top_value = series.iter().map(|p| p.scope).fold(0.0, f64::max);
    let (step, max) = y_scale(top_value);
    let x = |i: usize| {
        if series.len() <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (series.len() - 1) as f64
        }
    };
    let y = |v: f64| bottom - plot_h * v / max;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="720" height="360" viewBox="0 0 720 360">"#
    );
    let _ = writeln!(s, "<title>Burndown of {}</title>", escape(project));
    let _ = writeln!(
        s,
        r##"<rect x="0" y="0" width="720" height="360" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{LEFT:.1}" y="22.0" font-size="14" fill="#1f2328">Burndown of {}</text>"##,
        escape(project)
    );

    // Horizontal grid and value labels.
    let mut v = 0.0;
    while v <= max + step / 2.0 {
        let yy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#d0d7de" stroke-width="1"/>"##,
            LEFT + plot_w
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#57606a" text-anchor="end">{}</text>"##,
            LEFT - 6.0,
            yy + 4.0,
            value_label(v)
        );
        v += step;
    }

    // Axes.
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT:.1}" y1="{TOP:.1}" x2="{LEFT:.1}" y2="{bottom:.1}" stroke="#1f2328" stroke-width="1"/>"##
    );
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT:.1}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}" stroke="#1f2328" stroke-width="1"/>"##,
        LEFT + plot_w
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#57606a" text-anchor="start">Te</text>"##,
        LEFT - 20.0,
        TOP - 8.0
    );

    // One tick per day; a label every `every` days so that labels never overlap.
    let every = series.len().div_ceil(10).max(1);
    for (i, p) in series.iter().enumerate() {
        let xx = x(i);
        let _ = writeln!(
            s,
            r##"<line x1="{xx:.1}" y1="{bottom:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#1f2328" stroke-width="1"/>"##,
            bottom + 4.0
        );
        if i % every == 0 {
            let _ = writeln!(
                s,
                r##"<text x="{xx:.1}" y="{:.1}" font-size="11" fill="#57606a" text-anchor="middle">{}</text>"##,
                bottom + 18.0,
                p.date.strftime("%m-%d")
            );
        }
    }

    if series.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="13" fill="#57606a" text-anchor="middle">no tasks in this period</text>"##,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        );
    } else {
        let line = |f: &dyn Fn(&BurnPoint) -> f64| {
            series
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(f(p))))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{SCOPE_COLOR}" stroke-width="2" stroke-dasharray="6 4"/>"#,
            line(&|p| p.scope)
        );
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{REMAINING_COLOR}" stroke-width="2"/>"#,
            line(&|p| p.remaining)
        );
        for (i, p) in series.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{REMAINING_COLOR}"/>"#,
                x(i),
                y(p.remaining)
            );
        }
    }

    // Legend, top right.
    let lx = WIDTH - RIGHT - 190.0;
    for (k, (label, color, dash)) in [
        ("scope", SCOPE_COLOR, r#" stroke-dasharray="6 4""#),
        ("remaining", REMAINING_COLOR, ""),
    ]
    .into_iter()
    .enumerate()
    {
        let lx = lx + 95.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="18.0" x2="{:.1}" y2="18.0" stroke="{color}" stroke-width="2"{dash}/>"#,
            lx + 24.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="22.0" font-size="12" fill="#1f2328">{label}</text>"##,
            lx + 30.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A step of 1, 2 or 5 times a power of ten giving at most six grid lines, and the axis top
/// (a multiple of the step at or above `top`, at least one step).
fn y_scale(top: f64) -> (f64, f64) {
    let top = if top.is_finite() && top > 0.0 {
        top
    } else {
        1.0
    };
    let raw = top / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let max = (top / step).ceil().max(1.0) * step;
    (step, max)
}

fn value_label(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_round() {
        assert_eq!(y_scale(31.5), (10.0, 40.0));
        assert_eq!(y_scale(4.5), (1.0, 5.0));
        assert_eq!(y_scale(0.0), (0.2, 1.0));
    }

    #[test]
    fn an_empty_series_still_draws_axes() {
        let svg = burndown_svg("p-<x>", &[]);
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("p-&lt;x&gt;") && svg.contains("no tasks"));
        assert!(!svg.contains("<script") && !svg.contains("font-family"));
    }
}
