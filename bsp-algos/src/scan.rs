//! Prefix sums over processors (*Collective Communication and Computation*, 13.3): element-wise, any
//! associative operator, returning the total as well.

use bsp_core::expert::OwnedCoarrays;
use bsp_core::Ctx;
use bytemuck::{zeroed_vec, Pod};

use crate::hypercube::{join_pairs, rounds, Cube};
use crate::model::{all_but_own, pick_for, Model, Variant};
use crate::ops::{fold_before, fold_into, Monoid, Op};
use crate::rows::{fold_into_first, fold_rows, fold_with_mine, others_to, transpose_blocks};

/// The element-wise fold of the vectors of the processors before this one
/// (`None` on processor 0), and of all processors.
type Parts<T> = (Option<Vec<T>>, Vec<T>);

/// The signature of a scan variant: returns the scan and the total.
pub type ScanFn<T, O> = fn(&mut Ctx, &[T], &O) -> (Vec<T>, Vec<T>);

fn direct_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(model.superstep(((p.max(1) - 1) * bytes) as f64))
}

fn two_phase_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    let out = all_but_own(bytes, p);
    Some(model.superstep(out) + model.superstep(2.0 * out))
}

fn hypercube_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(Cube::new(p).seconds(model, bytes, 2 * bytes))
}

/// The exclusive-scan variants [`exclusive_scan`] chooses from, with their
/// costs for vectors of `bytes` bytes: [`exclusive_scan_direct`],
/// [`exclusive_scan_two_phase`] and [`exclusive_scan_hypercube`].
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(3, |ctx| {
///     let mut firsts = Vec::new();
///     for v in bsp_algos::variants::exclusive_scan_variants::<u32, Sum>() {
///         firsts.push((v.run)(ctx, &[1], &Sum).0[0]);
///     }
///     firsts
/// })
/// .unwrap();
/// assert_eq!(out.get(2), Some(&vec![2, 2, 2]));
/// ```
pub fn exclusive_scan_variants<T: Pod + Send, O: Monoid<T>>() -> Vec<Variant<ScanFn<T, O>>> {
    table([
        exclusive_scan_direct::<T, O>,
        exclusive_scan_two_phase::<T, O>,
        exclusive_scan_hypercube::<T, O>,
    ])
}

/// The inclusive-scan variants [`inclusive_scan`] chooses from, with their
/// costs for vectors of `bytes` bytes: [`inclusive_scan_direct`],
/// [`inclusive_scan_two_phase`] and [`inclusive_scan_hypercube`].
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let names: Vec<_> = bsp_algos::variants::inclusive_scan_variants::<u8, Sum>().iter().map(|v| v.name).collect();
/// assert_eq!(names, ["direct", "two-phase", "hypercube"]);
/// ```
pub fn inclusive_scan_variants<T: Pod + Send, O: Op<T>>() -> Vec<Variant<ScanFn<T, O>>> {
    table([
        inclusive_scan_direct::<T, O>,
        inclusive_scan_two_phase::<T, O>,
        inclusive_scan_hypercube::<T, O>,
    ])
}

/// The scan variants, named and costed: direct, two-phase, hypercube.
///
/// The direct scan comes first, as it wins ties (p = 2, where it and the
/// hypercube both take one superstep of h = m): it folds the processors
/// before it in the buffer it received them in, where the hypercube also
/// keeps a copy of its running total and of the prefix.
fn table<F>([direct, two_phase, hypercube]: [F; 3]) -> Vec<Variant<F>> {
    vec![
        Variant::new("direct", direct_cost, direct),
        Variant::new("two-phase", two_phase_cost, two_phase),
        Variant::new("hypercube", hypercube_cost, hypercube),
    ]
}

/// Every vector to every processor, which folds those before it.
fn parts_direct<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &[T], op: &O) -> Parts<T> {
    let (me, m) = (ctx.pid(), data.len());
    let mut others = others_to(ctx, "scan", data, |_| true);
    if me == 0 {
        return (None, fold_with_mine(op, others, me, data));
    }
    if m == 0 {
        return (Some(Vec::new()), Vec::new());
    }
    // Rows 0..me of `others` are the processors before this one: their
    // fold is made in row 0's place, and the total starts from it.
    let (before, after) = others.split_at_mut(me * m);
    fold_into_first(op, before, m);
    let mut total: Vec<T> = before[..m]
        .iter()
        .zip(data)
        .map(|(&a, &b)| op.combine(a, b))
        .collect();
    after
        .chunks_exact(m)
        .for_each(|row| fold_into(op, &mut total, row));
    others.truncate(m);
    others.shrink_to_fit();
    (Some(others), total)
}

/// The transpose route.
fn parts_two_phase<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &[T], op: &O) -> Parts<T> {
    let (p, me, m) = (ctx.nprocs(), ctx.pid(), data.len());
    // Processor j scans block j over the sources, then returns to every
    // processor i its prefix block (i > 0) and the total block.
    let (blocks, rows) = transpose_blocks(ctx, "scan", data);
    let w = blocks.local_len(me);
    let prefixes = ctx.coarray_for("scan", zeroed_vec::<T>(if me > 0 { m } else { 0 }));
    let totals = ctx.coarray_for("scan", zeroed_vec::<T>(m));
    let total = fold_rows(op, &rows, w);
    // `prefix` is block `me` folded over processors 0..i (none for i = 0).
    let mut prefix = rows[..w].to_vec();
    let start = blocks.start(me);
    for i in 0..p {
        if i == me {
            if i > 0 {
                ctx.local_mut(&prefixes)[start..start + w].copy_from_slice(&prefix);
            }
            ctx.local_mut(&totals)[start..start + w].copy_from_slice(&total);
        } else {
            if i > 0 {
                ctx.put(i, &prefixes, start, &prefix);
            }
            ctx.put(i, &totals, start, &total);
        }
        if i > 0 {
            fold_into(op, &mut prefix, &rows[i * w..(i + 1) * w]);
        }
    }
    ctx.sync();
    let before = ctx.release(prefixes);
    ((me > 0).then_some(before), ctx.release(totals))
}

/// The hypercube prefix sum: the all-reduce's rounds, in which a node
/// whose bit is set also folds what it receives into its prefix.
fn parts_hypercube<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &[T], op: &O) -> Parts<T> {
    let (me, m) = (ctx.pid(), data.len());
    let cube = Cube::new(ctx.nprocs());
    // Room for [prefix | total] where a pair's second member gets both
    // at the end; otherwise one vector per round.
    let inbox = ctx.coarray_for(
        "scan",
        zeroed_vec::<T>(if cube.pairs > 0 { 2 * m } else { m }),
    );
    let mut total = data.to_vec();
    join_pairs(ctx, "scan", &cube, &inbox, &mut total, op);
    let below = rounds(ctx, "scan", &cube, &inbox, &mut total, op, true);
    let parts = if cube.pairs == 0 {
        (below, total)
    } else {
        // The first of a pair returns [its prefix ⊕ its own vector | total]
        // to the second.
        if me < 2 * cube.pairs && !cube.is_passenger(me) {
            let mut upto = data.to_vec();
            if let Some(b) = &below {
                fold_before(op, b, &mut upto);
            }
            ctx.put(me + 1, &inbox, 0, &upto);
            ctx.put(me + 1, &inbox, m, &total);
        }
        ctx.sync();
        if cube.is_passenger(me) {
            let got = ctx.local(&inbox);
            (Some(got[..m].to_vec()), got[m..].to_vec())
        } else {
            (below, total)
        }
    };
    ctx.discard(inbox);
    parts
}

/// Exclusive scan: element-wise `data₀ ⊕ … ⊕ data_{pid−1}` (the identity
/// on processor 0), and the total `data₀ ⊕ … ⊕ data_{p−1}`, on every
/// processor, by the variant of least predicted cost
/// ([`exclusive_scan_variants`], [`pick`](crate::model::pick)). As for
/// [`all_reduce`](crate::all_reduce), the variants group the folds
/// differently, which only an operator associative up to rounding can
/// tell apart.
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(4, |ctx| {
///     let counts = [ctx.pid() as u64 + 1];
///     bsp_algos::exclusive_scan(ctx, &counts, &Sum)
/// })
/// .unwrap();
/// let offsets: Vec<u64> = out.iter().map(|(before, _)| before[0]).collect();
/// assert_eq!(offsets, vec![0, 1, 3, 6]);
/// assert!(out.iter().all(|(_, total)| total == &[10]));
/// ```
///
/// # Panics
///
/// Every processor must pass the same length; otherwise
/// the run ends, at the sync that moves the vectors: with an out-of-bounds
/// error where a longer one runs past a receiver's buffer, otherwise with
/// a panic naming both processors and their lengths.
///
/// # Cost
///
/// The least of the variants' (B = `data`'s bytes, T(h) = l + g·h):
/// [`exclusive_scan_direct`] T((p − 1)B); [`exclusive_scan_two_phase`]
/// T(B(p − 1)/p) + T(2B(p − 1)/p); [`exclusive_scan_hypercube`]
/// log₂ q · T(B), plus T(B) + T(2B) when p is not a power of two
/// (q = 2^⌊log₂ p⌋).
pub fn exclusive_scan<T: Pod + Send, O: Monoid<T>>(
    ctx: &mut Ctx,
    data: &[T],
    op: &O,
) -> (Vec<T>, Vec<T>) {
    let variants = exclusive_scan_variants::<T, O>();
    let chosen = pick_for(ctx, std::mem::size_of_val(data), &variants);
    (chosen.run)(ctx, data, op)
}

/// Inclusive scan: element-wise `data₀ ⊕ … ⊕ data_pid`, and the total, on
/// every processor, by the variant of least predicted cost
/// ([`inclusive_scan_variants`], [`pick`](crate::model::pick)). Needs no identity.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = [ctx.pid() as u32 + 1];
///     let (upto, total) = bsp_algos::inclusive_scan(ctx, &mine, &|a: u32, b: u32| a * b);
///     (upto[0], total[0])
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![(1, 6), (2, 6), (6, 6)][..]));
/// ```
///
/// # Panics
///
/// As [`exclusive_scan`].
///
/// # Cost
///
/// As [`exclusive_scan`].
pub fn inclusive_scan<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    data: &[T],
    op: &O,
) -> (Vec<T>, Vec<T>) {
    let variants = inclusive_scan_variants::<T, O>();
    let chosen = pick_for(ctx, std::mem::size_of_val(data), &variants);
    (chosen.run)(ctx, data, op)
}

fn exclusive<T: Copy, O: Monoid<T>>(parts: Parts<T>, m: usize, op: &O) -> (Vec<T>, Vec<T>) {
    let (before, total) = parts;
    (before.unwrap_or_else(|| vec![op.identity(); m]), total)
}

fn inclusive<T: Copy, O: Op<T>>(parts: Parts<T>, data: &[T], op: &O) -> (Vec<T>, Vec<T>) {
    let (before, total) = parts;
    let upto = match before {
        Some(mut acc) => {
            fold_into(op, &mut acc, data);
            acc
        }
        None => data.to_vec(),
    };
    (upto, total)
}

/// Defines the exclusive and the inclusive scan of one variant, with
/// their docs, from the function computing the variant's [`Parts`].
macro_rules! scan_variant {
    (
        $exclusive:ident, $inclusive:ident, $parts:ident, $p:literal,
        $(#[doc = $what:literal])*
        cost: $(#[doc = $cost:literal])*
    ) => {
        $(#[doc = $what])*
        ///
        /// # Examples
        ///
        /// ```
        /// use bsp_algos::Sum;
        ///
        #[doc = concat!("let out = bsp_core::run(", $p, ", |ctx| {")]
        #[doc = concat!("    bsp_algos::variants::", stringify!($exclusive), "(ctx, &[ctx.pid() as u32, 1], &Sum)")]
        /// })
        /// .unwrap();
        #[doc = concat!("assert_eq!(out.get(3).unwrap(), &(vec![3, 3], vec![", $p, " * (", $p, " - 1) / 2, ", $p, "]));")]
        /// ```
        ///
        /// # Panics
        ///
        /// As [`exclusive_scan`].
        ///
        /// # Cost
        ///
        $(#[doc = $cost])*
        pub fn $exclusive<T: Pod + Send, O: Monoid<T>>(
            ctx: &mut Ctx,
            data: &[T],
            op: &O,
        ) -> (Vec<T>, Vec<T>) {
            exclusive($parts(ctx, data, op), data.len(), op)
        }

        #[doc = concat!("[`inclusive_scan`] by the algorithm of [`", stringify!($exclusive), "`].")]
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!("let out = bsp_core::run(", $p, ", |ctx| {")]
        ///     // Decimal digits, concatenated in pid order: (value, 10^digits).
        ///     let concat = |a: [u64; 2], b: [u64; 2]| [a[0] * b[1] + b[0], a[1] * b[1]];
        #[doc = concat!("    bsp_algos::variants::", stringify!($inclusive), "(ctx, &[[ctx.pid() as u64, 10]], &concat)")]
        /// })
        /// .unwrap();
        /// assert_eq!(out.get(2).unwrap().0, vec![[12, 1000]]);
        /// ```
        ///
        /// # Panics
        ///
        /// As [`exclusive_scan`].
        ///
        /// # Cost
        ///
        #[doc = concat!("As [`", stringify!($exclusive), "`].")]
        pub fn $inclusive<T: Pod + Send, O: Op<T>>(
            ctx: &mut Ctx,
            data: &[T],
            op: &O,
        ) -> (Vec<T>, Vec<T>) {
            inclusive($parts(ctx, data, op), data, op)
        }
    };
}

scan_variant!(
    exclusive_scan_direct, inclusive_scan_direct, parts_direct, 4,
    /// [`exclusive_scan`] by direct delivery: every vector goes to every
    /// processor, which folds those before it and all of them.
    cost:
    /// 1 superstep, h = (p − 1)m: predicted l + g·(p − 1)B for B bytes.
);

scan_variant!(
    exclusive_scan_two_phase, inclusive_scan_two_phase, parts_two_phase, 5,
    /// [`exclusive_scan`] in two phases: a transpose gives processor j
    /// block j of every vector; it scans the block over the processors and
    /// returns to every processor its prefix block and the total block.
    cost:
    /// 2 supersteps, h ≈ m(p − 1)/p and h ≈ 2m(p − 1)/p: predicted
    /// (l + g·B(p − 1)/p) + (l + 2g·B(p − 1)/p) for B bytes.
);

scan_variant!(
    exclusive_scan_hypercube, inclusive_scan_hypercube, parts_hypercube, 6,
    /// [`exclusive_scan`] on a hypercube: the rounds of
    /// [`all_reduce_hypercube`](crate::reduce::all_reduce_hypercube), in which a
    /// processor whose pid has the round's bit set also folds what it
    /// receives into its prefix. When p is not a power of two, pairs join
    /// and part as there.
    cost:
    /// log₂ q supersteps of h = m (q = 2^⌊log₂ p⌋), plus, when p is not a
    /// power of two, one of h = m and one of h = 2m: predicted log₂ q ·
    /// (l + g·B) (+ (l + g·B) + (l + 2g·B)) for B bytes.
);
