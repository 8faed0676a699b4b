//! Per-superstep statistics in BSP cost terms.

use serde::{Serialize, Serializer};

use crate::machine::Machine;
use crate::router::Router;
use crate::transport::Transport;

/// The cost figures of one superstep, for every processor.
///
/// Byte counts are bytes of the routed streams: the records a processor
/// requested (each put, get request, reply or run of queue messages is a
/// 24-byte record header plus its payload; 12 bytes for a put within the
/// first 4 GiB of its coarray, of less than 4 GiB). The two-phase router deals
/// these bytes in words of 8, and its block sizes can be compared with its
/// bounds `s/p + (p−1)/2` and `h/p + (p−1)/2` (in words of 8
/// bytes, route by route: [`routes`](SuperstepStats::routes)). Router
/// headers (a few bytes per non-empty part of a block) are counted
/// separately.
///
/// Every field except the times is identical on every processor, every run
/// and every transport.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SuperstepStats {
    /// The superstep's number (0 for the work before the first `sync`).
    pub superstep: usize,
    /// The name given by [`Ctx::label`](crate::Ctx::label) during the
    /// superstep, on this processor.
    pub label: Option<String>,
    /// Bytes each processor requested in the superstep (its puts, get
    /// requests and messages, before any reply): what every processor
    /// knows of the h-relation before it is routed.
    pub requested_bytes: Vec<u64>,
    /// Bytes each processor sent (get replies included).
    pub sent_bytes: Vec<u64>,
    /// Bytes each processor received.
    pub recv_bytes: Vec<u64>,
    /// Records (puts, get requests, replies, queue-message runs) each processor sent.
    pub sent_records: Vec<u64>,
    /// Records each processor received.
    pub recv_records: Vec<u64>,
    /// Largest payload of a block each processor sent in the router's first
    /// exchange (for [`Router::Direct`], its only exchange).
    pub first_block_bytes: Vec<u64>,
    /// Largest payload of a block each processor received in the second
    /// exchange of [`Router::TwoPhase`] (0 for the direct router).
    pub second_block_bytes: Vec<u64>,
    /// Router header bytes each processor sent.
    pub router_header_bytes: Vec<u64>,
    /// Each routing of the superstep's h-relation: none when nothing was
    /// requested, the requests, and the replies when some processor asked
    /// for a get. The block fields above are the largest over these.
    pub routes: Vec<RouteStats>,
    /// Seconds each processor spent in local work during the superstep.
    pub work_seconds: Vec<f64>,
    /// Seconds each processor spent in the `sync` ending the superstep.
    pub sync_seconds: Vec<f64>,
    /// Seconds the BSP cost model predicted for that `sync`, `l + g·h` of
    /// the router that carried it (see [`Machine`](crate::Machine)), when
    /// the run knows the machine (always under [`Router::Auto`]) and the
    /// superstep routed anything. Compare with
    /// [`max_sync_seconds`](SuperstepStats::max_sync_seconds).
    pub predicted_seconds: Option<f64>,
    /// The h in bytes that every processor knew before the superstep's
    /// requests were routed, on which [`Router::Auto`] chose: exact (the
    /// most bytes one processor sends to or receives from the others) up
    /// to 64 processors, whose sync rows carry every processor's byte
    /// counts; above, the larger of the most bytes one processor sends and
    /// the mean.
    pub known_h_bytes: u64,
}

/// One routing of a superstep's h-relation, for every processor.
///
/// The routers deal in words of 8 bytes (a stream of m bytes is ⌈m/8⌉
/// words, its last word possibly short); the `_words` fields are in that
/// unit. For [`Router::TwoPhase`], the bounds of Bader, Helman and JáJá
/// hold for every processor q: `first_block_words[q] ≤ dealt_words[q]/p +
/// (p−1)/2` and `second_block_words[q] ≤ through_words[q]/p + (p−1)/2`
/// ([`RouteStats::within_bounds`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RouteStats {
    /// The router that carried it.
    #[serde(serialize_with = "by_name")]
    pub router: Router,
    /// Largest payload of a block each processor sent in the first
    /// exchange (for [`Router::Direct`], its only exchange), in bytes.
    pub first_block_bytes: Vec<u64>,
    /// The same in words.
    pub first_block_words: Vec<u64>,
    /// Largest payload of a block each processor received in the second
    /// exchange (two-phase only; 0 for the direct router), in bytes.
    pub second_block_bytes: Vec<u64>,
    /// The same in words.
    pub second_block_words: Vec<u64>,
    /// Words each processor sent to others (its stream to itself stays
    /// local): the s of the stage-1 bound.
    pub dealt_words: Vec<u64>,
    /// Words each processor received from others: the h of the stage-2
    /// bound.
    pub through_words: Vec<u64>,
}

impl RouteStats {
    /// Whether every processor's blocks keep its router's bounds, in
    /// words, with s the words the processor dealt and h the words it
    /// received through the intermediates: for the two-phase router, those
    /// of Bader, Helman and JáJá (stage-1 block ≤ s/p + (p−1)/2, stage-2
    /// block ≤ h/p + (p−1)/2); for the transportation primitive, those of
    /// Ranka, Shankar and Alsabti (stage-1 block ≤ ⌈s/p⌉, stage-2 block ≤
    /// h/p + p − 1). Always true for a single-stage route.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Router, Runtime};
    ///
    /// let stats = Runtime::threads(3)
    ///     .with_router(Router::TwoPhase)
    ///     .run(|ctx| {
    ///         let q = ctx.queue::<u8>();
    ///         for k in 0..100 {
    ///             ctx.send(k % 3, &q, &7);
    ///         }
    ///         ctx.sync();
    ///         ctx.sync();
    ///         ctx.stats()
    ///     })
    ///     .unwrap();
    /// let route = &stats.local().supersteps[0].routes[0];
    /// assert_eq!(route.router, Router::TwoPhase);
    /// assert!(route.within_bounds());
    /// ```
    pub fn within_bounds(&self) -> bool {
        let p = self.first_block_words.len() as u64;
        let all = |first: &dyn Fn(u64, u64) -> bool, second: &dyn Fn(u64, u64) -> bool| {
            (0..self.first_block_words.len()).all(|q| {
                first(self.first_block_words[q], self.dealt_words[q])
                    && second(self.second_block_words[q], self.through_words[q])
            })
        };
        match self.router {
            Router::TwoPhase => {
                let ok = |block: u64, total: u64| 2 * p * block <= 2 * total + p * (p - 1);
                all(&ok, &ok)
            }
            // The transportation primitive's: ⌈s/p⌉ and h/p + (p − 1).
            Router::Transportation => all(&|block, s| p * block < s + p, &|block, h| {
                p * block <= h + p * (p - 1)
            }),
            _ => true,
        }
    }
}

pub(crate) fn max(v: &[u64]) -> u64 {
    v.iter().copied().max().unwrap_or(0)
}

fn fmax(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// The least of `v`, 0 when empty.
fn fmin(v: &[f64]) -> f64 {
    v.iter().copied().reduce(f64::min).unwrap_or(0.0)
}

impl SuperstepStats {
    /// h in bytes: the most any processor sent or received.
    pub fn h_bytes(&self) -> u64 {
        max(&self.sent_bytes).max(max(&self.recv_bytes))
    }

    /// h in records.
    pub fn h_records(&self) -> u64 {
        max(&self.sent_records).max(max(&self.recv_records))
    }

    /// w: the longest local work of any processor, in seconds.
    pub fn max_work_seconds(&self) -> f64 {
        fmax(&self.work_seconds)
    }

    /// The longest `sync` of any processor, in seconds.
    pub fn max_sync_seconds(&self) -> f64 {
        fmax(&self.sync_seconds)
    }

    /// The shortest local work of any processor, in seconds.
    pub fn min_work_seconds(&self) -> f64 {
        fmin(&self.work_seconds)
    }

    /// The shortest `sync` of any processor, in seconds.
    pub fn min_sync_seconds(&self) -> f64 {
        fmin(&self.sync_seconds)
    }

    /// Work imbalance: the longest local work over the mean (1 when every
    /// processor worked as long; p when one did all the work).
    pub fn work_imbalance(&self) -> f64 {
        let mean = self.work_seconds.iter().sum::<f64>() / self.work_seconds.len().max(1) as f64;
        if mean > 0.0 {
            self.max_work_seconds() / mean
        } else {
            1.0
        }
    }

    /// The superstep's measured length: the latest any processor finished
    /// its work and sync, in seconds from the superstep's start.
    pub fn measured_seconds(&self) -> f64 {
        self.work_seconds
            .iter()
            .zip(&self.sync_seconds)
            .map(|(w, s)| w + s)
            .fold(0.0, f64::max)
    }

    /// The BSP cost model's prediction of the superstep's length,
    /// w + h·g + l: the longest work, plus h (bytes) times g, plus l, with
    /// the g and l that `machine` measured for the router that carried the
    /// superstep (for one with no route recorded, the cheaper router's).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Cost, Machine};
    ///
    /// let stats = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray::<u64>(1);
    ///     ctx.put(1 - ctx.pid(), &a, 0, &[7]);
    ///     ctx.sync();
    ///     ctx.sync();
    ///     ctx.stats()
    /// })?;
    /// let step = &stats.root().unwrap().supersteps[0];
    /// let cost = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
    /// let machine = Machine::new(cost, cost);
    /// let predicted = step.model_seconds(&machine);
    /// assert_eq!(predicted, step.max_work_seconds() + cost.predict(step.h_bytes()));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    pub fn model_seconds(&self, machine: &Machine) -> f64 {
        let communication = match self.routes.first().and_then(|r| machine.cost(r.router)) {
            Some(cost) => cost.predict(self.h_bytes()),
            None => machine.choose(self.h_bytes()).1,
        };
        self.max_work_seconds() + communication
    }
}

/// The statistics of a run so far, as seen by one processor.
///
/// A superstep's figures are complete once the next `sync` (or the end of
/// the run) has exchanged them; [`Ctx::stats`](crate::Ctx::stats) returns
/// the complete ones, as far back as a memory budget allows
/// ([`dropped_supersteps`](Stats::dropped_supersteps) counts the older
/// ones). Set `BSP_PROFILE=1` to have processor 0 print this
/// table (its `Display`) when the run ends, or `BSP_PROFILE=trace` to have it
/// write a timeline for ui.perfetto.dev. It serializes (serde) with the
/// router and transport by name.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(2, |ctx| {
///     ctx.label("swap");
///     let a = ctx.coarray::<u32>(1);
///     ctx.put(1 - ctx.pid(), &a, 0, &[1]);
///     ctx.sync();
///     ctx.sync(); // superstep 0's figures are complete after the next sync
///     ctx.stats()
/// })?;
/// let stats = out.root().unwrap();
/// assert_eq!(stats.supersteps[0].label.as_deref(), Some("swap"));
/// let table = stats.to_string();
/// assert!(table.contains("swap") && table.contains("total"));
/// # Ok::<(), bsp_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Number of processors.
    pub nprocs: usize,
    /// The router used.
    #[serde(serialize_with = "by_name")]
    pub router: Router,
    /// The transport used.
    #[serde(serialize_with = "transport_name")]
    pub transport: Transport,
    /// One entry per completed superstep still kept, in order: the most
    /// recent ones, within the memory budget of
    /// [`Runtime::with_stats_memory`](crate::Runtime::with_stats_memory).
    pub supersteps: Vec<SuperstepStats>,
    /// How many of the first supersteps' statistics were dropped to keep
    /// within that budget: `supersteps` starts at this superstep. 0 when
    /// every superstep is kept.
    pub dropped_supersteps: usize,
    /// The machine parameters (g and l per router) that the table's
    /// predicted costs use, where known: measured for [`Router::Auto`]
    /// (or given by `BSP_MACHINE` or [`with_machine`](Stats::with_machine)).
    /// Not serialized.
    #[serde(skip)]
    pub machine: Option<Machine>,
    /// This processor's checkpoints ([`Ctx::checkpoint`](crate::Ctx::checkpoint)),
    /// oldest first: what each wrote and how long it took.
    pub checkpoints: Vec<CheckpointStats>,
}

/// One checkpoint of one processor (see [`Stats::checkpoints`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CheckpointStats {
    /// The superstep the checkpoint was taken in.
    pub superstep: usize,
    /// The bytes of this processor's file.
    pub bytes: u64,
    /// Seconds to write and flush the file (before the confirming sync).
    pub write_seconds: f64,
}

fn by_name<S: Serializer, T: std::fmt::Display>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

fn transport_name<S: Serializer>(t: &Transport, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.name())
}

impl Stats {
    /// Sum over the supersteps kept of the largest h in bytes.
    pub fn total_h_bytes(&self) -> u64 {
        self.supersteps.iter().map(SuperstepStats::h_bytes).sum()
    }

    /// These statistics with machine parameters for the predicted costs.
    pub fn with_machine(mut self, machine: Machine) -> Self {
        self.machine = Some(machine);
        self
    }
}
