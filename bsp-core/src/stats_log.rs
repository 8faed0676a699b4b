//! The statistics log: the rows of the most recent sync exchanges, kept raw
//! so that a sync costs no more than storing the all-gather's result, and
//! turned into [`SuperstepStats`] only when asked. The log holds as many
//! exchanges as fit in a byte budget ([`StatsLog::new`]), so that its
//! memory stays within the budget however many supersteps and processors
//! a run has.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::mem::size_of;

use crate::protocol::{self, SyncRow};
use crate::router::{RouteFigures, Router};
use crate::stats::{RouteStats, SuperstepStats};
use crate::transport::{concatenate, Rows};

/// The router that routes a sync, and the seconds the cost model predicts
/// for the sync (when the run knows its [`Machine`](crate::Machine)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Choice {
    pub(crate) router: Router,
    pub(crate) predicted: Option<f64>,
    /// The h (bytes) the processors knew before routing.
    pub(crate) h: u64,
}

/// The default budget of a processor's statistics log, in bytes (see
/// [`Runtime::with_stats_memory`](crate::Runtime::with_stats_memory)).
pub(crate) const STATS_MEMORY: usize = 4 << 20;

/// Bytes a kept exchange costs beside its words: its entry in the log and
/// the counts of its shared allocation.
const ENTRY_BYTES: usize = size_of::<(Rows, Choice)>() + 2 * size_of::<usize>();

/// Bytes one kept exchange among `nprocs` processors costs: each
/// processor's row (its counts included, up to 64 processors) and the
/// entry. Rows that also carry record heads are kept without them (see
/// [`StatsLog::push`]), so no kept exchange costs more.
fn exchange_bytes(nprocs: usize) -> usize {
    nprocs * protocol::row_width(nprocs, 0) * size_of::<u64>() + ENTRY_BYTES
}

/// The rows of the most recent exchanges, as many as the budget allows
/// (two at least), oldest first. Superstep s's statistics are its work in
/// the rows of sync s and its sync figures in the rows of the next
/// exchange.
///
/// How many are kept depends only on p and the budget, not on the
/// transport, so every processor of every run keeps the same supersteps.
/// On threads the processors share each exchange's rows (the all-gather's
/// one result), so a process holds about one budget whatever p; under
/// MPI each rank holds its own.
pub(crate) struct StatsLog {
    /// Processors, each of which contributed a row (of the same width,
    /// which may change from one exchange to the next) to each exchange.
    nprocs: usize,
    /// The budget in bytes, kept for the logs of sub-machines.
    budget: usize,
    /// The most exchanges kept: the budget over [`exchange_bytes`].
    capacity: usize,
    rows: VecDeque<(Rows, Choice)>,
    /// The superstep of the oldest kept exchange: as many supersteps'
    /// statistics have been dropped.
    first: usize,
    /// The supersteps' labels ([`Ctx::label`](crate::Ctx::label)), by superstep.
    labels: BTreeMap<usize, Cow<'static, str>>,
}

impl StatsLog {
    /// A log of the rows gathered from `nprocs` processors that keeps
    /// at most `budget` bytes of them (but always the last two exchanges,
    /// so that the last superstep's statistics are complete), besides the
    /// labels of the supersteps kept.
    pub(crate) fn new(nprocs: usize, budget: usize) -> Self {
        StatsLog {
            nprocs,
            budget,
            capacity: (budget / exchange_bytes(nprocs)).max(2),
            rows: VecDeque::new(),
            first: 0,
            labels: BTreeMap::new(),
        }
    }

    /// Starts the log again at superstep `step` (a run restored from a
    /// checkpoint): the statistics of the supersteps before it are
    /// another run's.
    pub(crate) fn restart_at(&mut self, step: usize) {
        self.rows.clear();
        self.labels.clear();
        self.first = step;
    }

    /// Names superstep `step`.
    pub(crate) fn label(&mut self, step: usize, name: Cow<'static, str>) {
        self.labels.insert(step, name);
    }

    /// The budget in bytes given to [`new`](StatsLog::new).
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// How many of the first supersteps' statistics have been dropped.
    pub(crate) fn dropped(&self) -> usize {
        self.first
    }

    /// Keeps the rows of one exchange (all processors' words) and the
    /// router chosen for the sync they open, dropping the oldest kept
    /// exchange when the log is full. Rows that carry record heads (a
    /// slot beyond the counts, under MPI after a placed superstep) are
    /// kept as a copy of their statistics' part.
    ///
    /// Returns rows it no longer keeps, for the transport to write a later
    /// all-gather into: `words` themselves when only their statistics'
    /// part is kept, else the exchange dropped to make room (if any).
    pub(crate) fn push(&mut self, words: Rows, choice: Choice) -> Option<Rows> {
        let mut dropped = None;
        if self.rows.len() == self.capacity {
            dropped = self.rows.pop_front().map(|(rows, _)| rows);
            self.labels.remove(&self.first);
            self.first += 1;
        }
        let width = words.len() / self.nprocs;
        if width > protocol::row_width(self.nprocs, 0) {
            // The first `SyncRow::WORDS` words of each row, copied row by
            // row (word by word through an iterator, this cost an idle
            // sync under MPI about 40 ns, a sixth of it, after a placed
            // superstep: np = 2, AMD-2b, 2026-11-27), into the dropped
            // exchange where it fits (a run of such syncs keeps only
            // these parts, so it does).
            let part = |q: usize| &words[q * width..q * width + SyncRow::WORDS];
            let part = concatenate(dropped, self.nprocs, SyncRow::WORDS, part);
            self.rows.push_back((part, choice));
            return Some(words);
        }
        self.rows.push_back((words, choice));
        dropped
    }

    /// Bytes the kept exchanges take, counted as [`exchange_bytes`] does.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        let words: usize = self.rows.iter().map(|(w, _)| w.len()).sum();
        words * size_of::<u64>() + self.rows.len() * ENTRY_BYTES
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

    /// The rows of one exchange among `p` processors, `width` words each
    /// (the rest zero), where processor q reports `work_ns(q)` of work and
    /// `sent(q)` bytes sent in the previous sync.
    fn rows(
        p: usize,
        width: usize,
        work_ns: impl Fn(u64) -> u64,
        sent: impl Fn(u64) -> u64,
    ) -> Rows {
        let row = |q: u64| SyncRow {
            status: Status::Syncing,
            superstep: 0,
            registrations: 0,
            fingerprint: 0,
            has_gets: false,
            bytes: 0,
            work_ns: work_ns(q),
            lends: false,
            records: 0,
            previous: SyncFigures {
                bytes: Traffic {
                    sent: sent(q),
                    received: 0,
                },
                ..SyncFigures::default()
            },
            vote: 0,
            landings: 0,
        };
        let mut words = vec![0; p * width];
        for (q, at) in words.chunks_mut(width).enumerate() {
            at[..SyncRow::WORDS].copy_from_slice(&row(q as u64).to_words());
        }
        words.into()
    }

    fn words(work_ns: u64, sent: u64) -> Rows {
        rows(2, SyncRow::WORDS, |_| work_ns, |_| sent)
    }

    #[test]
    fn a_superstep_pairs_its_work_with_the_next_rows_figures() {
        let mut log = StatsLog::new(2, STATS_MEMORY);
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

    #[test]
    fn rows_no_longer_kept_are_handed_back() {
        // Room for two exchanges: the third push hands back the first.
        let mut log = StatsLog::new(2, 0);
        let first = words(1, 0);
        let at = first.as_ptr();
        assert!(log.push(first, direct()).is_none());
        let second = words(2, 0);
        let second_at = second.as_ptr();
        assert!(log.push(second, direct()).is_none());
        let dropped = log.push(words(3, 0), direct()).expect("the oldest");
        assert_eq!(dropped.as_ptr(), at);
        // Rows with a slot for heads are kept as a copy of their
        // statistics' part, written into the exchange dropped for it: the
        // rows themselves come back.
        let wide = rows(2, protocol::row_width(2, 3), |_| 4, |_| 0);
        let at = wide.as_ptr();
        let back = log.push(wide, direct()).expect("the wide rows");
        assert_eq!(back.as_ptr(), at);
        let kept = &log.rows.back().expect("kept").0;
        assert_eq!(kept.as_ptr(), second_at);
        assert_eq!(kept.len(), 2 * SyncRow::WORDS);
        let steps = log.supersteps(true);
        assert_eq!(steps.len(), 2);
        assert!(steps[1]
            .work_seconds
            .iter()
            .all(|&w| (w - 4e-9).abs() < 1e-15));
    }

    /// Pushes `exchanges` exchanges among `p` processors, with rows of
    /// [`protocol::row_width`]`(p, slot)` words, into a log of `budget`
    /// bytes: the log stays within the budget after every push, and keeps
    /// the most recent supersteps, each with its own figures.
    fn keeps_the_latest_within(p: usize, slot: usize, budget: usize, exchanges: usize) {
        let mut log = StatsLog::new(p, budget);
        let width = protocol::row_width(p, slot);
        // Exchange k: processor q worked k·1000 + q ns in superstep k and
        // sent 100·k + q bytes in sync k − 1.
        for k in 0..exchanges as u64 {
            log.label(k as usize, Cow::Owned(format!("step {k}")));
            log.push(rows(p, width, |q| k * 1000 + q, |q| 100 * k + q), direct());
            assert!(log.bytes() <= budget, "{} bytes after {k}", log.bytes());
        }
        let steps = log.supersteps(false);
        assert_eq!(steps.len(), budget / exchange_bytes(p) - 1);
        assert_eq!(log.dropped() + steps.len(), exchanges - 1);
        for (s, k) in steps.iter().zip(log.dropped() as u64..) {
            assert_eq!(s.superstep, k as usize);
            assert_eq!(s.label.as_deref(), Some(format!("step {k}").as_str()));
            let sent: Vec<u64> = (0..p as u64).map(|q| 100 * (k + 1) + q).collect();
            assert_eq!(s.sent_bytes, sent);
            let work_ns = s.work_seconds.iter().map(|w| (w * 1e9).round() as u64);
            assert!(work_ns.eq((0..p as u64).map(|q| k * 1000 + q)));
        }
        assert_eq!(log.labels.len(), steps.len() + 1);
    }

    #[test]
    fn the_default_budget_keeps_as_many_supersteps_as_documented() {
        // Ctx::stats and Runtime::with_stats_memory: about 6,900 supersteps
        // at p = 2, 1,390 at p = 8 and 51 at p = 64.
        for (p, about) in [(2, 6850), (8, 1380), (64, 50)] {
            let kept = StatsLog::new(p, STATS_MEMORY).capacity - 1;
            assert!(
                (about..about + about / 10).contains(&kept),
                "p = {p}: {kept}"
            );
        }
    }

    #[test]
    fn the_log_keeps_the_latest_supersteps_within_its_budget_at_64_processors() {
        keeps_the_latest_within(64, 0, 1 << 20, 5000);
    }

    #[test]
    fn rows_with_record_heads_are_kept_without_them() {
        let p = 4;
        keeps_the_latest_within(p, 16, 20 * exchange_bytes(p), 500);
    }
}
