//! Broadcast of one serde value from a root.

use ::serde::de::DeserializeOwned;
use ::serde::Serialize;
use bsp_core::Ctx;

use super::{check_root, decode, encode};
use crate::dist::Block;
use crate::model::Model;

/// The root's value on every processor: the root passes `Some(value)`,
/// the others `None` (a value they pass is ignored and dropped). The root
/// gets its own value back, neither encoded nor copied.
///
/// Direct or two-phase, as the root chooses: one superstep in which the
/// root sends the encoding to every other processor, or, where the
/// run's cost model ([`Model::of`](crate::model::Model::of)) predicts it cheaper for
/// the encoding's size, two: the root scatters the encoding in p pieces
/// and every processor sends its piece to all others. The root's choice
/// travels as a vote in the first sync
/// ([`Ctx::sync_any`](bsp_core::Ctx::sync_any)), so the others need not
/// know the size beforehand.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = (ctx.pid() == 2).then(|| vec!["a".to_string(), "b".into()]);
///     bsp_algos::serde::broadcast(ctx, 2, mine)
/// })
/// .unwrap();
/// assert!(out.iter().all(|v| v == &["a", "b"]));
/// ```
///
/// # Panics
///
/// If `root >= p`, if the root passes `None`, or if the value does not
/// serialize or does not decode as a `T` (the processors passed different
/// types); each message names `broadcast` and the processor.
///
/// # Cost
///
/// For a value of B encoded bytes: direct, 1 superstep with h = (p − 1)B
/// at the root; two-phase, 2 supersteps with h ≈ B (B at the root, then
/// about B(p − 1)/p sent and received by each). The value is encoded once
/// and decoded once on each other processor.
pub fn broadcast<T: Serialize + DeserializeOwned>(
    ctx: &mut Ctx,
    root: usize,
    value: Option<T>,
) -> T {
    check_root(ctx, "broadcast", root);
    let (p, me) = (ctx.nprocs(), ctx.pid());
    // Tag: the encoding's length in bytes.
    let q = ctx.tagged_queue::<u64, u8>();
    let mut root_value = None;
    let mut two_phase = false;
    // The root's piece, which it sends on in the second superstep.
    let mut root_piece = (0, Vec::new());
    if me == root {
        let Some(value) = value else {
            panic!("bsp-algos: serde::broadcast: processor {me} is the root and passed None");
        };
        let bytes = encode(ctx, "broadcast", &value);
        let len = bytes.len() as u64;
        two_phase = p > 2 && {
            let model = Model::of(ctx);
            2.0 * model.superstep(bytes.len() as f64)
                < model.superstep((p - 1) as f64 * bytes.len() as f64)
        };
        if two_phase {
            let pieces = Block::new(bytes.len(), p);
            for dst in (0..p).filter(|&d| d != me) {
                ctx.send_tagged(dst, &q, &len, &bytes[pieces.range(dst)]);
            }
            root_piece = (len, bytes[pieces.range(me)].to_vec());
        } else {
            for dst in (0..p).filter(|&d| d != me) {
                ctx.send_tagged(dst, &q, &len, &bytes);
            }
        }
        root_value = Some(value);
    }
    if ctx.sync_any(two_phase) {
        // Piece j is on processor j; each sends its own to all others
        // (and to itself, so that all p arrive in pid order, which is
        // piece order).
        let (len, piece) = match me == root {
            true => std::mem::take(&mut root_piece),
            false => {
                let piece = ctx.next_message(&q).expect("a piece from the root");
                (piece.tag, piece.payload)
            }
        };
        for dst in (0..p).filter(|&d| d != root) {
            ctx.send_tagged(dst, &q, &len, &piece);
        }
        ctx.sync();
    }
    let pieces = ctx.receive_with_source(&q);
    ctx.release_queue(q);
    if let Some(value) = root_value {
        return value;
    }
    let bytes = match pieces.len() {
        1 => pieces.into_iter().next().map(|(_, m)| m.payload),
        _ => pieces.first().map(|(_, m)| {
            let mut bytes = Vec::with_capacity(m.tag as usize);
            pieces
                .iter()
                .for_each(|(_, m)| bytes.extend_from_slice(&m.payload));
            bytes
        }),
    };
    let bytes = bytes.expect("the root's value");
    decode(ctx, "broadcast", root, &bytes)
}
