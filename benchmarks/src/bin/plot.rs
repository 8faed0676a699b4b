//! Draws the pictures of BENCHMARKS.md from recorded benchmark output.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --bin plot -- [DATA_DIR] [OUT_DIR]
//! ```
//!
//! Reads, from `DATA_DIR` (default `benchmarks/data`), the JSON lines that
//! the benchmarks print with `--json` and one profile trace, and writes SVG
//! pictures to `OUT_DIR` (default `benchmarks`):
//!
//! * `router.jsonl` (bench_router) → `router_scaling.svg`: GB/s against p,
//!   one panel per pattern, one line per router;
//! * `sort.jsonl` (bench_sort) → `sort_vs_peers.svg`: keys per second of
//!   every sorter, one panel per distribution;
//! * `nas_is.jsonl` (nas_is) and `npb.jsonl` (NPB's figures) →
//!   `nas_is_vs_npb.svg`: Mop/s per class;
//! * `distributions.jsonl` (radix_sort, `benchmarks/distributions.sh`) →
//!   `distributions.svg`: ns per key by distribution and by n, with and
//!   without the constant-digit skip;
//! * `radix_sort_trace.json` (`BSP_PROFILE=trace`) →
//!   `radix_sort_timeline.svg`: one track per processor, work, waiting and
//!   communication.
//!
//! `benchmarks/pictures.sh` measures all of them and then runs this.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const GREY: RGBColor = RGBColor(150, 150, 150);
const RED: RGBColor = RGBColor(214, 39, 40);

/// Every JSON object of a JSON-lines file.
fn lines(path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

fn text(v: &Value, key: &str) -> String {
    match &v[key] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One bar of a bar chart.
struct Bar {
    label: String,
    value: f64,
    color: RGBColor,
}

/// Horizontal bars, largest scale first, labelled on the left.
fn bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    unit: &str,
    rows: &[Bar],
) -> Result<()> {
    let top = rows.iter().map(|b| b.value).fold(0.0, f64::max) * 1.15;
    let k = rows.len();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(170)
        .build_cartesian_2d(0.0..top.max(1e-9), (0..k.max(1) - 1).into_segmented())?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .disable_y_mesh()
        .x_desc(unit)
        .y_labels(k)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows
                .get(k - 1 - *i)
                .map_or(String::new(), |b| b.label.clone()),
            _ => String::new(),
        })
        .draw()?;
    for (i, b) in rows.iter().enumerate() {
        let y = k - 1 - i;
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y)),
                (b.value, SegmentValue::Exact(y + 1)),
            ],
            b.color.mix(0.85).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!(" {:.1}", b.value),
            (b.value, SegmentValue::CenterOf(y)),
            ("sans-serif", 13),
        )))?;
    }
    Ok(())
}

/// A chart with numbers on both axes.
type LineChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A line through `points` (sorted by x) with a dot on each, named `label`
/// in the legend.
fn line_series(
    chart: &mut LineChart<'_, '_>,
    mut points: Vec<(f64, f64)>,
    color: RGBColor,
    label: String,
) -> Result<()> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
    chart.draw_series(
        points
            .into_iter()
            .map(|p| Circle::new(p, 3, color.filled())),
    )?;
    Ok(())
}

/// The legend of a line chart, lower right.
fn legend<'a, 'b: 'a>(chart: &mut LineChart<'a, 'b>) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Router scaling: GB/s against p, a panel per pattern, a line per router.
fn router_scaling(data: &[Value], out: &Path) -> Result<()> {
    // shape → router → [(p, GB/s)]
    let mut series: BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>> = BTreeMap::new();
    for v in data {
        series
            .entry(text(v, "shape"))
            .or_default()
            .entry(text(v, "router"))
            .or_default()
            .push((num(v, "procs"), num(v, "gb_per_second")));
    }
    let shapes: Vec<&String> = series.keys().collect();
    let root = SVGBackend::new(out, (380 * shapes.len().max(1) as u32, 380)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, shapes.len().max(1)));
    let top = data
        .iter()
        .map(|v| num(v, "gb_per_second"))
        .fold(0.0, f64::max)
        * 1.15;
    let max_p = data.iter().map(|v| num(v, "procs")).fold(2.0, f64::max);
    for (panel, shape) in panels.iter().zip(&shapes) {
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("pattern {shape}"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(1.0f64..max_p + 1.0, 0.0..top.max(1e-9))?;
        chart
            .configure_mesh()
            .max_light_lines(1)
            .x_desc("processors p")
            .y_desc("GB/s delivered")
            .x_labels(max_p as usize + 1)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()?;
        for (router, points) in &series[*shape] {
            let color = match router.as_str() {
                "two-phase" => BLUE,
                "direct" => ORANGE,
                _ => GREY,
            };
            line_series(&mut chart, points.clone(), color, router.clone())?;
        }
        legend(&mut chart)?;
    }
    root.present()?;
    Ok(())
}

/// Sort against peers: keys per second, a panel per distribution.
fn sort_vs_peers(data: &[Value], out: &Path) -> Result<()> {
    let mut by_case: BTreeMap<String, Vec<Bar>> = BTreeMap::new();
    for v in data {
        let sorter = text(v, "sorter");
        if sorter == "fresh_pages" {
            continue; // bench_sort's row of mapped memory, not a sorter
        }
        let color = if sorter.starts_with("bsp") {
            BLUE
        } else {
            GREY
        };
        let case = format!(
            "{} [{}], n = {}, p = {}",
            text(v, "kind"),
            text(v, "dist"),
            text(v, "n"),
            text(v, "procs")
        );
        by_case.entry(case).or_default().push(Bar {
            label: sorter,
            value: num(v, "keys_per_second") / 1e6,
            color,
        });
    }
    let root = SVGBackend::new(out, (560 * by_case.len().max(1) as u32, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, by_case.len().max(1)));
    for (panel, (case, rows)) in panels.iter().zip(by_case.iter_mut()) {
        rows.sort_by(|a, b| b.value.total_cmp(&a.value));
        bars(
            panel,
            case,
            "million keys per second (higher is better)",
            rows,
        )?;
    }
    root.present()?;
    Ok(())
}

/// NAS IS: bsp's Mop/s beside NPB's, per class.
fn nas_is_vs_npb(bsp: &[Value], npb: &[Value], out: &Path) -> Result<()> {
    let mut rows = Vec::new();
    let mut classes: Vec<String> = bsp.iter().map(|v| text(v, "class")).collect();
    classes.dedup();
    for class in &classes {
        for v in bsp.iter().filter(|v| &text(v, "class") == class) {
            let what = if v["move_keys"].as_bool() == Some(true) {
                "bsp, keys moved every iteration"
            } else {
                "bsp"
            };
            rows.push(Bar {
                label: format!("{class}: {what}, p = {}", text(v, "procs")),
                value: num(v, "mops"),
                color: BLUE,
            });
        }
        for v in npb.iter().filter(|v| &text(v, "class") == class) {
            let name = text(v, "implementation").replace("NPB 3.4 IS, ", "NPB ");
            rows.push(Bar {
                label: format!("{class}: {name}"),
                value: num(v, "mops"),
                color: GREY,
            });
        }
    }
    let root = SVGBackend::new(out, (640, 60 + 34 * rows.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    bars(
        &root,
        "NAS IS: bsp against NPB",
        "Mop/s (higher is better)",
        &rows,
    )?;
    root.present()?;
    Ok(())
}

/// How a row of `distributions.jsonl` sorted: with the constant-digit
/// skip, on every digit, or on every digit least significant first (the
/// paper's algorithm, `--order lsd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SortMode {
    Skip,
    AllDigits,
    Lsd,
}

impl SortMode {
    fn of(v: &Value) -> SortMode {
        if v["order"].as_str() == Some("lsd") {
            SortMode::Lsd
        } else if v["keep_constant_digits"].as_bool() == Some(true) {
            SortMode::AllDigits
        } else {
            SortMode::Skip
        }
    }

    fn label(self) -> &'static str {
        match self {
            SortMode::Skip => "skip",
            SortMode::AllDigits => "all digits",
            SortMode::Lsd => "LSD, all digits",
        }
    }

    fn color(self) -> RGBColor {
        match self {
            SortMode::Skip => BLUE,
            SortMode::AllDigits => ORANGE,
            SortMode::Lsd => GREY,
        }
    }
}

/// The radix sort against the distribution and n (Bader, Helman and
/// JáJá, Sect. 5): nanoseconds per key, the best run of each case, with
/// and without the constant-digit skip, and the paper's LSD sort.
fn distributions(data: &[Value], out: &Path) -> Result<()> {
    // (dist, n, mode) → best ns per key
    let mut best: BTreeMap<(String, u64, SortMode), f64> = BTreeMap::new();
    for v in data {
        let key = (text(v, "dist"), num(v, "n") as u64, SortMode::of(v));
        let ns = num(v, "seconds") * 1e9 / num(v, "n");
        let slot = best.entry(key).or_insert(f64::INFINITY);
        *slot = slot.min(ns);
    }
    let modes = [SortMode::Skip, SortMode::AllDigits, SortMode::Lsd];
    let fixed = 1u64 << 24;
    let mut rows = Vec::new();
    for dist in ["R", "S", "C", "N", "G"] {
        for mode in modes {
            if let Some(&ns) = best.get(&(dist.to_owned(), fixed, mode)) {
                rows.push(Bar {
                    label: format!("[{dist}], {}", mode.label()),
                    value: ns,
                    color: mode.color(),
                });
            }
        }
    }
    let root = SVGBackend::new(out, (1000, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(500);
    bars(
        &left,
        "by distribution, n = 2^24, p = 2",
        "ns per key (lower is better)",
        &rows,
    )?;
    let top = best
        .values()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&right)
        .caption("[R] by n, p = 2", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d(19.5f64..28.5, 0.0..top.max(1e-9))?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_desc("log2 n")
        .y_desc("ns per key")
        .draw()?;
    for mode in modes {
        let points: Vec<(f64, f64)> = best
            .iter()
            .filter(|((d, _, m), _)| d == "R" && *m == mode)
            .map(|((_, n, _), &ns)| ((*n as f64).log2(), ns))
            .collect();
        line_series(&mut chart, points, mode.color(), mode.label().to_owned())?;
    }
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

/// One radix sort's timeline from a `BSP_PROFILE=trace` file.
fn timeline(trace: &Value, out: &Path) -> Result<()> {
    let events = trace["traceEvents"]
        .as_array()
        .ok_or("no traceEvents in the trace")?;
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let procs = slices
        .iter()
        .filter_map(|e| e["tid"].as_u64())
        .max()
        .map_or(0, |m| m as usize + 1);
    let end = slices
        .iter()
        .map(|e| (num(e, "ts") + num(e, "dur")) / 1e3)
        .fold(0.0, f64::max);
    let title = events
        .iter()
        .find(|e| e["name"] == "process_name")
        .map_or("bsp run".to_owned(), |e| text(&e["args"], "name"));
    let root = SVGBackend::new(out, (1000, 120 + 50 * procs as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("radix sort timeline ({title})"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..end.max(1e-9), (0..procs.max(1) - 1).into_segmented())?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .disable_y_mesh()
        .x_desc("milliseconds since the run started")
        .y_labels(procs)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if *i < procs => format!("processor {}", procs - 1 - i),
            _ => String::new(),
        })
        .draw()?;
    for (cat, color) in [("work", BLUE), ("communication", ORANGE), ("waiting", RED)] {
        let rects: Vec<_> = slices
            .iter()
            .filter(|e| e["cat"] == cat)
            .map(|e| {
                let row = procs - 1 - e["tid"].as_u64().unwrap_or(0) as usize;
                let (from, to) = (num(e, "ts") / 1e3, (num(e, "ts") + num(e, "dur")) / 1e3);
                Rectangle::new(
                    [
                        (from, SegmentValue::Exact(row)),
                        (to, SegmentValue::Exact(row + 1)),
                    ],
                    color.mix(0.85).filled(),
                )
            })
            .collect();
        chart
            .draw_series(rects)?
            .label(cat)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    // A thin line where each superstep starts.
    let starts: Vec<f64> = slices
        .iter()
        .filter(|e| e["cat"] == "superstep" && e["tid"] == 0)
        .map(|e| num(e, "ts") / 1e3)
        .collect();
    chart.draw_series(starts.into_iter().map(|x| {
        PathElement::new(
            [(x, SegmentValue::Exact(0)), (x, SegmentValue::Exact(procs))],
            BLACK.mix(0.3),
        )
    }))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let data = PathBuf::from(args.next().unwrap_or_else(|| "benchmarks/data".into()));
    let out = PathBuf::from(args.next().unwrap_or_else(|| "benchmarks".into()));
    let written = [
        (
            "router_scaling.svg",
            router_scaling(
                &lines(&data.join("router.jsonl"))?,
                &out.join("router_scaling.svg"),
            ),
        ),
        (
            "sort_vs_peers.svg",
            sort_vs_peers(
                &lines(&data.join("sort.jsonl"))?,
                &out.join("sort_vs_peers.svg"),
            ),
        ),
        (
            "nas_is_vs_npb.svg",
            nas_is_vs_npb(
                &lines(&data.join("nas_is.jsonl"))?,
                &lines(&data.join("npb.jsonl"))?,
                &out.join("nas_is_vs_npb.svg"),
            ),
        ),
        (
            "distributions.svg",
            distributions(
                &lines(&data.join("distributions.jsonl"))?,
                &out.join("distributions.svg"),
            ),
        ),
        ("radix_sort_timeline.svg", {
            let path = data.join("radix_sort_trace.json");
            let trace: Value = serde_json::from_str(
                &std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?,
            )?;
            timeline(&trace, &out.join("radix_sort_timeline.svg"))
        }),
    ];
    for (name, result) in written {
        result.map_err(|e| format!("{name}: {e}"))?;
        println!("wrote {}", out.join(name).display());
    }
    Ok(())
}
