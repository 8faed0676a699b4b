//! Choice by the cost model: every collective with more than one
//! algorithm lists its variants in a table ([`Variant`]), each with the
//! BSP cost it predicts from the message size, p and the machine's
//! measured l and g; the collective's default runs the variant of least
//! predicted cost ([`pick`]).

use bsp_core::{Cost, Ctx, Machine, Router, Transport};

/// The machine assumed when a run does not know its own (its router was
/// fixed and no [`Machine`] was given, see [`Ctx::machine`]): l = 20 µs
/// and g = 0.5 ns per byte for every router, about what the threads
/// transport measures on a small x86 machine.
pub const NOMINAL_MACHINE: Machine = Machine::new(NOMINAL_COST, NOMINAL_COST);

const NOMINAL_COST: Cost = Cost {
    l_seconds: 20e-6,
    g_seconds_per_byte: 0.5e-9,
};

/// The BSP cost model of one run: a superstep that routes h bytes (the
/// most any processor sends or receives) costs `l + g·h` seconds, with l
/// and g those the machine measured for the router that carries it (under
/// [`Router::Auto`], the router the automatic choice would take for h).
///
/// g is measured on a full h-relation, every processor sending h at once.
/// A superstep that moves less in all (a gather to one root, a tree's
/// round) is charged by [`sparse_superstep`](Model::sparse_superstep):
/// `l + max(g₁·h, g·V/p)` for V bytes in all, g₁ the machine's
/// [`lone_g`](Machine::lone_g), so that where processors share cores the
/// root's h costs what one copy of it costs. Sub-machines
/// ([`Ctx::split`](bsp_core::Ctx::split)) are charged by
/// [`sub_superstep`](Model::sub_superstep) and
/// [`split`](Model::split).
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::Model;
/// use bsp_core::{Cost, Machine, Router};
///
/// let cost = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
/// let model = Model::new(Machine::new(cost, cost), Router::TwoPhase);
/// assert!((model.superstep(1000.0) - 1.1e-5).abs() < 1e-12);
/// assert!((model.supersteps(3, 0.0) - 3e-5).abs() < 1e-12);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    machine: Machine,
    router: Router,
    transport: Transport,
    /// Whether the processors share one node's memory (always on threads).
    one_node: bool,
}

/// What a split costs under MPI, in l: `MPI_Comm_split` and the
/// sub-communicator's first collectives; `bench_split` measured 6.0–6.4 l
/// at 4 ranks on two cores.
const MPI_SPLIT_L: f64 = 6.0;

/// What a sub-machine's superstep costs under MPI, in l, whatever its
/// size: `bench_split` measured 1.50–1.85 l at 4 ranks on two cores (a
/// sub-communicator's collective is no cheaper than the world's).
const MPI_SUB_SUPERSTEP_L: f64 = 1.5;

impl Model {
    /// The model of `machine` when its supersteps are delivered by `router`
    /// on the threads transport (see [`with_transport`](Model::with_transport) for another).
    pub fn new(machine: Machine, router: Router) -> Self {
        Model {
            machine,
            router,
            transport: Transport::Threads,
            one_node: true,
        }
    }

    /// The same model on `transport`: the transport decides what a split
    /// and a sub-machine's superstep cost ([`split`](Model::split),
    /// [`sub_superstep`](Model::sub_superstep)).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::Model;
    /// use bsp_core::{Cost, Machine, Router, Transport};
    ///
    /// let cost = Cost { l_seconds: 1e-4, g_seconds_per_byte: 0.0 };
    /// let model = Model::new(Machine::new(cost, cost), Router::TwoPhase);
    /// assert_eq!(model.with_transport(Transport::Threads), model);
    /// ```
    pub fn with_transport(self, transport: Transport) -> Self {
        Model {
            transport,
            one_node: transport == Transport::Threads,
            ..self
        }
    }

    /// The same model with its processors on one node (`true`) or not:
    /// on one node a multicast's payload is copied once at the sender and
    /// once by each receiver, as on threads
    /// ([`multicast_h`](Model::multicast_h)); across nodes every
    /// receiver's copy leaves the sender. [`of`](Model::of) takes it from
    /// [`Ctx::on_one_node`]; a model on threads is always on one node.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::{Model, NOMINAL_MACHINE};
    /// use bsp_core::Router;
    ///
    /// let model = Model::new(NOMINAL_MACHINE, Router::Direct);
    /// assert_eq!(model.with_one_node(false).multicast_h(1000.0, 7), 1000.0);
    /// ```
    pub fn with_one_node(self, one_node: bool) -> Self {
        Model {
            one_node: one_node || self.transport == Transport::Threads,
            ..self
        }
    }

    /// The transport whose sub-machines the model charges.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The model of this run: its machine ([`Ctx::machine`], or
    /// [`NOMINAL_MACHINE`] when the run has none) and its router. Every
    /// processor gets the same model, so every processor picks the same
    /// variant. Like the automatic router's choice, the variant (and so
    /// the number of supersteps a collective takes) can differ between
    /// machines and transports whose measured l and g differ; results do
    /// not, except in the rounding of operators that are associative only
    /// up to rounding.
    pub fn of(ctx: &Ctx) -> Self {
        Model::new(ctx.machine().unwrap_or(NOMINAL_MACHINE), ctx.router())
            .with_transport(ctx.transport())
            .with_one_node(ctx.on_one_node())
    }

    /// The machine's parameters.
    pub fn machine(&self) -> Machine {
        self.machine
    }

    /// Predicted seconds of one superstep routing `h_bytes`.
    pub fn superstep(&self, h_bytes: f64) -> f64 {
        let h = h_bytes.max(0.0).ceil() as u64;
        let (l, g, _) = self.router_for(h);
        l + g * h as f64
    }

    /// The g·h part of [`superstep`](Model::superstep) for `h_bytes`, g
    /// that of the router carrying it (without its l).
    pub(crate) fn transfer(&self, h_bytes: f64) -> f64 {
        let h = h_bytes.max(0.0).ceil() as u64;
        let (_, g, _) = self.router_for(h);
        g * h as f64
    }

    /// The h of a processor that sends the same `bytes` to `targets`
    /// processors with one [`Ctx::multicast_area`](bsp_core::expert::Areas::multicast_area):
    /// on one node (threads, or MPI ranks that share a node,
    /// [`with_one_node`](Model::with_one_node)) it copies them once and
    /// each receiver copies its own out of that copy, so h is `bytes`;
    /// across nodes every target's copy leaves it, `targets·bytes`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::{Model, NOMINAL_MACHINE};
    /// use bsp_core::Router;
    ///
    /// // On threads: one copy, whatever the number of targets.
    /// let model = Model::new(NOMINAL_MACHINE, Router::Direct);
    /// assert_eq!(model.multicast_h(1000.0, 7), 1000.0);
    /// ```
    pub fn multicast_h(&self, bytes: f64, targets: usize) -> f64 {
        if self.one_node && targets > 0 {
            bytes
        } else {
            bytes * targets as f64
        }
    }

    /// What a multicast of `bytes` to `targets` processors weighs in the
    /// V of [`sparse_superstep`](Model::sparse_superstep) (bytes sent in
    /// all, each charged g/p for its packing and unpacking both): across
    /// nodes `targets·bytes`; on one node the payload is packed once and
    /// unpacked by each target, `(targets + 1)·bytes/2`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::{Model, NOMINAL_MACHINE};
    /// use bsp_core::Router;
    ///
    /// let model = Model::new(NOMINAL_MACHINE, Router::Direct);
    /// assert_eq!(model.multicast_volume(1000.0, 7), 4000.0);
    /// ```
    pub fn multicast_volume(&self, bytes: f64, targets: usize) -> f64 {
        if self.one_node {
            (targets as f64 + 1.0) * bytes / 2.0
        } else {
            bytes * targets as f64
        }
    }

    /// Predicted seconds of an all-gather superstep in which every
    /// processor receives `h_bytes` and sends one block (`h_bytes/(p − 1)`)
    /// to all others with one multicast: [`superstep`](Model::superstep)'s
    /// `l + g·h`, less, on one node ([`with_one_node`](Model::with_one_node)),
    /// the half of g·h that pays for packing (a sender copies its block
    /// once, not once per receiver), for all but one block.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::Model;
    /// use bsp_core::{Cost, Machine, Router};
    ///
    /// let cost = Cost { l_seconds: 0.0, g_seconds_per_byte: 1e-9 };
    /// let model = Model::new(Machine::new(cost, cost), Router::Direct);
    /// // Threads, p = 4: a block of 1000 bytes to each of 3 others, packed
    /// // once: g·3000 less half of g·2000.
    /// assert!((model.all_gather_superstep(4, 3000.0) - 2e-6).abs() < 1e-15);
    /// ```
    pub fn all_gather_superstep(&self, p: usize, h_bytes: f64) -> f64 {
        let whole = self.superstep(h_bytes);
        if p <= 2 || !self.one_node {
            return whole;
        }
        let block = h_bytes / (p - 1) as f64;
        whole - self.transfer(h_bytes - block) / 2.0
    }

    /// Predicted seconds of `count` supersteps routing `h_bytes` each.
    pub fn supersteps(&self, count: usize, h_bytes: f64) -> f64 {
        count as f64 * self.superstep(h_bytes)
    }

    /// The router that carries a superstep of h bytes, and its l, g and
    /// lone g.
    fn router_for(&self, h: u64) -> (f64, f64, f64) {
        let router = match self.machine.cost(self.router) {
            Some(_) => self.router,
            None => self.machine.choose(h).0,
        };
        let cost = self.machine.cost(router).unwrap_or_default();
        let lone = self.machine.lone_g(router).unwrap_or_default();
        (cost.l_seconds, cost.g_seconds_per_byte, lone)
    }

    /// Predicted seconds of one superstep on `p` processors in which the
    /// most any processor sends or receives is `h_bytes` and all of them
    /// together send `total_bytes`: `l + max(g₁·h, g·total/p)`, g₁ the
    /// machine's [`lone_g`](Machine::lone_g), which holds for the first
    /// [`Machine::PROBE_BYTES`] of h (the probe measured no more); the
    /// rest of h is charged g. A full h-relation
    /// (total = p·h) costs [`superstep`](Model::superstep)'s `l + g·h`; a
    /// gather of h to one processor (total = h), `l + g₁·h`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::Model;
    /// use bsp_core::{Cost, Machine, Router};
    ///
    /// let cost = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
    /// let machine = Machine::new(cost, cost).with_lone_g(1e-10, 1e-10);
    /// let model = Model::new(machine, Router::TwoPhase);
    /// // A full h-relation of 1000 bytes, and a gather of 1000 bytes.
    /// assert!((model.sparse_superstep(4, 1000.0, 4000.0) - 1.1e-5).abs() < 1e-12);
    /// assert!((model.sparse_superstep(4, 1000.0, 1000.0) - 1.025e-5).abs() < 1e-12);
    /// ```
    pub fn sparse_superstep(&self, p: usize, h_bytes: f64, total_bytes: f64) -> f64 {
        self.sub_superstep(p, p, h_bytes, total_bytes)
    }

    /// Predicted seconds of one superstep of sub-machines of `q` of the
    /// `p` processors each, all at once ([`Ctx::split`](bsp_core::Ctx::split)),
    /// with h and the bytes of all sub-machines together as in
    /// [`sparse_superstep`](Model::sparse_superstep): l is charged
    /// `l·(1 + q/p)/2`, between the figures `bench_split` measured on
    /// threads on two cores: alone on the machine, 0.02–0.12 l with 2
    /// members, 0.35–0.5 l with 4 or 8 of 8 or 16, 0.9–1.4 l with all;
    /// beside other jobs, 0.6–0.75 l with 2 or 4 members and about l with
    /// all. Under MPI (4 ranks on 2 cores) it measured 1.5–1.9 l: a
    /// sub-communicator's sync is no cheaper there, and a model on MPI
    /// ([`with_transport`](Model::with_transport)) charges every sub-machine superstep 1.5 l
    /// (a sub-machine of all p, which is the whole machine, l).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::Model;
    /// use bsp_core::{Cost, Machine, Router};
    ///
    /// let cost = Cost { l_seconds: 1e-4, g_seconds_per_byte: 0.0 };
    /// let model = Model::new(Machine::new(cost, cost), Router::TwoPhase);
    /// assert!((model.sub_superstep(16, 16, 0.0, 0.0) - 1e-4).abs() < 1e-12);
    /// assert!((model.sub_superstep(16, 4, 0.0, 0.0) - 0.625e-4).abs() < 1e-12);
    /// ```
    pub fn sub_superstep(&self, p: usize, q: usize, h_bytes: f64, total_bytes: f64) -> f64 {
        let h = h_bytes.max(0.0).ceil() as u64;
        let (l, g, lone) = self.router_for(h);
        let whole = q >= p;
        let p = p.max(1) as f64;
        let share = match self.transport {
            _ if whole => 1.0,
            Transport::Threads => (1.0 + q as f64 / p) / 2.0,
            _ => MPI_SUB_SUPERSTEP_L,
        };
        // The lone g was measured with at most `PROBE_BYTES` at the root,
        // in cache: beyond that the receiver streams through memory, and
        // the bytes past it are charged the full exchange's g.
        let within = (h as f64).min(Machine::PROBE_BYTES as f64);
        let beyond = h as f64 - within;
        share * l + (lone * within + g * beyond).max(g * total_bytes.max(0.0) / p)
    }

    /// Predicted seconds of a [`Ctx::split`](bsp_core::Ctx::split) of `p`
    /// processors into sub-machines of `q`, entering and leaving them
    /// (an all-gather of the machine's sync rows, the sub-machines'
    /// making, and an all-gather of each sub-machine's at its end):
    /// `l·(2 + 2/q)`. Measured on threads on two cores (`bench_split`):
    /// 2.4–3.7 l with sub-machines of 2, 1.3–2.7 l with larger ones (the
    /// more sub-machines, the dearer). Under MPI a split also runs
    /// `MPI_Comm_split`: 6.0–6.4 l measured at 4 ranks, and a model on MPI
    /// ([`with_transport`](Model::with_transport)) charges `6·l`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_algos::variants::Model;
    /// use bsp_core::{Cost, Machine, Router};
    ///
    /// let cost = Cost { l_seconds: 1e-4, g_seconds_per_byte: 0.0 };
    /// let model = Model::new(Machine::new(cost, cost), Router::TwoPhase);
    /// assert!((model.split(2) - 3e-4).abs() < 1e-12);
    /// ```
    pub fn split(&self, q: usize) -> f64 {
        let (l, _, _) = self.router_for(0);
        match self.transport {
            Transport::Threads => l * (2.0 + 2.0 / q.max(1) as f64),
            _ => l * MPI_SPLIT_L,
        }
    }
}

/// The predicted seconds of one variant of a collective on `p` processors
/// for a message of `bytes` bytes (per processor, as the collective
/// documents); `None` where the variant does not apply (the hypercube
/// all-to-all when p is not a power of two).
pub type CostFn = fn(&Model, usize, usize) -> Option<f64>;

/// One algorithm of a collective: its name, its predicted cost and the
/// function that runs it (`F`, a function pointer with the collective's
/// signature).
///
/// Each collective with variants has a table of them
/// (`variants::broadcast_variants` and its siblings);
/// its default runs [`pick`] over that table, so a new variant joins the
/// choice by one more entry.
///
/// # Examples
///
/// ```
/// let names: Vec<&str> = bsp_algos::variants::broadcast_variants::<u64>()
///     .iter()
///     .map(|v| v.name)
///     .collect();
/// assert_eq!(
///     names,
///     ["1-level", "tree", "two-phase", "pipelined", "2-level", "3-level", "log-p-level"]
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Variant<F> {
    /// The variant's name, as benchmarks print it.
    pub name: &'static str,
    /// Its predicted cost.
    pub cost: CostFn,
    /// The function that runs it.
    pub run: F,
}

impl<F> Variant<F> {
    /// A table entry.
    pub const fn new(name: &'static str, cost: CostFn, run: F) -> Self {
        Variant { name, cost, run }
    }
}

/// The variant of least predicted cost on `p` processors for `bytes`
/// bytes (the first of equals), among those that apply.
///
/// # Panics
///
/// If no variant applies (every table has one that always does).
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{pick, broadcast_variants, Model};
/// use bsp_core::{Cost, Machine, Router};
///
/// let cost = Cost { l_seconds: 20e-6, g_seconds_per_byte: 1e-9 };
/// let model = Model::new(Machine::new(cost, cost), Router::TwoPhase);
/// let variants = broadcast_variants::<u8>();
/// assert_eq!(pick(&model, 2, 8, &variants).name, "1-level");
/// assert_eq!(pick(&model, 8, 8, &variants).name, "1-level");
/// // Long messages at p = 2: the scatter and all-gather move half the
/// // buffer each, and overlap.
/// assert_eq!(pick(&model, 2, 64 << 20, &variants).name, "two-phase");
/// ```
///
/// # Cost
///
/// One evaluation of each variant's cost; no communication.
pub fn pick<'a, F>(
    model: &Model,
    p: usize,
    bytes: usize,
    variants: &'a [Variant<F>],
) -> &'a Variant<F> {
    let mut best: Option<(&Variant<F>, f64)> = None;
    for v in variants {
        if let Some(c) = (v.cost)(model, p, bytes) {
            if best.is_none_or(|(_, b)| c < b) {
                best = Some((v, c));
            }
        }
    }
    best.expect("bsp-algos: a collective has no applicable variant")
        .0
}

/// What a collective's default runs: [`pick`] with this run's model
/// ([`Model::of`]) and processor count, for `bytes` bytes.
pub(crate) fn pick_for<'a, F>(
    ctx: &Ctx,
    bytes: usize,
    variants: &'a [Variant<F>],
) -> &'a Variant<F> {
    pick(&Model::of(ctx), ctx.nprocs(), bytes, variants)
}

/// `⌈log₂ p⌉` (0 for p ≤ 1).
pub(crate) fn ceil_log2(p: usize) -> usize {
    p.max(1).next_power_of_two().trailing_zeros() as usize
}

/// `⌊log₂ p⌋` (0 for p ≤ 1).
pub(crate) fn floor_log2(p: usize) -> usize {
    (usize::BITS - 1 - p.max(1).leading_zeros()) as usize
}

/// `bytes · (p − 1) / p`: what a processor sends of a message split in p
/// blocks when it keeps its own.
pub(crate) fn all_but_own(bytes: usize, p: usize) -> f64 {
    bytes as f64 * (p.max(1) - 1) as f64 / p.max(1) as f64
}
