//! h-relation routers: how one superstep's streams reach their destinations.

mod direct;
mod placed;
mod placed_two_phase;
mod transportation;
mod two_phase;
mod two_stage;

use std::fmt;
use std::str::FromStr;

use crate::placement::{Placed, Plan};
use crate::transport::{Aborted, Blocks, Comm, Rows};
pub(crate) use direct::Offered;
pub(crate) use placed::{Placing, Volume};

/// How the communication of a superstep (an h-relation) is delivered.
///
/// Every router delivers byte-identical results in the same order; they
/// differ only in cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Router {
    /// The default: each superstep, every processor picks the same router
    /// from the BSP cost model, with what all know once the sync's rows are
    /// exchanged (h, estimated as the larger of the most bytes any
    /// processor sends and the bytes per processor) and the machine's l and
    /// g of each router ([`Machine`](crate::Machine), measured once per
    /// machine and cached). It keeps the two-phase router unless the direct
    /// one is predicted at least `DIRECT_MARGIN` (5%, in `bsp::expert`)
    /// cheaper. The choice and its predicted cost are in the statistics.
    #[default]
    Auto,
    /// The deterministic two-transpose router of Bader, Helman and JáJá:
    /// each message is dealt evenly over all p processors, which regroup what
    /// they received by final destination and forward it in a second uniform
    /// exchange. Every exchange is a transpose whose blocks are at most
    /// `s/p + (p−1)/2` bytes (stage 1, s = bytes the sender sends) and
    /// `h/p + (p−1)/2` words (stage 2, h = words the receiver receives):
    /// uniform exchanges whatever the pattern.
    TwoPhase,
    /// Single-phase delivery: each stream goes straight to its destination in
    /// one irregular all-to-all. The baseline.
    Direct,
    /// The transportation primitive of Ranka, Shankar and Alsabti: each
    /// message is split evenly over all p processors, the words left over
    /// dealt round robin by one counter per source that runs on across its
    /// destinations, then forwarded to their destinations in a second
    /// uniform exchange. Stage-1 blocks hold at most ⌈s/p⌉ words (s =
    /// words the sender sends), stage-2 blocks at most h/p + p − 1 (h =
    /// words the receiver receives). With the communication matrix known
    /// to every processor (p ≤ 64), blocks carry no headers: every
    /// processor computes the parts it receives. [`Router::Auto`] does not
    /// consider it: the machine probe does not measure it.
    Transportation,
}

impl Router {
    /// The name used on command lines and in statistics: `auto`,
    /// `two-phase`, `direct` or `transportation`.
    pub fn name(self) -> &'static str {
        match self {
            Router::Auto => "auto",
            Router::TwoPhase => "two-phase",
            Router::Direct => "direct",
            Router::Transportation => "transportation",
        }
    }
}

impl fmt::Display for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a [`Router`] name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseRouterError(String);

impl fmt::Display for ParseRouterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown router {:?} (expected `auto`, `two-phase`, `direct` or `transportation`)",
            self.0
        )
    }
}

impl std::error::Error for ParseRouterError {}

impl FromStr for Router {
    type Err = ParseRouterError;

    /// Parses `auto`, `two-phase` (also `twophase`, `two_phase`), `direct`
    /// or `transportation`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Router::Auto),
            "two-phase" | "twophase" | "two_phase" => Ok(Router::TwoPhase),
            "direct" => Ok(Router::Direct),
            "transportation" => Ok(Router::Transportation),
            _ => Err(ParseRouterError(s.to_owned())),
        }
    }
}

/// The unit the routers deal in, and in which the two-phase router's
/// bounds hold: a word of 8 bytes. A stream of m bytes is ⌈m/8⌉ words, its
/// last word possibly short.
pub(crate) const WORD_BYTES: usize = 8;

/// Words of a stream or part of `bytes` bytes.
pub(crate) fn words(bytes: usize) -> u64 {
    bytes.div_ceil(WORD_BYTES) as u64
}

/// What a router measured while routing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RouteFigures {
    /// Largest payload of a block this processor sent in the first
    /// exchange, in bytes and in words.
    pub(crate) first_block: u64,
    pub(crate) first_block_words: u64,
    /// Largest payload of a block this processor received in the second
    /// exchange (two-phase only), in bytes and in words.
    pub(crate) second_block: u64,
    pub(crate) second_block_words: u64,
    /// Bytes of router headers this processor sent.
    pub(crate) header_bytes: u64,
    /// Words this processor sent to other processors (two-phase: dealt
    /// over the intermediates; the s of the stage-1 bound).
    pub(crate) dealt_words: u64,
    /// Words that reached this processor from other processors (two-phase:
    /// through the intermediates; the h of the stage-2 bound).
    pub(crate) received_words: u64,
}

/// The communication matrix of a routing, known to every processor
/// before it starts: the bytes each processor sends to each, read from
/// the gathered sync rows (row q's `offset`-th word on is q's counts, then
/// its head counts, then the slot for its record heads, see
/// `protocol::row_width`). With it, every processor can compute the
/// length of every block it will receive, and a transport needs no
/// exchange of counts.
#[derive(Clone)]
pub(crate) struct Matrix {
    rows: Rows,
    width: usize,
    offset: usize,
    /// Where in each row its processor's landing key is (see
    /// [`repeats`](Matrix::repeats)).
    key: usize,
    /// Whether every row's slot holds its processor's record heads.
    heads_in_rows: bool,
    /// Whether the routing repeats the last placed one (see
    /// [`repeats`](Matrix::repeats)).
    repeats: bool,
}

impl Matrix {
    /// The matrix of gathered `rows` of `width` words, whose counts start
    /// at word `offset` and whose word `key` is the landing key of the
    /// row's processor.
    pub(crate) fn new(rows: Rows, width: usize, offset: usize, key: usize) -> Matrix {
        let mut m = Matrix {
            rows,
            width,
            offset,
            key,
            heads_in_rows: false,
            repeats: false,
        };
        let room = m.slot_words() as u64 * 8;
        m.heads_in_rows = room > 0 && (0..m.procs()).all(|i| m.all_head_bytes(i) <= room);
        m
    }

    /// Bytes processor `from` sends to processor `to`.
    pub(crate) fn bytes(&self, from: usize, to: usize) -> usize {
        self.rows[from * self.width + self.offset + to] as usize
    }

    /// Bytes of the record heads in what `from` sends to `to` (see
    /// `placement.rs`).
    pub(crate) fn head_bytes(&self, from: usize, to: usize) -> u64 {
        self.rows[from * self.width + self.offset + self.procs() + to]
    }

    /// Bytes of the record heads `from` sends to all processors.
    pub(crate) fn all_head_bytes(&self, from: usize) -> u64 {
        (0..self.procs()).map(|to| self.head_bytes(from, to)).sum()
    }

    /// The most bytes of record heads one processor sends.
    pub(crate) fn most_head_bytes(&self) -> u64 {
        (0..self.procs())
            .map(|from| self.all_head_bytes(from))
            .max()
            .unwrap_or(0)
    }

    /// Whether every processor's row carries its record heads, so that
    /// the receivers of a placed exchange have them without an exchange
    /// (a processor puts them in its row's slot whenever they fit).
    pub(crate) fn heads_in_rows(&self) -> bool {
        self.heads_in_rows
    }

    /// Notes whether this routing repeats `last`, the previous placed
    /// routing of the direct router on this machine, whose rows carried
    /// its heads too: where every processor sends every processor the
    /// same record heads and bodies' lengths as then, and every landing
    /// key (its coarrays' layout and what it lends) is the same, every
    /// receiver's plan gives the same places as then, so a transport may
    /// write the bodies where it learned to in that routing. Every
    /// processor notes the same from the same rows.
    pub(crate) fn note_repeat(&mut self, last: &Matrix) {
        // Word by word: a slice comparison calls `memcmp`, a dear call on
        // Zen 5 (see `Registry::note_lending`).
        let same_row = |i: usize| {
            let (now, then) = (i * self.width, i * last.width);
            self.rows[now + self.key] == last.rows[then + last.key]
                && self.rows[now + self.offset..now + self.width]
                    .iter()
                    .eq(&last.rows[then + last.offset..then + last.width])
        };
        self.repeats = self.heads_in_rows
            && last.heads_in_rows
            && (self.width, self.offset, self.procs()) == (last.width, last.offset, last.procs())
            && (0..self.procs()).all(same_row);
    }

    /// Whether this routing repeats the last placed one, as
    /// [`note_repeat`](Matrix::note_repeat) found.
    pub(crate) fn repeats(&self) -> bool {
        self.repeats
    }

    /// The record heads `from` sends to `to`, as its row carries them;
    /// only where [`heads_in_rows`](Matrix::heads_in_rows).
    pub(crate) fn heads(&self, from: usize, to: usize) -> &[u8] {
        debug_assert!(self.heads_in_rows, "bsp: the rows carry no heads");
        let start = from * self.width + self.offset + 2 * self.procs();
        let slot: &[u8] = bytemuck::cast_slice(&self.rows[start..start + self.slot_words()]);
        let at: u64 = (0..to).map(|k| self.head_bytes(from, k)).sum();
        &slot[at as usize..(at + self.head_bytes(from, to)) as usize]
    }

    /// The number of processors.
    pub(crate) fn procs(&self) -> usize {
        self.rows.len() / self.width
    }

    /// Words of each row's slot for record heads.
    fn slot_words(&self) -> usize {
        self.width - self.offset - 2 * self.procs()
    }
}

/// Delivers this processor's streams, listed by destination and cut into
/// heads and bodies (`placement::split`), with the
/// receivers writing the payloads of puts straight into their coarrays
/// where `plan` says (`placed.rs`; see `placement.rs`).
/// Returns what arrived from each sender and the figures. `matrix`, when
/// known, is the routing's communication matrix.
pub(crate) fn route_placed(
    router: Router,
    comm: &mut dyn Comm,
    cut: (Blocks, Blocks),
    plan: Plan<'_>,
    matrix: Option<&Matrix>,
) -> Result<(Vec<Placed>, RouteFigures), Aborted> {
    match router {
        Router::Direct => direct::route_placed(comm, cut, plan, matrix),
        Router::TwoPhase => two_phase::route_placed(comm, cut, plan, matrix),
        _ => unreachable!("bsp: only the direct and two-phase routers place payloads"),
    }
}

/// Delivers this processor's streams, listed by destination, and returns
/// the non-empty streams received, listed by source. `matrix`, when known,
/// is the routing's communication matrix.
pub(crate) fn route(
    router: Router,
    comm: &mut dyn Comm,
    streams: Blocks,
    matrix: Option<&Matrix>,
) -> Result<(Blocks, RouteFigures), Aborted> {
    match router {
        Router::TwoPhase => two_phase::route(comm, streams, matrix),
        Router::Direct => direct::route(comm, streams, matrix),
        Router::Transportation => transportation::route(comm, streams, matrix),
        Router::Auto => unreachable!("bsp: the automatic router is resolved before routing"),
    }
}
