//! Per-superstep statistics in BSP cost terms.

use serde::{Serialize, Serializer};

use crate::router::Router;
use crate::transport::Transport;

/// The cost figures of one superstep, for every processor.
///
/// Byte counts are bytes of the routed streams: the records a processor
/// requested (each put, get request, reply or run of queue messages is a
/// 24-byte record header plus its payload). This is also the unit in which
/// the two-phase router deals, so the block sizes below can be compared
/// directly with its bounds `s/p + (p−1)/2` and `h/p + (p−1)/2`. Router
/// headers (p 8-byte lengths per block) are counted separately.
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
    /// Bytes each processor sent.
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
    /// Seconds each processor spent in local work during the superstep.
    pub work_seconds: Vec<f64>,
    /// Seconds each processor spent in the `sync` ending the superstep.
    pub sync_seconds: Vec<f64>,
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
    /// w + h·g + l: the longest work, plus h (bytes) times g, plus l (a
    /// superstep that requested nothing costs w + l).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::CostParams;
    ///
    /// let stats = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray::<u64>(1);
    ///     ctx.put(1 - ctx.pid(), &a, 0, &[7]);
    ///     ctx.sync();
    ///     ctx.sync();
    ///     ctx.stats()
    /// })?;
    /// let step = &stats.root().unwrap().supersteps[0];
    /// let params = CostParams { g: 1e-9, l: 1e-5 };
    /// let predicted = step.predicted_seconds(params);
    /// assert_eq!(predicted, step.max_work_seconds() + step.h_bytes() as f64 * 1e-9 + 1e-5);
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    pub fn predicted_seconds(&self, params: CostParams) -> f64 {
        self.max_work_seconds() + self.h_bytes() as f64 * params.g + params.l
    }
}

/// The machine parameters of the BSP cost model: a superstep with local
/// work w and an h-relation of h bytes costs w + h·g + l seconds.
///
/// The profile ([`Stats`]'s table) predicts each superstep's length with
/// them when they are known: from `BSP_COST=G,L` (G in nanoseconds per
/// byte, L in microseconds, as `examples/bspbench` measures them) until
/// the machine probe provides them (see `profile.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostParams {
    /// Seconds per byte of an h-relation.
    pub g: f64,
    /// Seconds of a superstep's synchronisation.
    pub l: f64,
}

/// The statistics of a run so far, as seen by one processor.
///
/// A superstep's figures are complete once the next `sync` (or the end of
/// the run) has exchanged them; [`Ctx::stats`](crate::Ctx::stats) returns
/// the complete ones. Set `BSP_PROFILE=1` to have processor 0 print this
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
    /// One entry per completed superstep, in order.
    pub supersteps: Vec<SuperstepStats>,
    /// The machine parameters that the table's predicted costs use, where
    /// known ([`with_cost_params`](Stats::with_cost_params)).
    pub cost_params: Option<CostParams>,
}

fn by_name<S: Serializer, T: std::fmt::Display>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

fn transport_name<S: Serializer>(t: &Transport, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.name())
}

impl Stats {
    /// Sum over supersteps of the largest h in bytes.
    pub fn total_h_bytes(&self) -> u64 {
        self.supersteps.iter().map(SuperstepStats::h_bytes).sum()
    }

    /// These statistics with machine parameters for the predicted costs.
    pub fn with_cost_params(mut self, params: CostParams) -> Self {
        self.cost_params = Some(params);
        self
    }
}
