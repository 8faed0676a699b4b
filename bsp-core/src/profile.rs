//! The profile a run prints or writes when it ends (`BSP_PROFILE`): a
//! table per superstep (the `Display` of [`Stats`]), and a Chrome/Perfetto
//! trace with one track per processor.
//!
//! Each processor measures its own work (from the end of one sync to the
//! start of the next) and sync times; the sync rows bring every
//! processor's figures to every processor. The trace draws them: each
//! processor's track is its supersteps end to end (work, then sync), and
//! the tracks are aligned where the first sync ends (processors may start
//! at slightly different moments, but leave the first sync together).
//! Within a sync, a processor waits until the last processor has arrived
//! (the sync's first exchange is a barrier) and spends the rest of its
//! sync time communicating. The waiting thus shows the work imbalance,
//! and communication what the sync costs beyond it.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::env::{MACHINE_ENV, STATS_MEMORY_ENV};
use crate::stats::{max, Stats, SuperstepStats};

/// What processor 0 reports about a run's supersteps when the run ends
/// ([`Runtime::with_profile`](crate::Runtime::with_profile); `BSP_PROFILE`
/// for [`Runtime::from_env`](crate::Runtime::from_env)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// Nothing.
    #[default]
    Off,
    /// A table of the supersteps on standard error (`BSP_PROFILE=1`):
    /// label, work, h, the router's choice and the predicted and measured
    /// times.
    Table,
    /// A Chrome/Perfetto trace written to this file, for ui.perfetto.dev
    /// (`BSP_PROFILE=trace`; the file is `BSP_TRACE_FILE`, by default
    /// `bsp-trace.json`).
    Trace(PathBuf),
}

/// Prints the table or writes the trace, as `profile` asks; called by
/// processor 0 when the run has ended.
pub(crate) fn report(profile: &Profile, stats: Stats) {
    match profile {
        Profile::Off => {}
        Profile::Table => eprint!("{stats}"),
        Profile::Trace(path) => match write_trace(&stats, path) {
            Ok(()) => eprintln!(
                "bsp: profile trace of {} supersteps written to {} (open it in ui.perfetto.dev)",
                stats.supersteps.len(),
                path.display()
            ),
            Err(e) => eprintln!(
                "bsp: cannot write the profile trace to {}: {e}",
                path.display()
            ),
        },
    }
}

fn ms(seconds: f64) -> f64 {
    seconds * 1e3
}

/// The width of the label column: the longest label, within 5..=24.
fn label_width(stats: &Stats) -> usize {
    let longest = stats
        .supersteps
        .iter()
        .filter_map(|s| s.label.as_ref().map(|l| l.chars().count()))
        .max()
        .unwrap_or(0);
    longest.clamp(5, 24)
}

fn shorten(label: &str, width: usize) -> String {
    if label.chars().count() <= width {
        label.to_owned()
    } else {
        let mut s: String = label.chars().take(width - 1).collect();
        s.push('…');
        s
    }
}

impl fmt::Display for Stats {
    /// The profile table: per superstep its label, h, the work and sync
    /// times' minimum and maximum over processors (ms), the work imbalance
    /// (max / mean), the measured length and the cost model's prediction
    /// w + h·g + l; then the totals (of the supersteps kept).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dropped = match self.dropped_supersteps {
            0 => String::new(),
            n => format!(" (the last; {n} before them dropped, {STATS_MEMORY_ENV} keeps more)"),
        };
        writeln!(
            f,
            "bsp profile: p = {}, router = {}, transport = {}, {} supersteps{dropped}; times in ms",
            self.nprocs,
            self.router,
            self.transport.name(),
            self.supersteps.len()
        )?;
        match &self.machine {
            Some(m) => writeln!(f, "cost model: w + h·g + l with the router's g and l: {m}")?,
            None => writeln!(
                f,
                "cost model: g and l unknown, no prediction (Router::Auto measures them; \
                 {MACHINE_ENV} gives them)"
            )?,
        }
        let lw = label_width(self);
        writeln!(
            f,
            "{:>5}  {:<lw$}  {:>12} {:>9}  {:>9} {:>9} {:>6}  {:>9} {:>9}  {:>9} {:>9}",
            "step",
            "label",
            "h bytes",
            "h records",
            "work min",
            "work max",
            "imbal",
            "sync min",
            "sync max",
            "measured",
            "predicted",
        )?;
        let predicted = |s: &SuperstepStats| self.machine.map(|m| s.model_seconds(&m));
        let cell = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{:.3}", ms(v)));
        for s in &self.supersteps {
            writeln!(
                f,
                "{:>5}  {:<lw$}  {:>12} {:>9}  {:>9.3} {:>9.3} {:>6.2}  {:>9.3} {:>9.3}  {:>9.3} {:>9}",
                s.superstep,
                shorten(s.label.as_deref().unwrap_or(""), lw),
                s.h_bytes(),
                s.h_records(),
                ms(s.min_work_seconds()),
                ms(s.max_work_seconds()),
                s.work_imbalance(),
                ms(s.min_sync_seconds()),
                ms(s.max_sync_seconds()),
                ms(s.measured_seconds()),
                cell(predicted(s)),
            )?;
        }
        let sum = |g: fn(&SuperstepStats) -> f64| self.supersteps.iter().map(g).sum::<f64>();
        let total_predicted = self.machine.map(|m| {
            self.supersteps
                .iter()
                .map(|s| s.model_seconds(&m))
                .sum::<f64>()
        });
        writeln!(
            f,
            "{:>5}  {:<lw$}  {:>12} {:>9}  {:>9} {:>9.3} {:>6}  {:>9} {:>9.3}  {:>9.3} {:>9}",
            "total",
            "",
            self.total_h_bytes(),
            self.supersteps
                .iter()
                .map(SuperstepStats::h_records)
                .sum::<u64>(),
            "",
            ms(sum(SuperstepStats::max_work_seconds)),
            "",
            "",
            ms(sum(SuperstepStats::max_sync_seconds)),
            ms(sum(SuperstepStats::measured_seconds)),
            cell(total_predicted),
        )?;
        let busiest = self
            .supersteps
            .iter()
            .map(|s| max(&s.sent_bytes).max(max(&s.recv_bytes)))
            .max()
            .unwrap_or(0);
        writeln!(
            f,
            "(work: local computation; sync: delivery plus waiting for the slowest; \
             imbal: max/mean work; largest h of a superstep: {busiest} bytes)"
        )
    }
}

/// `s` as a JSON string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The Chrome trace-event JSON of `stats` (`traceEvents`): one track per
/// processor, one slice per superstep (named by its label), split into
/// work, waiting and communication as the module docs describe. Written
/// by hand: bsp-core does not depend on a JSON library, whose trait
/// impls would leak into its users' type inference.
pub(crate) fn trace_json(stats: &Stats) -> String {
    let us = |seconds: f64| seconds * 1e6;
    let run = format!(
        "bsp run: p = {}, router = {}, transport = {}",
        stats.nprocs,
        stats.router,
        stats.transport.name()
    );
    let mut events = vec![format!(
        r#"{{"name":"process_name","ph":"M","pid":0,"args":{{"name":{}}}}}"#,
        quoted(&run)
    )];
    for pid in 0..stats.nprocs {
        events.push(format!(
            r#"{{"name":"thread_name","ph":"M","pid":0,"tid":{pid},"args":{{"name":"processor {pid}"}}}}"#
        ));
        events.push(format!(
            r#"{{"name":"thread_sort_index","ph":"M","pid":0,"tid":{pid},"args":{{"sort_index":{pid}}}}}"#
        ));
    }
    // Each processor's clock: where its next superstep starts. Aligned so
    // that the first sync ends at the same moment everywhere.
    let mut clock: Vec<f64> = match stats.supersteps.first() {
        Some(s) => {
            let end = s.measured_seconds();
            let lens = s.work_seconds.iter().zip(&s.sync_seconds);
            lens.map(|(w, y)| end - (w + y)).collect()
        }
        None => Vec::new(),
    };
    for s in &stats.supersteps {
        let name = quoted(&match &s.label {
            Some(label) => format!("{}: {label}", s.superstep),
            None => format!("superstep {}", s.superstep),
        });
        // The barrier opens when the last processor arrives.
        let arrivals: Vec<f64> = clock
            .iter()
            .zip(&s.work_seconds)
            .map(|(c, w)| c + w)
            .collect();
        let opens = arrivals.iter().copied().fold(0.0, f64::max);
        for (pid, (&work, &sync)) in s.work_seconds.iter().zip(&s.sync_seconds).enumerate() {
            let start = clock[pid];
            let waiting = (opens - arrivals[pid]).clamp(0.0, sync);
            let communication = sync - waiting;
            let args = format!(
                r#"{{"superstep":{},"sent bytes":{},"received bytes":{},"h bytes":{}}}"#,
                s.superstep,
                s.sent_bytes.get(pid).copied().unwrap_or(0),
                s.recv_bytes.get(pid).copied().unwrap_or(0),
                s.h_bytes()
            );
            let mut slice = |name: &str, cat: &str, from: f64, dur: f64| {
                events.push(format!(
                    r#"{{"name":{name},"cat":"{cat}","ph":"X","pid":0,"tid":{pid},"ts":{:.3},"dur":{:.3},"args":{args}}}"#,
                    us(from),
                    us(dur)
                ));
            };
            slice(&name, "superstep", start, work + sync);
            slice(r#""work""#, "work", start, work);
            if waiting > 0.0 {
                slice(r#""waiting""#, "waiting", start + work, waiting);
            }
            if communication > 0.0 {
                let at = start + work + waiting;
                slice(r#""communication""#, "communication", at, communication);
            }
            clock[pid] = start + work + sync;
        }
    }
    format!(
        "{{\"traceEvents\":[\n{}\n],\"displayTimeUnit\":\"ms\"}}\n",
        events.join(",\n")
    )
}

/// Writes [`trace_json`] of `stats` to `path`.
pub(crate) fn write_trace(stats: &Stats, path: &Path) -> std::io::Result<()> {
    std::fs::write(path, trace_json(stats))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::router::Router;
    use crate::transport::Transport;

    fn two_steps() -> Stats {
        let step = |k: usize, work: Vec<f64>, sync: Vec<f64>| SuperstepStats {
            superstep: k,
            label: (k == 0).then(|| "count".to_owned()),
            sent_bytes: vec![100, 300],
            recv_bytes: vec![200, 200],
            work_seconds: work,
            sync_seconds: sync,
            ..SuperstepStats::default()
        };
        Stats {
            nprocs: 2,
            router: Router::TwoPhase,
            transport: Transport::Threads,
            supersteps: vec![
                step(0, vec![0.004, 0.001], vec![0.001, 0.004]),
                step(1, vec![0.002, 0.002], vec![0.0, 0.0]),
            ],
            dropped_supersteps: 0,
            machine: None,
            checkpoints: Vec::new(),
        }
    }

    #[test]
    fn the_table_has_labels_minima_maxima_totals_and_predictions() {
        let stats = two_steps();
        let text = stats.to_string();
        let row0 = text.lines().find(|l| l.contains("count")).expect("row 0");
        let cells: Vec<&str> = row0.split_whitespace().collect();
        // step, label, h bytes, h records, work min/max, imbal, sync min/max, measured, predicted
        assert_eq!(
            cells[..7],
            ["0", "count", "300", "0", "1.000", "4.000", "1.60"]
        );
        assert_eq!(cells[7..], ["1.000", "4.000", "5.000", "—"]);
        let total = text
            .lines()
            .find(|l| l.trim_start().starts_with("total"))
            .expect("total");
        assert!(total.contains("600") && total.contains("7.000"), "{total}");
        let cost = crate::Cost {
            l_seconds: 1e-3,
            g_seconds_per_byte: 1e-6,
        };
        let with = stats
            .with_machine(crate::Machine::new(cost, cost))
            .to_string();
        let row0 = with.lines().find(|l| l.contains("count")).expect("row 0");
        // 4 ms work + 300 bytes · 1 µs + 1 ms
        assert!(row0.trim_end().ends_with("5.300"), "{row0}");
    }

    #[test]
    fn the_header_says_how_many_earlier_supersteps_were_dropped() {
        let mut stats = two_steps();
        assert!(!stats.to_string().contains("dropped"));
        stats.dropped_supersteps = 40;
        for s in &mut stats.supersteps {
            s.superstep += 40;
        }
        let text = stats.to_string();
        let header = text.lines().next().expect("header");
        assert!(
            header.contains("2 supersteps (the last; 40 before them dropped, BSP_STATS_MEMORY"),
            "{header}"
        );
    }

    #[test]
    fn the_header_columns_line_up_with_the_rows() {
        let text = two_steps().to_string();
        let lines: Vec<&str> = text.lines().collect();
        let header = lines
            .iter()
            .find(|l| l.contains("h bytes"))
            .expect("header");
        let row = lines.iter().find(|l| l.contains("count")).expect("row");
        for column in ["h bytes", "work max", "measured"] {
            let end = header.find(column).unwrap() + column.len();
            let row_chars: Vec<char> = row.chars().collect();
            let at = header[..end].chars().count();
            assert!(
                row_chars[at - 1] != ' ',
                "{column} ends at column {at}:\n{header}\n{row}"
            );
            assert!(
                row_chars.get(at).is_none_or(|c| *c == ' '),
                "{column}:\n{header}\n{row}"
            );
        }
    }

    #[test]
    fn the_trace_splits_each_superstep_into_work_waiting_and_communication() {
        let trace: Value = serde_json::from_str(&trace_json(&two_steps())).expect("JSON");
        let events = trace["traceEvents"].as_array().expect("traceEvents");
        let slices = |tid: usize| -> Vec<(String, f64, f64)> {
            events
                .iter()
                .filter(|e| e["ph"] == "X" && e["tid"] == tid)
                .map(|e| {
                    let name = e["name"].as_str().unwrap().to_owned();
                    (name, e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
                })
                .collect()
        };
        let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
        // Processor 1 worked 1 ms of the slowest's 4: 3 ms waiting, 1 ms
        // communicating; superstep 1 starts when the slowest ends (5 ms).
        let p1 = slices(1);
        assert_eq!(p1[0].0, "0: count");
        assert!(near(p1[1].2, 1000.0) && p1[1].0 == "work");
        assert!(p1[2].0 == "waiting" && near(p1[2].1, 1000.0) && near(p1[2].2, 3000.0));
        assert!(p1[3].0 == "communication" && near(p1[3].2, 1000.0));
        assert!(p1[4].0 == "superstep 1" && near(p1[4].1, 5000.0));
        // Processor 0 was the slowest: no waiting.
        assert!(slices(0).iter().all(|s| s.0 != "waiting"));
        assert_eq!(
            events[0]["args"]["name"],
            "bsp run: p = 2, router = two-phase, transport = threads"
        );
    }

    #[test]
    fn stats_serialize_with_names_and_labels() {
        let stats = two_steps();
        let v = serde_json::to_value(&stats).expect("serializes");
        assert_eq!(
            (&v["router"], &v["transport"]),
            (&"two-phase".into(), &"threads".into())
        );
        assert_eq!(v["supersteps"][0]["label"], "count");
        assert_eq!(v["supersteps"][1]["label"], Value::Null);
        assert_eq!(
            v["supersteps"][0]["sent_bytes"],
            serde_json::json!([100, 300])
        );
    }

    #[test]
    fn labels_are_escaped_in_the_trace() {
        let mut stats = two_steps();
        stats.supersteps[1].label = Some("say \"hi\"\\\n\u{1}".to_owned());
        let trace: Value = serde_json::from_str(&trace_json(&stats)).expect("valid JSON");
        let names: Vec<&str> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert!(names.contains(&"1: say \"hi\"\\\n\u{1}"), "{names:?}");
    }

    #[test]
    fn processors_that_start_late_are_aligned_where_the_first_sync_ends() {
        let mut stats = two_steps();
        // Processor 1 started 2 ms late: its first superstep is 3 ms long.
        stats.supersteps[0].sync_seconds = vec![0.001, 0.002];
        let trace: Value = serde_json::from_str(&trace_json(&stats)).expect("JSON");
        let events = trace["traceEvents"].as_array().expect("traceEvents");
        let p1: Vec<(&str, f64, f64)> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == 1)
            .map(|e| {
                let at = |k: &str| e[k].as_f64().unwrap() / 1e3;
                (e["name"].as_str().unwrap(), at("ts"), at("dur"))
            })
            .collect();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Starts at 2 ms, works 1, waits for processor 0 until 4, then
        // communicates 1 ms; its next superstep starts right after, at 5.
        assert!(near(p1[0].1, 2.0) && near(p1[0].2, 3.0), "{p1:?}");
        assert!(
            p1[2].0 == "waiting" && near(p1[2].1, 3.0) && near(p1[2].2, 1.0),
            "{p1:?}"
        );
        assert!(p1[3].0 == "communication" && near(p1[3].2, 1.0), "{p1:?}");
        assert!(p1[4].0 == "superstep 1" && near(p1[4].1, 5.0), "{p1:?}");
    }
}
