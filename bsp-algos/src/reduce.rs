//! Reduction to a root and all-reduce (*Collective Communication and Computation*, 13.2), element-wise over
//! vectors, with any associative operator applied in pid order.

use bsp_core::expert::OwnedCoarrays;
use bsp_core::Ctx;
use bytemuck::{zeroed_vec, Pod};

use crate::hypercube::{join_pairs, rounds, Cube};
use crate::klevel::{reduce_k_level, tree_levels_cost, Levels};
use crate::model::{all_but_own, pick_for, Model, Variant};
use crate::ops::Op;
use crate::rows::{
    fold_all_rows, fold_with_mine, gather_in_place, gather_others, others_to, transpose_blocks,
};

/// The signature of a reduce variant.
pub type ReduceFn<T, O> = fn(&mut Ctx, usize, &[T], &O) -> Option<Vec<T>>;
/// The signature of an all-reduce variant.
pub type AllReduceFn<T, O> = fn(&mut Ctx, &mut [T], &O);

/// The reduce variants [`reduce`] chooses from, with their costs for
/// vectors of `bytes` bytes: [`reduce_direct`], [`reduce_two_phase`] and
/// the k-level reduces ([`reduce_k_level`] with 2, 3 and log p levels,
/// named as [`Levels::name`] names them; its 1-level variant is
/// [`reduce_direct`]'s algorithm).
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let names: Vec<_> = bsp_algos::variants::reduce_variants::<u64, Sum>().iter().map(|v| v.name).collect();
/// assert_eq!(names, ["direct", "two-phase", "2-level", "3-level", "log-p-level"]);
/// ```
pub fn reduce_variants<T: Pod + Send, O: Op<T>>() -> Vec<Variant<ReduceFn<T, O>>> {
    vec![
        Variant::new("direct", reduce_direct_cost, reduce_direct::<T, O>),
        Variant::new("two-phase", reduce_two_phase_cost, reduce_two_phase::<T, O>),
        Variant::new(
            "2-level",
            tree_levels_cost::<1, false>,
            reduce_levels::<T, O, 1>,
        ),
        Variant::new(
            "3-level",
            tree_levels_cost::<2, false>,
            reduce_levels::<T, O, 2>,
        ),
        Variant::new(
            "log-p-level",
            tree_levels_cost::<3, false>,
            reduce_levels::<T, O, 3>,
        ),
    ]
}

/// [`reduce_k_level`] with the levels `Levels::ALL[K]`.
fn reduce_levels<T: Pod + Send, O: Op<T>, const K: usize>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
) -> Option<Vec<T>> {
    reduce_k_level(ctx, root, data, op, Levels::ALL[K])
}

/// One superstep in which the root alone receives (p − 1)B.
fn reduce_direct_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    let h = ((p.max(1) - 1) * bytes) as f64;
    Some(model.sparse_superstep(p, h, h))
}

/// A transpose (a full h-relation), then the root gathers p − 1 blocks.
fn reduce_two_phase_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    let h = all_but_own(bytes, p);
    Some(model.superstep(h) + model.sparse_superstep(p, h, h))
}

/// The all-reduce variants [`all_reduce`] chooses from, with their costs
/// for vectors of `bytes` bytes: [`all_reduce_hypercube`],
/// [`all_reduce_direct`] and [`all_reduce_two_phase`].
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(5, |ctx| {
///     let mut sums = Vec::new();
///     for v in bsp_algos::variants::all_reduce_variants::<u32, Sum>() {
///         let mut x = [ctx.pid() as u32];
///         (v.run)(ctx, &mut x, &Sum);
///         sums.push(x[0]);
///     }
///     sums
/// })
/// .unwrap();
/// assert!(out.iter().all(|s| s == &[10, 10, 10]));
/// ```
pub fn all_reduce_variants<T: Pod + Send, O: Op<T>>() -> Vec<Variant<AllReduceFn<T, O>>> {
    vec![
        // First, as it wins ties (p = 2, where it and the direct variant
        // both take one superstep of h = m): it folds into `data` itself,
        // where the direct variant folds in the buffer of the others'
        // vectors and copies the result back.
        Variant::new("hypercube", hypercube_cost, all_reduce_hypercube::<T, O>),
        Variant::new("direct", direct_cost, all_reduce_direct::<T, O>),
        Variant::new("two-phase", two_phase_cost, all_reduce_two_phase::<T, O>),
    ]
}

fn direct_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(model.superstep(((p.max(1) - 1) * bytes) as f64))
}

/// A transpose, then an all-gather of the folded blocks.
fn two_phase_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    let h = all_but_own(bytes, p);
    Some(model.superstep(h) + model.all_gather_superstep(p, h))
}

fn hypercube_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(Cube::new(p).seconds(model, bytes, bytes))
}

/// Element-wise `data₀ ⊕ data₁ ⊕ … ⊕ data_{p−1}` (in pid order), returned
/// on `root` (`Some`) and `None` elsewhere, by the variant of least
/// predicted cost ([`reduce_variants`], [`pick`](crate::model::pick)) for the vector's size,
/// p and the run's machine ([`Model::of`]).
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(4, |ctx| {
///     let mine = [ctx.pid() as u32, 1];
///     bsp_algos::reduce(ctx, 2, &mine, &Sum)
/// })
/// .unwrap();
/// assert_eq!(out.get(2), Some(&Some(vec![6, 4])));
/// assert_eq!(out.get(0), Some(&None));
/// ```
///
/// # Panics
///
/// If `root >= p`. Every processor must pass the same length; otherwise
/// the run ends, at the sync that moves the vectors: with an out-of-bounds
/// error where a longer one runs past a receiver's buffer, otherwise with
/// a panic naming both processors and their lengths.
///
/// # Cost
///
/// The least of the variants' (B = `data`'s bytes, T(h) = l + g·h the
/// model's superstep, S(h, V) = l + max(g₁·h, g·V/p) its
/// [`sparse_superstep`](Model::sparse_superstep)): [`reduce_direct`]
/// S((p − 1)B, (p − 1)B), [`reduce_two_phase`] T(B') + S(B', B') with
/// B' = B(p − 1)/p, and [`reduce_k_level`] with 2, 3 and log p levels as
/// its `# Cost` says. Direct wins short vectors, two-phase long ones.
pub fn reduce<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
) -> Option<Vec<T>> {
    check_root(ctx, root);
    let variants = reduce_variants::<T, O>();
    let chosen = pick_for(ctx, std::mem::size_of_val(data), &variants);
    (chosen.run)(ctx, root, data, op)
}

fn check_root(ctx: &Ctx, root: usize) {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: reduce root {root} out of range (p = {p})"
    );
}

/// Reduce by sending every vector straight to the root, which folds them
/// in pid order.
///
/// # Examples
///
/// ```
/// // Decimal digits, concatenated in pid order: (value, 10^digits).
/// let concat = |a: [u64; 2], b: [u64; 2]| [a[0] * b[1] + b[0], a[1] * b[1]];
/// let out = bsp_core::run(3, |ctx| {
///     bsp_algos::variants::reduce_direct(ctx, 0, &[[ctx.pid() as u64 + 1, 10]], &concat)
/// })
/// .unwrap();
/// assert_eq!(out.get(0), Some(&Some(vec![[123, 1000]])));
/// ```
///
/// # Panics
///
/// As [`reduce`].
///
/// # Cost
///
/// 1 superstep, h = (p − 1)m at the root: predicted l + g·(p − 1)B for B
/// bytes, with g the machine's lone g ([`Model::sparse_superstep`]): the
/// root's h is all that moves.
pub fn reduce_direct<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
) -> Option<Vec<T>> {
    check_root(ctx, root);
    let out = fold_direct(ctx, "reduce", data, op, |q| q == root);
    (ctx.pid() == root).then_some(out)
}

/// Every processor's vector to the processors `to` selects, each folding
/// all p in pid order; empty on the others. One superstep.
fn fold_direct<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    what: &str,
    data: &[T],
    op: &O,
    to: impl Fn(usize) -> bool,
) -> Vec<T> {
    let me = ctx.pid();
    let receives = to(me);
    let others = others_to(ctx, what, data, to);
    if receives {
        fold_with_mine(op, others, me, data)
    } else {
        Vec::new()
    }
}

/// A reduce-scatter (a transpose; processor j folds block j over the
/// processors), then the folded blocks gathered on the processors `to`
/// selects; empty on the others. Two supersteps.
fn fold_two_phase<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    what: &str,
    data: &[T],
    op: &O,
    to: impl Fn(usize) -> bool,
) -> Vec<T> {
    let me = ctx.pid();
    let (blocks, rows) = transpose_blocks(ctx, what, data);
    let chunk = fold_all_rows(op, rows, blocks.local_len(me));
    let mut whole = gather_others(ctx, blocks, None, &chunk, &to);
    if to(me) {
        whole[blocks.range(me)].copy_from_slice(&chunk);
    }
    whole
}

/// Reduce in two supersteps: a transpose gives processor j block j of
/// every vector, which it folds in pid order (a reduce-scatter); the root
/// then gathers the folded blocks.
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(4, |ctx| bsp_algos::variants::reduce_two_phase(ctx, 3, &[1u32; 10], &Sum)).unwrap();
/// assert_eq!(out.get(3), Some(&Some(vec![4; 10])));
/// ```
///
/// # Panics
///
/// As [`reduce`].
///
/// # Cost
///
/// 2 supersteps, h ≈ m(p − 1)/p each: predicted 2 · (l + g·B(p − 1)/p)
/// for B bytes, the second (the root's gather) with the machine's lone g
/// ([`Model::sparse_superstep`]).
pub fn reduce_two_phase<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
) -> Option<Vec<T>> {
    check_root(ctx, root);
    let out = fold_two_phase(ctx, "reduce", data, op, |q| q == root);
    (ctx.pid() == root).then_some(out)
}

/// Element-wise `data₀ ⊕ … ⊕ data_{p−1}` (in pid order) written into
/// `data` on every processor, by the variant of least predicted cost
/// ([`all_reduce_variants`], [`pick`](crate::model::pick)).
///
/// The variants fold in pid order but group differently (the hypercube
/// folds subcubes first): for an operator that is associative only up to
/// rounding (floating-point sums) the last bits can depend on the variant
/// chosen, and so on the machine; call a variant by name where bitwise
/// reproducibility across machines matters.
///
/// # Examples
///
/// ```
/// use bsp_algos::{Max, Min};
///
/// let out = bsp_core::run(3, |ctx| {
///     let mut lo = [ctx.pid() as i64 - 1];
///     let mut hi = lo;
///     bsp_algos::all_reduce(ctx, &mut lo, &Min);
///     bsp_algos::all_reduce(ctx, &mut hi, &Max);
///     (lo[0], hi[0])
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![(-1, 1); 3][..]));
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
/// [`all_reduce_direct`] T((p − 1)B); [`all_reduce_two_phase`]
/// T(B') + A(B'), B' = B(p − 1)/p, A the
/// [`all_gather_superstep`](Model::all_gather_superstep);
/// [`all_reduce_hypercube`] log₂ q · T(B), plus
/// 2 · T(B) when p is not a power of two (q = 2^⌊log₂ p⌋).
pub fn all_reduce<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &mut [T], op: &O) {
    let variants = all_reduce_variants::<T, O>();
    let chosen = pick_for(ctx, std::mem::size_of_val(data), &variants);
    (chosen.run)(ctx, data, op);
}

/// All-reduce by sending every vector to every processor, each folding
/// all p in pid order.
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(3, |ctx| {
///     let mut v = [ctx.pid() as u8, 1];
///     bsp_algos::variants::all_reduce_direct(ctx, &mut v, &Sum);
///     v
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![[3, 3]; 3][..]));
/// ```
///
/// # Panics
///
/// As [`all_reduce`].
///
/// # Cost
///
/// 1 superstep, h = (p − 1)m: predicted l + g·(p − 1)B for B bytes.
pub fn all_reduce_direct<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &mut [T], op: &O) {
    data.copy_from_slice(&fold_direct(ctx, "all_reduce", data, op, |_| true));
}

/// All-reduce as a reduce-scatter (a transpose, then each processor folds
/// its block over the processors) followed by an all-gather of the folded
/// blocks.
///
/// # Examples
///
/// ```
/// use bsp_algos::Max;
///
/// let out = bsp_core::run(4, |ctx| {
///     let mut v: Vec<u32> = (0..9).map(|i| i * ctx.pid() as u32).collect();
///     bsp_algos::variants::all_reduce_two_phase(ctx, &mut v, &Max);
///     v
/// })
/// .unwrap();
/// assert!(out.iter().all(|v| v == &(0..9).map(|i| 3 * i).collect::<Vec<u32>>()));
/// ```
///
/// # Panics
///
/// As [`all_reduce`].
///
/// # Cost
///
/// 2 supersteps, h ≈ m(p − 1)/p each: predicted 2 · (l + g·B(p − 1)/p)
/// for B bytes, less, on one node, what the all-gather saves by sending
/// each folded block to all others as one multicast
/// ([`Model::all_gather_superstep`]).
pub fn all_reduce_two_phase<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &mut [T], op: &O) {
    let me = ctx.pid();
    let (blocks, rows) = transpose_blocks(ctx, "all_reduce", data);
    let mine = blocks.range(me);
    let folded = fold_all_rows(op, rows, mine.len());
    data[mine].copy_from_slice(&folded);
    // The other folded blocks land straight in `data`.
    gather_in_place(ctx, "all_reduce", blocks, data, |_| true);
}

/// Hypercube all-reduce: in round d every processor exchanges its running
/// fold with the processor whose pid differs in bit d and folds the two,
/// the lower pid's first; after log₂ p rounds every processor holds the
/// fold of all. When p is not a power of two, processors 2j + 1
/// (j < p − q, q = 2^⌊log₂ p⌋) first hand their vector to 2j, which
/// takes their place in the cube, and get the result back at the end.
///
/// # Examples
///
/// ```
/// // Decimal digits, concatenated in pid order: (value, 10^digits).
/// let concat = |a: [u64; 2], b: [u64; 2]| [a[0] * b[1] + b[0], a[1] * b[1]];
/// let out = bsp_core::run(6, |ctx| {
///     let mut v = [[ctx.pid() as u64, 10]];
///     bsp_algos::variants::all_reduce_hypercube(ctx, &mut v, &concat);
///     v[0][0]
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![12345; 6][..]));
/// ```
///
/// # Panics
///
/// As [`all_reduce`].
///
/// # Cost
///
/// log₂ q supersteps of h = m, plus 2 supersteps of h = m when p is not a
/// power of two: predicted log₂ q · (l + g·B) (+ 2 · (l + g·B)) for B
/// bytes.
pub fn all_reduce_hypercube<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &mut [T], op: &O) {
    let me = ctx.pid();
    let cube = Cube::new(ctx.nprocs());
    let inbox = ctx.coarray_for("all_reduce", zeroed_vec::<T>(data.len()));
    // Folded in `data` itself, round by round.
    join_pairs(ctx, "all_reduce", &cube, &inbox, data, op);
    rounds(ctx, "all_reduce", &cube, &inbox, data, op, false);
    if cube.pairs > 0 {
        if me < 2 * cube.pairs && !cube.is_passenger(me) {
            ctx.put(me + 1, &inbox, 0, data);
        }
        ctx.sync();
        if cube.is_passenger(me) {
            data.copy_from_slice(ctx.local(&inbox));
        }
    }
    ctx.discard(inbox);
}
