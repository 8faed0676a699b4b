//! The statistics log: the rows of the most recent sync exchanges, kept raw
//! so that a sync costs no more than storing the all-gather's result, and
//! turned into [`SuperstepStats`] only when asked.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use crate::protocol::SyncRow;
use crate::router::{RouteFigures, Router};
use crate::stats::{RouteStats, SuperstepStats};
use crate::transport::Rows;

/// The router that routes a sync, and the seconds the cost model predicts
/// for the sync (when the run knows its [`Machine`](crate::Machine)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Choice {
    pub(crate) router: Router,
    pub(crate) predicted: Option<f64>,
    /// The h (bytes) the processors knew before routing.
    pub(crate) h: u64,
}

/// How many supersteps' statistics a processor keeps (the most recent ones),
/// so that a run of millions of supersteps does not grow without bound.
pub(crate) const STATS_HISTORY: usize = 1 << 16;

/// The rows of the most recent exchanges (at most [`STATS_HISTORY`] + 1),
/// oldest first. Superstep s's statistics are its work in the rows of
/// sync s and its sync figures in the rows of the next exchange.
pub(crate) struct StatsLog {
    /// Processors, each of which contributed a row (of the same width,
    /// which may change from one exchange to the next) to each exchange.
    nprocs: usize,
    rows: VecDeque<(Rows, Choice)>,
    /// The superstep of the oldest kept exchange.
    first: usize,
    /// The supersteps' labels ([`Ctx::label`](crate::Ctx::label)), by superstep.
    labels: BTreeMap<usize, Cow<'static, str>>,
}

impl StatsLog {
    /// A log of the rows gathered from `nprocs` processors.
    pub(crate) fn new(nprocs: usize) -> Self {
        StatsLog {
            nprocs,
            rows: VecDeque::new(),
            first: 0,
            labels: BTreeMap::new(),
        }
    }

    /// Names superstep `step`.
    pub(crate) fn label(&mut self, step: usize, name: Cow<'static, str>) {
        self.labels.insert(step, name);
    }

    /// Keeps the rows of one exchange (all processors' words) and the
    /// router chosen for the sync they open.
    pub(crate) fn push(&mut self, words: Rows, choice: Choice) {
        if self.rows.len() > STATS_HISTORY {
            self.rows.pop_front();
            self.labels.remove(&self.first);
            self.first += 1;
        }
        self.rows.push_back((words, choice));
    }

    /// Every superstep whose figures are complete; with `finished`, also the
    /// last one, which has no sync (its work alone).
    pub(crate) fn supersteps(&self, finished: bool) -> Vec<SuperstepStats> {
        let mut out: Vec<SuperstepStats> = self
            .rows
            .iter()
            .zip(self.rows.iter().skip(1))
            .enumerate()
            .map(|(k, (now, next))| superstep(self.first + k, now, Some(&next.0), self.nprocs))
            .collect();
        if finished {
            if let Some(last) = self.rows.back() {
                let step = self.first + self.rows.len() - 1;
                out.push(superstep(step, last, None, self.nprocs));
            }
        }
        for s in &mut out {
            s.label = self.labels.get(&s.superstep).map(|l| l.to_string());
        }
        out
    }
}

/// Superstep `step`'s statistics from the rows of its sync (`now`: the
/// work) and of the next exchange (`next`: the sync's figures).
fn superstep(
    step: usize,
    (now, choice): &(Rows, Choice),
    next: Option<&Rows>,
    nprocs: usize,
) -> SuperstepStats {
    let now = SyncRow::all(now, now.len() / nprocs);
    let next = next.map(|words| SyncRow::all(words, words.len() / nprocs));
    let seconds = |ns: u64| ns as f64 * 1e-9;
    let figure = |f: &dyn Fn(&SyncRow) -> u64| -> Vec<u64> {
        match &next {
            Some(rows) => rows.iter().map(f).collect(),
            None => vec![0; now.len()],
        }
    };
    // A sync routes when anything was requested, and again for the replies
    // when some processor asked for a get.
    let routes = match (next.is_some(), now.iter().any(|r| r.bytes > 0)) {
        (true, true) => 1 + usize::from(now.iter().any(|r| r.has_gets)),
        _ => 0,
    };
    let route_figure =
        |k: usize, f: fn(&RouteFigures) -> u64| figure(&|r: &SyncRow| f(&r.previous.routes[k]));
    let largest = |f: fn(&RouteFigures) -> u64| {
        figure(&|r: &SyncRow| r.previous.routes.iter().map(f).max().unwrap_or(0))
    };
    SuperstepStats {
        superstep: step,
        label: None,
        work_seconds: now.iter().map(|r| seconds(r.work_ns)).collect(),
        requested_bytes: now.iter().map(|r| r.bytes).collect(),
        sent_bytes: figure(&|r| r.previous.bytes.sent),
        recv_bytes: figure(&|r| r.previous.bytes.received),
        sent_records: figure(&|r| r.previous.records.sent),
        recv_records: figure(&|r| r.previous.records.received),
        first_block_bytes: largest(|f| f.first_block),
        second_block_bytes: largest(|f| f.second_block),
        router_header_bytes: figure(&|r| r.previous.routes.iter().map(|f| f.header_bytes).sum()),
        routes: (0..routes)
            .map(|k| RouteStats {
                router: choice.router,
                first_block_bytes: route_figure(k, |f| f.first_block),
                first_block_words: route_figure(k, |f| f.first_block_words),
                second_block_bytes: route_figure(k, |f| f.second_block),
                second_block_words: route_figure(k, |f| f.second_block_words),
                dealt_words: route_figure(k, |f| f.dealt_words),
                through_words: route_figure(k, |f| f.received_words),
            })
            .collect(),
        predicted_seconds: choice.predicted.filter(|_| routes > 0),
        known_h_bytes: choice.h,
        sync_seconds: figure(&|r| r.previous.sync_ns)
            .into_iter()
            .map(seconds)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Status, SyncFigures, Traffic};

    fn direct() -> Choice {
        Choice {
            router: Router::Direct,
            predicted: Some(1.0),
            h: 0,
        }
    }

    fn words(work_ns: u64, sent: u64) -> Rows {
        let row = SyncRow {
            status: Status::Syncing,
            superstep: 0,
            registrations: 0,
            fingerprint: 0,
            has_gets: false,
            bytes: 0,
            work_ns,
            lends: false,
            records: 0,
            previous: SyncFigures {
                bytes: Traffic { sent, received: 0 },
                ..SyncFigures::default()
            },
        };
        [row.to_words(), row.to_words()].concat().into()
    }

    #[test]
    fn a_superstep_pairs_its_work_with_the_next_rows_figures() {
        let mut log = StatsLog::new(2);
        log.push(words(1000, 0), direct());
        assert!(log.supersteps(false).is_empty());
        log.push(words(2000, 64), direct());
        let steps = log.supersteps(true);
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].sent_bytes, vec![64, 64]);
        assert!(steps[0]
            .work_seconds
            .iter()
            .all(|&w| (w - 1e-6).abs() < 1e-15));
        assert_eq!(steps[1].sent_bytes, vec![0, 0]);
    }
}
