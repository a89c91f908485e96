//! The SVG charts as people see them (issue 26): each is rendered to PNG by a real renderer
//! (resvg, with DejaVu Sans from the `dejavu` crate so the pixels do not depend on the fonts a
//! machine has) at two widths and compared, pixel by pixel with a small tolerance, against a
//! committed PNG: a chart that changes fails here. `DACLI_BLESS=1 cargo test --test it charts`
//! rewrites the PNGs after a deliberate change (look at them before committing). The example
//! charts at 720 px are the ones the docs show (docs/burndown-example.png, docs/wbs-example.png).
//!
//! Every chart must also stay on its canvas: the bounding box of everything drawn, text
//! included, lies inside it.

use std::path::{Path, PathBuf};

use resvg::{tiny_skia, usvg};

use crate::support::{Repo, dacli, repo_root};

/// A channel may differ by this much (anti-aliasing on another CPU), no more.
const TOLERANCE: u8 = 24;
/// The widths every chart is rendered at, in pixels.
const WIDTHS: [u32; 2] = [360, 720];

fn options() -> usvg::Options<'static> {
    let mut opt = usvg::Options {
        font_family: "DejaVu Sans".to_string(),
        ..usvg::Options::default()
    };
    let db = opt.fontdb_mut();
    db.load_font_data(dejavu::sans::regular().to_vec());
    db.load_font_data(dejavu::sans::bold().to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    db.set_serif_family("DejaVu Sans");
    opt
}

pub fn parse(svg: &str) -> usvg::Tree {
    usvg::Tree::from_str(svg, &options()).expect("the chart parses as SVG")
}

/// `svg` rendered `width` pixels wide.
pub fn render(tree: &usvg::Tree, width: u32) -> tiny_skia::Pixmap {
    let size = tree.size();
    let scale = width as f32 / size.width();
    let height = (size.height() * scale).ceil() as u32;
    let mut pixmap = tiny_skia::Pixmap::new(width, height).unwrap();
    resvg::render(
        tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
}

/// Everything drawn lies on the canvas, and every text was shaped (its glyphs drawn).
fn assert_on_canvas(name: &str, tree: &usvg::Tree) {
    let size = tree.size();
    let bbox = tree.root().abs_stroke_bounding_box();
    assert!(
        bbox.left() >= -0.5
            && bbox.top() >= -0.5
            && bbox.right() <= size.width() + 0.5
            && bbox.bottom() <= size.height() + 0.5,
        "{name}: something is drawn off the {}×{} canvas: {bbox:?}",
        size.width(),
        size.height()
    );
    let texts = texts(tree.root());
    assert!(!texts.is_empty(), "{name}: no text was drawn");
    for (text, rect) in &texts {
        assert!(
            rect.right() <= size.width() && rect.left() >= 0.0 && rect.width() > 1.0,
            "{name}: the text {text:?} is not drawn on the canvas: {rect:?}"
        );
    }
}

/// Each text of the chart and where its glyphs are drawn.
fn texts(group: &usvg::Group) -> Vec<(String, usvg::Rect)> {
    let mut out = Vec::new();
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => out.extend(texts(g)),
            usvg::Node::Text(t) => {
                let text: String = t.chunks().iter().map(|c| c.text().to_string()).collect();
                out.push((text, t.flattened().abs_bounding_box()));
            }
            _ => {}
        }
    }
    out
}

fn fixture(name: &str, width: u32) -> PathBuf {
    repo_root()
        .join("tests/fixtures/charts")
        .join(format!("{name}_{width}.png"))
}

/// Compares `actual` with the committed PNG at `path`, or writes it there under DACLI_BLESS.
fn assert_png(name: &str, actual: &tiny_skia::Pixmap, path: &Path) {
    if std::env::var_os("DACLI_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, actual.encode_png().unwrap()).unwrap();
        return;
    }
    let kept = path.with_file_name(format!(
        "{}.actual.png",
        path.file_stem().unwrap().to_string_lossy()
    ));
    let failed = |why: String| -> ! {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(kept.file_name().unwrap());
        std::fs::write(&out, actual.encode_png().unwrap()).unwrap();
        panic!(
            "{name}: {why}\n  committed: {}\n  rendered:  {}\n  (DACLI_BLESS=1 rewrites the committed PNGs after a deliberate change)",
            path.display(),
            out.display()
        )
    };
    let expected = match tiny_skia::Pixmap::load_png(path) {
        Ok(p) => p,
        Err(e) => failed(format!("no committed PNG to compare with ({e})")),
    };
    if (expected.width(), expected.height()) != (actual.width(), actual.height()) {
        failed(format!(
            "the size changed: {}×{} committed, {}×{} now",
            expected.width(),
            expected.height(),
            actual.width(),
            actual.height()
        ));
    }
    let off = differing_pixels(&expected, actual);
    if off > 0 {
        failed(format!("{off} pixel(s) differ by more than {TOLERANCE}"));
    }
}

/// How many pixels of two same-sized images differ by more than [`TOLERANCE`] in a channel.
fn differing_pixels(a: &tiny_skia::Pixmap, b: &tiny_skia::Pixmap) -> usize {
    a.data()
        .chunks(4)
        .zip(b.data().chunks(4))
        .filter(|(p, q)| {
            p.iter()
                .zip(q.iter())
                .any(|(x, y)| x.abs_diff(*y) > TOLERANCE)
        })
        .count()
}

/// The comparison sees a small change: one figure written differently, or the remaining
/// line a pixel lower, fails it; the same chart rendered twice passes.
#[test]
fn the_comparison_fails_a_changed_chart() {
    let svg = example(&[
        "burndown",
        "--project",
        "checkout",
        "--since",
        "2026-03-05T00:00:00Z",
        "--until",
        "2026-03-05T18:00:00Z",
        "--format",
        "svg",
    ]);
    let base = render(&parse(&svg), 360);
    assert_eq!(differing_pixels(&base, &render(&parse(&svg), 360)), 0);
    let relabelled = svg.replace(">36.5 of", ">35.5 of");
    assert_ne!(relabelled, svg);
    assert!(differing_pixels(&base, &render(&parse(&relabelled), 360)) > 0);
    let remaining = r##"<path d="M"##;
    let blue = r##"stroke="#0969da" stroke-width="2.5""##;
    let line = svg
        .lines()
        .find(|l| l.starts_with(remaining) && l.contains(blue))
        .unwrap();
    let lower = line.replace(remaining, r##"<path transform="translate(0 2)" d="M"##);
    let moved = svg.replace(line, &lower);
    assert!(differing_pixels(&base, &render(&parse(&moved), 360)) > 0);
}

/// Renders `svg` at both widths and checks it against the snapshots; `docs` (if given) is
/// where the 720 px snapshot lives instead of tests/fixtures/charts.
fn check_chart(name: &str, svg: &str, docs: Option<&str>) {
    let tree = parse(svg);
    assert_on_canvas(name, &tree);
    for width in WIDTHS {
        let png = render(&tree, width);
        let path = match docs {
            Some(doc) if width == 720 => repo_root().join(doc),
            _ => fixture(name, width),
        };
        assert_png(&format!("{name} at {width} px"), &png, &path);
    }
}

/// The example workspace's output with the clock at `now`.
fn example_at(now: &str, args: &[&str]) -> String {
    let out = dacli()
        .current_dir(repo_root())
        .env("DACLI_TEST_CLOCK", now)
        .args(["-C", ".dacli-example"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The example a week after its last change.
fn example(args: &[&str]) -> String {
    example_at("2026-03-09T00:00:00Z", args)
}

/// The date labels of a burndown chart (the texts under its plot), in order.
fn date_labels(svg: &str) -> Vec<&str> {
    svg.lines()
        .filter(|l| l.starts_with("<text") && l.contains(r#"y="318.0""#))
        .filter_map(|l| l.split('>').nth(1)?.strip_suffix("</text"))
        .collect()
}

/// The example seen nine months on: the span the issue saw smear into a bar of daily ticks.
#[test]
fn burndown_of_a_long_span_ticks_months_and_labels_its_axes() {
    let svg = example_at(
        "2026-12-01T00:00:00Z",
        &["burndown", "--project", "checkout", "--format", "svg"],
    );
    assert_eq!(
        date_labels(&svg),
        [
            "Apr 2026", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
        ],
        "{svg}"
    );
    assert!(svg.contains(">effort (points of Te)</text>"), "{svg}");
    assert!(
        svg.contains(">date (UTC): 2026-03-02 to 2026-12-01, 275 days</text>"),
        "{svg}"
    );
    check_chart("burndown_long", &svg, None);
}

/// The docs' burndown: the example's week, a tick a day.
#[test]
fn burndown_of_the_example_week_ticks_days() {
    let svg = example(&["burndown", "--project", "checkout", "--format", "svg"]);
    assert_eq!(
        date_labels(&svg),
        [
            "Mar 2", "Mar 3", "Mar 4", "Mar 5", "Mar 6", "Mar 7", "Mar 8", "Mar 9", "Mar 10"
        ],
        "{svg}"
    );
    check_chart("burndown_example", &svg, Some("docs/burndown-example.png"));
}

#[test]
fn burndown_of_one_day_is_a_labelled_segment_between_margins() {
    let svg = example(&[
        "burndown",
        "--project",
        "checkout",
        "--since",
        "2026-03-05T00:00:00Z",
        "--until",
        "2026-03-05T18:00:00Z",
        "--format",
        "svg",
    ]);
    assert_eq!(
        date_labels(&svg),
        ["Mar 4", "Mar 5", "Mar 6", "Mar 7"],
        "{svg}"
    );
    assert!(
        svg.contains("2026-03-05 to 2026-03-05, 1 day</text>"),
        "{svg}"
    );
    assert!(svg.contains(" remaining</text>"), "{svg}");
    check_chart("burndown_one_day", &svg, None);
}

#[test]
fn wbs_chart_of_the_example() {
    let svg = example(&["wbs", "--format", "svg"]);
    check_chart("wbs_example", &svg, Some("docs/wbs-example.png"));
}

/// Long titles, deep nesting and a long project name: labels stop before the bar column and
/// nothing leaves the canvas.
#[test]
fn wbs_chart_with_long_titles_stays_in_its_columns() {
    let repo = Repo::new();
    let project =
        "Replatforming of the invoicing, pricing and refunds services onto the new ledger";
    repo.dacli(&["init", "--project", project])
        .assert()
        .success();
    let long = "Replace every hand-rolled rounding helper in the pricing, invoicing and refund modules with the shared shim";
    let wide = "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW";
    repo.dacli(&["task", "add", long, "--estimate", "3,5,13"])
        .assert()
        .success();
    let mut parent = "1".to_string();
    for n in 2..=8 {
        let title = match n {
            3 => wide.to_string(),
            4 => "Short".to_string(),
            _ => format!("Part {n}: {long}"),
        };
        repo.dacli(&[
            "task",
            "add",
            &title,
            "--estimate",
            "1,2,4",
            "--parent",
            &parent,
        ])
        .assert()
        .success();
        parent = n.to_string();
    }
    let out = repo.dacli(&["wbs", "--format", "svg"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    let tree = parse(&svg);
    // The bars start at 540 px; every label ends before them (the bars' legend heads them).
    let texts = texts(tree.root());
    assert!(texts.iter().any(|(t, _)| t == "bar: Σ Te · filled: done"));
    for (text, rect) in texts.into_iter().filter(|(t, _)| !t.starts_with("bar:")) {
        assert!(
            rect.right() <= 536.0,
            "{text:?} runs into the bar column: ends at {}",
            rect.right()
        );
    }
    check_chart("wbs_long_titles", &svg, None);
}
