//! The burndown chart: a self-contained, deterministic 720×360 SVG. No scripts, no fonts, no
//! timestamps: the bytes are a pure function of the series, so a chart committed to a
//! repository changes only when the work does.
//!
//! Each day is a band on the date axis and each figure a step across its day, so one day draws
//! as a segment, not a lone dot. Ticks are picked for the span (days, weeks, months or years,
//! at most [`MAX_TICKS`]), so a long span never smears into a bar of daily ticks.

use std::fmt::Write;

use jiff::ToSpan;
use jiff::civil::{Date, Weekday};

use crate::policy::plan::BurnPoint;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 32.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 60.0;
const SCOPE_COLOR: &str = "#8c959f";
const REMAINING_COLOR: &str = "#0969da";
const TEXT_COLOR: &str = "#1f2328";
const MUTED_COLOR: &str = "#57606a";
/// At most this many labelled ticks on the date axis: at 11 px a label is under 60 px wide.
const MAX_TICKS: usize = 9;
/// A span shorter than this many days gets a day of margin on each side.
const SHORT_SPAN: usize = 3;

/// How the date axis is ticked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ticks {
    Days(i64),
    Weeks(i64),
    Months(i8),
    Years(i16),
}

impl Ticks {
    fn hits(self, d: Date, start: Date) -> bool {
        match self {
            Ticks::Days(k) => days_between(start, d) % k == 0,
            // Mondays, counted from a Monday so that two-week ticks keep their phase.
            Ticks::Weeks(k) => {
                d.weekday() == Weekday::Monday
                    && (days_between(Date::constant(1970, 1, 5), d) / 7) % k == 0
            }
            Ticks::Months(k) => d.day() == 1 && (d.month() - 1) % k == 0,
            Ticks::Years(k) => d.month() == 1 && d.day() == 1 && d.year() % k == 0,
        }
    }

    fn label(self, d: Date, first: bool) -> String {
        match self {
            Ticks::Days(_) | Ticks::Weeks(_) => d.strftime("%b %-d").to_string(),
            Ticks::Months(_) if first || d.month() == 1 => d.strftime("%b %Y").to_string(),
            Ticks::Months(_) => d.strftime("%b").to_string(),
            Ticks::Years(_) => d.year().to_string(),
        }
    }
}

fn days_between(a: Date, b: Date) -> i64 {
    a.until(b).map_or(0, |s| i64::from(s.get_days()))
}

/// The dates of `domain` (start and end inclusive) that get a labelled tick: the finest
/// granularity giving at most [`MAX_TICKS`] of them.
fn pick_ticks(start: Date, end: Date) -> (Ticks, Vec<Date>) {
    let all: Vec<Date> = start.series(1.day()).take_while(|d| *d <= end).collect();
    let choices = [
        Ticks::Days(1),
        Ticks::Days(2),
        Ticks::Weeks(1),
        Ticks::Weeks(2),
        Ticks::Months(1),
        Ticks::Months(3),
        Ticks::Months(6),
        Ticks::Years(1),
        Ticks::Years(2),
        Ticks::Years(5),
    ];
    for t in choices {
        let hits: Vec<Date> = all.iter().copied().filter(|d| t.hits(*d, start)).collect();
        if hits.len() <= MAX_TICKS {
            return (t, hits);
        }
    }
    let t = Ticks::Years(10);
    (t, all.into_iter().filter(|d| t.hits(*d, start)).collect())
}

/// The chart of `series` for `project`: labelled axes, ticks picked for the span, the scope
/// and remaining figures as steps, the last remaining figure written at its end, and a legend.
pub(super) fn burndown_svg(project: &str, series: &[BurnPoint]) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let bottom = TOP + plot_h;
    let right = LEFT + plot_w;
    let top_value = series.iter().map(|p| p.scope).fold(0.0, f64::max);
    let (step, max) = y_scale(top_value);
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
    // The heading stops short of the legend: 14 px text, the legend's 200 px kept free.
    let heading = fit_text(
        &format!("Burndown of {project}"),
        WIDTH - LEFT - 210.0,
        14.0,
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT:.1}" y="24.0" font-size="14" fill="{TEXT_COLOR}">{}</text>"#,
        escape(&heading)
    );

    // Horizontal grid and value labels.
    let mut v = 0.0;
    while v <= max + step / 2.0 {
        let yy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT:.1}" y1="{yy:.1}" x2="{right:.1}" y2="{yy:.1}" stroke="#d0d7de" stroke-width="1"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" fill="{MUTED_COLOR}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            yy + 4.0,
            value_label(v)
        );
        v += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="18.0" y="{0:.1}" font-size="12" fill="{MUTED_COLOR}" text-anchor="middle" transform="rotate(-90 18.0 {0:.1})">effort (points of Te)</text>"#,
        TOP + plot_h / 2.0
    );

    // The date axis: each day is a band; a short span gets a day of margin on each side.
    let (first, last) = match (series.first(), series.last()) {
        (Some(f), Some(l)) => (f.date, l.date),
        _ => {
            axes(&mut s, bottom, right);
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="13" fill="{MUTED_COLOR}" text-anchor="middle">no tasks in this period</text>"#,
                LEFT + plot_w / 2.0,
                TOP + plot_h / 2.0
            );
            legend(&mut s);
            s.push_str("</svg>\n");
            return s;
        }
    };
    let pad = if series.len() < SHORT_SPAN { 1 } else { 0 };
    let start = first.checked_sub(pad.days()).unwrap_or(first);
    // The axis ends at the midnight after the last day (plus the margin).
    let end = last.checked_add((1 + pad).days()).unwrap_or(last);
    let span = days_between(start, end).max(1) as f64;
    let x = |d: Date| LEFT + plot_w * days_between(start, d) as f64 / span;

    let (ticks, dates) = pick_ticks(start, end);
    for (k, d) in dates.iter().enumerate() {
        let xx = x(*d);
        let _ = writeln!(
            s,
            r##"<line x1="{xx:.1}" y1="{TOP:.1}" x2="{xx:.1}" y2="{bottom:.1}" stroke="#eaeef2" stroke-width="1"/>"##
        );
        let _ = writeln!(
            s,
            r#"<line x1="{xx:.1}" y1="{bottom:.1}" x2="{xx:.1}" y2="{:.1}" stroke="{TEXT_COLOR}" stroke-width="1"/>"#,
            bottom + 4.0
        );
        let label = ticks.label(*d, k == 0);
        // A label that would run past the canvas edge ends at its tick instead.
        let half = text_width(&label, 11.0) / 2.0;
        let anchor = if xx + half > WIDTH - 4.0 {
            "end"
        } else {
            "middle"
        };
        let _ = writeln!(
            s,
            r#"<text x="{xx:.1}" y="{:.1}" font-size="11" fill="{MUTED_COLOR}" text-anchor="{anchor}">{label}</text>"#,
            bottom + 18.0
        );
    }
    let days = series.len();
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" fill="{MUTED_COLOR}" text-anchor="middle">date (UTC): {first} to {last}, {days} day{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 14.0,
        if days == 1 { "" } else { "s" }
    );
    axes(&mut s, bottom, right);

    // The figures: a step across each day, rising or falling at midnight.
    let steps = |f: &dyn Fn(&BurnPoint) -> f64| {
        let mut d = format!("M{:.1} {:.1}", x(first), y(f(&series[0])));
        for pair in series.windows(2) {
            if f(&pair[1]) != f(&pair[0]) {
                let _ = write!(d, " H{:.1} V{:.1}", x(pair[1].date), y(f(&pair[1])));
            }
        }
        let _ = write!(d, " H{:.1}", x(last) + plot_w / span);
        d
    };
    let _ = writeln!(
        s,
        r#"<path d="{}" fill="none" stroke="{SCOPE_COLOR}" stroke-width="2" stroke-dasharray="6 4"/>"#,
        steps(&|p| p.scope)
    );
    let _ = writeln!(
        s,
        r#"<path d="{}" fill="none" stroke="{REMAINING_COLOR}" stroke-width="2.5"/>"#,
        steps(&|p| p.remaining)
    );
    // The last figures, written above the end of the remaining line (below it near the top).
    let end_point = &series[series.len() - 1];
    let ly = y(end_point.remaining);
    let ly = if ly - 8.0 < TOP + 10.0 {
        ly + 16.0
    } else {
        ly - 8.0
    };
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{ly:.1}" font-size="12" fill="{REMAINING_COLOR}" text-anchor="end">{} of {} remaining</text>"#,
        x(last) + plot_w / span - 2.0,
        value_label(end_point.remaining),
        value_label(end_point.scope)
    );
    legend(&mut s);
    s.push_str("</svg>\n");
    s
}

/// The two axis lines, drawn over the grid.
fn axes(s: &mut String, bottom: f64, right: f64) {
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT:.1}" y1="{TOP:.1}" x2="{LEFT:.1}" y2="{bottom:.1}" stroke="{TEXT_COLOR}" stroke-width="1"/>"#
    );
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT:.1}" y1="{bottom:.1}" x2="{right:.1}" y2="{bottom:.1}" stroke="{TEXT_COLOR}" stroke-width="1"/>"#
    );
}

/// The legend, top right.
fn legend(s: &mut String) {
    let lx = WIDTH - RIGHT - 180.0;
    for (k, (label, color, dash)) in [
        ("scope", SCOPE_COLOR, r#" stroke-dasharray="6 4""#),
        ("remaining", REMAINING_COLOR, ""),
    ]
    .into_iter()
    .enumerate()
    {
        let lx = lx + 85.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="20.0" x2="{:.1}" y2="20.0" stroke="{color}" stroke-width="2"{dash}/>"#,
            lx + 24.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="24.0" font-size="12" fill="{TEXT_COLOR}">{label}</text>"#,
            lx + 30.0
        );
    }
}

/// About how wide `text` is at `size` px, in pixels: glyph widths of DejaVu Sans, a wide
/// sans-serif, so the estimate errs on the wide side for the fonts viewers usually pick.
pub(super) fn text_width(text: &str, size: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | 'I' => 0.3,
            ' ' | 'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '/' => 0.42,
            'm' | 'M' | 'W' => 1.0,
            'w' | '@' | '%' | '—' => 0.84,
            'A'..='Z' | '0'..='9' | '#' | '&' | '…' | '·' | '±' | 'Σ' => 0.72,
            c if c.is_ascii() => 0.62,
            // Accented Latin is as wide as its base; CJK and symbols take a full em.
            c if c <= '\u{24f}' => 0.66,
            _ => 1.0,
        })
        .sum();
    em * size
}

/// `text` cut (with an ellipsis) to fit in `width` px at `size` px.
pub(super) fn fit_text(text: &str, width: f64, size: f64) -> String {
    if text_width(text, size) <= width {
        return text.to_string();
    }
    let room = width - text_width("…", size);
    let mut out = String::new();
    let mut used = 0.0;
    for c in text.chars() {
        let w = text_width(c.encode_utf8(&mut [0; 4]), size);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    out.push('…');
    out
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

    fn day(s: &str) -> Date {
        s.parse().expect("a date")
    }

    #[test]
    fn ticks_suit_the_span() {
        let (t, d) = pick_ticks(day("2026-03-08"), day("2026-03-11"));
        assert_eq!((t, d.len()), (Ticks::Days(1), 4));
        let (t, d) = pick_ticks(day("2026-03-01"), day("2026-03-31"));
        assert_eq!(t, Ticks::Weeks(1));
        assert!(d.iter().all(|d| d.weekday() == Weekday::Monday), "{d:?}");
        let (t, d) = pick_ticks(day("2025-06-05"), day("2026-03-09"));
        assert_eq!((t, d.len()), (Ticks::Months(1), 9));
        assert_eq!(Ticks::Months(1).label(d[0], true), "Jul 2025");
        assert_eq!(Ticks::Months(1).label(d[1], false), "Aug");
        let (t, d) = pick_ticks(day("2016-03-01"), day("2026-03-01"));
        assert_eq!((t, d.len()), (Ticks::Years(2), 5));
    }

    #[test]
    fn one_day_is_a_segment_with_a_margin_and_its_figures() {
        let p = BurnPoint {
            date: day("2026-03-09"),
            scope: 12.0,
            done: 4.5,
            remaining: 7.5,
        };
        let svg = burndown_svg("p-x", &[p]);
        // The day spans the middle third of the plot: the band of Mar 9, with Mar 8 and
        // Mar 10 either side.
        let w = WIDTH - LEFT - RIGHT;
        let from = LEFT + w / 3.0;
        let to = LEFT + 2.0 * w / 3.0;
        assert!(svg.contains(&format!("M{from:.1} ")), "{svg}");
        assert!(svg.contains(&format!(" H{to:.1}\"")), "{svg}");
        for label in ["Mar 8", "Mar 9", "Mar 10", "Mar 11", "7.5 of 12 remaining"] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}: {svg}");
        }
        assert!(svg.contains("2026-03-09 to 2026-03-09, 1 day<"), "{svg}");
        assert!(!svg.contains("<circle"), "{svg}");
    }

    #[test]
    fn an_empty_series_still_draws_axes() {
        let svg = burndown_svg("p-<x>", &[]);
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("p-&lt;x&gt;") && svg.contains("no tasks"));
        assert!(!svg.contains("<script") && !svg.contains("font-family"));
    }
}
