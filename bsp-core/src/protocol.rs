//! The sync protocol: the row every processor contributes to the all-gather
//! that opens each `sync` (and ends the run), and the check over all rows
//! that either decides what the sync must do or names what went wrong.
//!
//! A row carries the protocol checks (status, superstep, registrations),
//! whether anything needs routing, and the previous sync's local figures,
//! so that every processor learns everyone's statistics without another
//! exchange.

use crate::error::{Error, ErrorKind};
use crate::router::{Matrix, RouteFigures};
use crate::transport::Rows;

/// What a processor is doing when it contributes its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Called `sync`.
    Syncing = 1,
    /// Returned from its closure.
    Returned = 2,
    /// Called `split` (its row is a [`split_words`] row).
    Splitting = 4,
}

/// The status word of a row that announces a failure instead of a sync
/// (see [`failure_words`]).
const FAILED: u64 = 3;

/// Words of a failure announcement: status, kind, culprit + 1, superstep + 1.
pub(crate) const FAILURE_WORDS: usize = 4;

/// The words that announce `error` (or, for `None`, that nothing failed)
/// in an agreement on failures: status [`FAILED`] (or 0), the error's
/// kind, its processor and superstep (each plus one; 0 for none). Padded
/// with zeros to a sync row, it takes the place of this processor's row.
pub(crate) fn failure_words(error: Option<&Error>) -> [u64; FAILURE_WORDS] {
    let plus_one = |x: Option<usize>| x.map_or(0, |v| v as u64 + 1);
    match error {
        None => [0; FAILURE_WORDS],
        Some(e) => [
            FAILED,
            e.kind().code(),
            plus_one(e.pid()),
            plus_one(e.superstep()),
        ],
    }
}

/// Where every processor contributed `stride` words starting with
/// [`failure_words`]: the failure announced by the lowest pid, if any, with
/// the message that processor gives through `texts` (a collective that
/// every processor calls exactly when some failure was announced).
pub(crate) fn agreed_failure(
    words: &[u64],
    stride: usize,
    texts: impl FnOnce() -> Vec<String>,
) -> Option<Error> {
    let announcer = words.chunks(stride).position(|w| w[0] == FAILED)?;
    let w = &words[announcer * stride..];
    let minus_one = |x: u64| x.checked_sub(1).map(|v| v as usize);
    let texts = texts();
    let message = texts.get(announcer).cloned().unwrap_or_default();
    Some(Error::new(
        ErrorKind::from_code(w[1]),
        minus_one(w[2]),
        minus_one(w[3]),
        message,
    ))
}

/// Whose texts a collective text exchange gathers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Texts {
    /// Every processor's registrations and releases.
    Registrations,
    /// The message of an announced failure.
    Failure,
}

/// What one processor sent and received in one sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub(crate) sent: u64,
    pub(crate) received: u64,
}

/// One processor's own figures for one sync, exchanged in the next row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SyncFigures {
    /// Bytes of the routed streams (get replies included).
    pub(crate) bytes: Traffic,
    /// Records (puts, get requests, replies, runs of messages).
    pub(crate) records: Traffic,
    /// What the router measured in each routing of the sync: the
    /// requests, then (when some processor asked for a get) the replies.
    pub(crate) routes: [RouteFigures; 2],
    /// How many of `routes` are filled.
    pub(crate) routed: usize,
    /// Nanoseconds the sync took.
    pub(crate) sync_ns: u64,
}

impl SyncFigures {
    /// Adds the figures of the sync's next routing.
    pub(crate) fn add_route(&mut self, route: RouteFigures) {
        self.routes[self.routed] = route;
        self.routed += 1;
    }
}

/// One processor's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncRow {
    /// Where the processor is: its status and the superstep it is ending.
    pub(crate) status: Status,
    pub(crate) superstep: u64,
    /// Its registrations: how many, and the fingerprint of their sequence.
    pub(crate) registrations: u64,
    pub(crate) fingerprint: u64,
    /// What it requested this superstep: bytes to send, whether any get
    /// (a second h-relation carries the replies) and whether any
    /// `put_from` (lent coarrays come back after a barrier).
    pub(crate) bytes: u64,
    pub(crate) has_gets: bool,
    pub(crate) lends: bool,
    /// How many records (puts, get requests, runs of messages) it
    /// requested: with `bytes`, the size of a record on average, which
    /// decides whether a transport receives payloads in place.
    pub(crate) records: u64,
    /// Nanoseconds of local work in the superstep, and its figures for
    /// the previous sync.
    pub(crate) work_ns: u64,
    pub(crate) previous: SyncFigures,
    /// Its vote ([`Ctx::sync_sum`](crate::Ctx::sync_sum),
    /// [`Ctx::sync_any`](crate::Ctx::sync_any); 0 for a plain sync).
    pub(crate) vote: u64,
    /// Its landing key: what the places its puts land in depend on
    /// besides their records, unchanged while its coarrays stay where
    /// they are and it lends the same ones (see `Matrix::repeats`).
    pub(crate) landings: u64,
}

impl SyncRow {
    /// Words of a row on the wire.
    pub(crate) const WORDS: usize = 9 + 4 + 2 * ROUTE_WORDS + 3;

    /// Where [`to_words`](SyncRow::to_words) puts the fields that
    /// [`decide`] reads in every sync (it reads them in place).
    const STATUS: usize = 0;
    const SUPERSTEP: usize = 1;
    const REGISTRATIONS: usize = 2;
    const FINGERPRINT: usize = 3;
    const HAS_GETS: usize = 4;
    const BYTES: usize = 5;
    const LENDS: usize = 7;
    const RECORDS: usize = 8;
    const VOTE: usize = 14 + 2 * ROUTE_WORDS;
    /// Where the landing key is: the last word, just before the counts
    /// that [`Matrix`] reads.
    pub(crate) const LANDINGS: usize = 15 + 2 * ROUTE_WORDS;

    pub(crate) fn to_words(self) -> [u64; Self::WORDS] {
        let f = &self.previous;
        let [r0, r1] = f.routes.map(route_words);
        [
            self.status as u64,
            self.superstep,
            self.registrations,
            self.fingerprint,
            u64::from(self.has_gets),
            self.bytes,
            self.work_ns,
            u64::from(self.lends),
            self.records,
            f.bytes.sent,
            f.bytes.received,
            f.records.sent,
            f.records.received,
            r0[0],
            r0[1],
            r0[2],
            r0[3],
            r0[4],
            r0[5],
            r0[6],
            r1[0],
            r1[1],
            r1[2],
            r1[3],
            r1[4],
            r1[5],
            r1[6],
            f.sync_ns,
            self.vote,
            self.landings,
        ]
    }

    /// Reads a row back.
    ///
    /// # Panics
    ///
    /// If `w` is not a row written by [`to_words`](SyncRow::to_words).
    pub(crate) fn from_words(w: &[u64]) -> SyncRow {
        assert_eq!(
            w.len(),
            Self::WORDS,
            "bsp: a sync row has {} words",
            Self::WORDS
        );
        let status = match w[0] {
            1 => Status::Syncing,
            2 => Status::Returned,
            4 => Status::Splitting,
            other => panic!("bsp: corrupt sync row (status {other})"),
        };
        SyncRow {
            status,
            superstep: w[1],
            registrations: w[2],
            fingerprint: w[3],
            has_gets: w[4] != 0,
            bytes: w[5],
            work_ns: w[6],
            lends: w[7] != 0,
            records: w[8],
            previous: SyncFigures {
                bytes: Traffic {
                    sent: w[9],
                    received: w[10],
                },
                records: Traffic {
                    sent: w[11],
                    received: w[12],
                },
                routes: [
                    route(&w[13..13 + ROUTE_WORDS]),
                    route(&w[13 + ROUTE_WORDS..13 + 2 * ROUTE_WORDS]),
                ],
                // Only the routes' figures travel; an unfilled one is zeros.
                routed: 0,
                sync_ns: w[13 + 2 * ROUTE_WORDS],
            },
            vote: w[Self::VOTE],
            landings: w[Self::LANDINGS],
        }
    }

    /// The rows of all processors from an all-gather's result, each
    /// `width` words (see [`row_width`]).
    pub(crate) fn all(words: &[u64], width: usize) -> Vec<SyncRow> {
        words
            .chunks_exact(width)
            .map(|w| SyncRow::from_words(&w[..Self::WORDS]))
            .collect()
    }
}

/// Up to this many processors, a row also carries the bytes its processor
/// sends to each processor (p words), then the bytes of those streams'
/// record heads (p words more): then every processor knows the whole
/// communication matrix of the superstep before it is routed, so the cost
/// model has the exact h, and neither the direct router nor the heads of
/// a placed direct exchange need an exchange of counts.
pub(crate) const COUNTS_IN_ROW: usize = 64;

/// The most words of record heads one row carries (see [`row_width`]).
const HEADS_SLOT_MAX: usize = 256;

/// The most words of record heads the rows of one all-gather carry
/// together: p rows of their slot.
const HEADS_SLOTS_MAX: usize = 4096;

/// Words of each processor's contribution to the all-gather opening a
/// sync among `p` processors: the row, then, when p ≤ [`COUNTS_IN_ROW`],
/// its counts, its head counts and a slot of `slot` words (0 beyond) for
/// its record heads (see [`heads_slot`]).
pub(crate) fn row_width(p: usize, slot: usize) -> usize {
    SyncRow::WORDS + if p <= COUNTS_IN_ROW { 2 * p + slot } else { 0 }
}

/// The slot for record heads in the rows of a sync that follows one
/// whose payloads a transport placed (see `placement.rs`), where
/// `most` is the most bytes of heads one processor sent in it: room for
/// as many, so that a program repeating such supersteps sends their
/// heads inside the rows and the exchange of heads, one collective, is
/// spared. 0 (no slot) where they would make the rows too long.
pub(crate) fn heads_slot(p: usize, most: u64) -> usize {
    let words = most.div_ceil(8) as usize;
    if p <= COUNTS_IN_ROW && words <= HEADS_SLOT_MAX && words * p <= HEADS_SLOTS_MAX {
        words
    } else {
        0
    }
}

/// Writes into `words` (cleared first; its allocation is kept) this
/// processor's contribution to the all-gather opening a sync among
/// `p` processors, [`row_width`]`(p, slot)` words: `row`, then, up to
/// [`COUNTS_IN_ROW`] processors, the bytes it sends each processor
/// (`bytes_to`), the bytes of those streams' record heads
/// (`head_bytes_to`) and the slot, empty until [`put_heads`] fills it,
/// all of which [`Matrix`](crate::router::Matrix) reads back.
pub(crate) fn row_words(
    words: &mut Vec<u64>,
    row: &SyncRow,
    p: usize,
    slot: usize,
    bytes_to: impl Fn(usize) -> u64,
    head_bytes_to: impl Fn(usize) -> u64,
) {
    let width = row_width(p, slot);
    words.clear();
    words.extend_from_slice(&row.to_words());
    if width > SyncRow::WORDS {
        words.extend((0..p).map(bytes_to));
        words.extend((0..p).map(head_bytes_to));
        words.resize(width, 0);
    }
    debug_assert_eq!(words.len(), width);
}

/// Writes `heads`, this processor's record heads for every processor in
/// pid order (as its row counts them), into the slot of its row `words`
/// among `p` processors.
///
/// # Panics
///
/// If they do not fit in the slot.
pub(crate) fn put_heads<'a>(words: &mut [u64], p: usize, heads: impl Iterator<Item = &'a [u8]>) {
    let room: &mut [u8] = bytemuck::cast_slice_mut(&mut words[SyncRow::WORDS + 2 * p..]);
    let mut at = 0;
    for head in heads {
        room[at..at + head.len()].copy_from_slice(head);
        at += head.len();
    }
}

/// The communication matrix of the sync's requests, from gathered rows of
/// `width` words that carry counts; `None` if they do not.
pub(crate) fn matrix(words: &Rows, width: usize) -> Option<Matrix> {
    (width > SyncRow::WORDS)
        .then(|| Matrix::new(words.clone(), width, SyncRow::WORDS, SyncRow::LANDINGS))
}

/// Words of one route's figures in a row.
const ROUTE_WORDS: usize = 7;

fn route_words(r: RouteFigures) -> [u64; ROUTE_WORDS] {
    [
        r.first_block,
        r.first_block_words,
        r.second_block,
        r.second_block_words,
        r.header_bytes,
        r.dealt_words,
        r.received_words,
    ]
}

fn route(w: &[u64]) -> RouteFigures {
    RouteFigures {
        first_block: w[0],
        first_block_words: w[1],
        second_block: w[2],
        second_block_words: w[3],
        header_bytes: w[4],
        dealt_words: w[5],
        received_words: w[6],
    }
}

/// What every processor learns from the rows opening a sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncDecision {
    /// Some processor requested communication.
    pub(crate) anything: bool,
    /// Some processor requested a get.
    pub(crate) any_gets: bool,
    /// Some processor used `put_from`.
    pub(crate) any_lends: bool,
    /// The most bytes one processor requested to send, and all of them:
    /// what every processor knows of the superstep's h before routing.
    pub(crate) max_bytes: u64,
    pub(crate) total_bytes: u64,
    /// The records all processors requested.
    pub(crate) total_records: u64,
    /// When the rows carry counts: the h of the superstep's requests, the
    /// most bytes one processor sends to or receives from the others.
    pub(crate) exact_h: Option<u64>,
    /// The sum of the processors' votes.
    pub(crate) votes: u64,
}

impl SyncDecision {
    /// h as all processors know it before routing: exact when the rows
    /// carry counts; otherwise the larger of the most bytes any processor
    /// sends and the bytes per processor (a lower bound of the true h,
    /// which also counts what each receives).
    pub(crate) fn h_estimate(&self, p: usize) -> u64 {
        self.exact_h.unwrap_or_else(|| {
            self.max_bytes
                .max(self.total_bytes.div_ceil(p.max(1) as u64))
        })
    }
}

fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Checks that every processor is at the same point of the protocol and
/// decides what the sync must do, from the gathered rows of `width` words
/// each (see [`row_width`]). `texts` gathers every processor's text of the
/// kind asked, by pid: registrations and releases for the message of a
/// registration mismatch, or the message of a failure that a processor
/// announced in place of its row. It is called (collectively, on every
/// processor, since all see the same rows) only then.
///
/// # Errors
///
/// [`ErrorKind::SyncMismatch`] when some processor returned from its
/// closure while another called `sync`; [`ErrorKind::RegistrationMismatch`]
/// when processors registered different sequences. The error names the
/// processor at fault and its superstep.
pub(crate) fn decide(
    words: &[u64],
    width: usize,
    mut texts: impl FnMut(Texts) -> Vec<String>,
) -> Result<SyncDecision, Error> {
    if let Some(error) = agreed_failure(words, width, || texts(Texts::Failure)) {
        return Err(error);
    }
    if let Some(error) = split_mismatch(words, width) {
        return Err(error);
    }
    let row = |q: usize| SyncRow::from_words(&words[q * width..q * width + SyncRow::WORDS]);
    // A field of processor q's row, read in place (this runs in every
    // sync; a whole row is parsed only to word an error).
    let field = |q: usize, at: usize| words[q * width + at];
    let p = words.len() / width;
    let mut decision = SyncDecision {
        anything: false,
        any_gets: false,
        any_lends: false,
        max_bytes: 0,
        total_bytes: 0,
        total_records: 0,
        exact_h: None,
        votes: 0,
    };
    // The first processor whose vote makes the sum overflow, if any.
    let mut overflow = None;
    // With counts: what each processor receives from the others (p ≤ 64).
    let mut received = [0u64; COUNTS_IN_ROW];
    let mut exact_h = 0;
    let (mut returned, mut syncing, mut mismatch) = (None, None, None);
    // One pass: this runs in every sync, over p rows.
    for q in 0..p {
        if width > SyncRow::WORDS {
            let at = q * width + SyncRow::WORDS;
            let counts = &words[at..at + p];
            let mut sent = 0;
            for (j, &c) in counts.iter().enumerate().filter(|&(j, _)| j != q) {
                sent += c;
                received[j] += c;
            }
            exact_h = exact_h.max(sent);
        }
        let superstep = field(q, SyncRow::SUPERSTEP);
        match field(q, SyncRow::STATUS) {
            2 => returned = returned.or(Some((q, superstep))),
            1 => syncing = syncing.or(Some((q, superstep))),
            4 => {}
            other => panic!("bsp: corrupt sync row (status {other})"),
        }
        let same = |at: usize| field(q, at) == field(0, at);
        if !same(SyncRow::REGISTRATIONS) || !same(SyncRow::FINGERPRINT) {
            mismatch = mismatch.or(Some(q));
        }
        let bytes = field(q, SyncRow::BYTES);
        decision.anything |= bytes != 0;
        decision.max_bytes = decision.max_bytes.max(bytes);
        decision.total_bytes += bytes;
        decision.total_records += field(q, SyncRow::RECORDS);
        decision.any_gets |= field(q, SyncRow::HAS_GETS) != 0;
        decision.any_lends |= field(q, SyncRow::LENDS) != 0;
        match decision.votes.checked_add(field(q, SyncRow::VOTE)) {
            Some(sum) => decision.votes = sum,
            None => overflow = overflow.or(Some(q)),
        }
    }
    if width > SyncRow::WORDS {
        let most_received = received[..p].iter().copied().max().unwrap_or(0);
        decision.exact_h = Some(exact_h.max(most_received));
    }
    if let (Some((r, rs)), Some((s, ss))) = (returned, syncing) {
        let msg = format!(
            "processor {r} returned from its closure after {rs} syncs, while processor {s} called sync \
             for the {} time (superstep {ss}); every processor must call sync equally often",
            ordinal(ss + 1)
        );
        return Err(Error::at(ErrorKind::SyncMismatch, r, rs as usize, msg));
    }
    if let Some(q) = overflow {
        let r = row(q);
        let msg = format!(
            "sync_sum: the processors' values add up to more than u64::MAX \
             (processor {q}'s value {} overflows the sum of those before it)",
            r.vote
        );
        return Err(Error::at(ErrorKind::Panic, q, r.superstep as usize, msg));
    }
    if let Some(q) = mismatch {
        let (r, first) = (row(q), row(0));
        let (cq, c0) = (r.registrations, first.registrations);
        let detail = if cq != c0 {
            format!("processor {q} has registered {cq} coarrays and queues, processor 0 has registered {c0}")
        } else {
            format!(
                "processors {q} and 0 have each registered {cq} coarrays and queues, \
                 but of different kinds or element types, or released different ones"
            )
        };
        let histories = texts(Texts::Registrations);
        let history = |x: usize| histories.get(x).map_or("", String::as_str);
        let msg = format!(
            "{detail}; registration is collective (same order, same superstep, same types). \
             Processor {q} registered and released: [{}]; processor 0: [{}]",
            history(q),
            history(0)
        );
        return Err(Error::at(
            ErrorKind::RegistrationMismatch,
            q,
            r.superstep as usize,
            msg,
        ));
    }
    Ok(decision)
}

/// Where a split's row keeps the processor's color and key.
const SPLIT_COLOR: usize = 4;
const SPLIT_KEY: usize = 5;

/// The row a processor contributes when it calls `split` with `color`
/// and `key` at `superstep`, padded to `width` words (a sync row's width,
/// so that a split and a sync meet in the same all-gather and the
/// mismatch is found, not waited on).
pub(crate) fn split_words(superstep: u64, color: u64, key: u64, width: usize) -> Vec<u64> {
    let mut words = vec![0u64; width];
    words[0] = Status::Splitting as u64;
    words[1] = superstep;
    words[SPLIT_COLOR] = color;
    words[SPLIT_KEY] = key;
    words
}

/// The error of rows where some processors called `split` and others
/// did not (they synced or returned); `None` when all did, or none.
/// It blames the first processor of the smaller party (the splitter on a
/// tie): the one most likely out of step.
fn split_mismatch(words: &[u64], width: usize) -> Option<Error> {
    let p = words.len() / width;
    let status = |q: usize| words[q * width];
    let splitting = Status::Splitting as u64;
    let splitters = (0..p).filter(|&q| status(q) == splitting).count();
    if splitters == 0 || splitters == p {
        return None;
    }
    let first_splitter = (0..p).find(|&q| status(q) == splitting)?;
    let first_other = (0..p).find(|&q| status(q) != splitting)?;
    let doing = |q: usize| match status(q) {
        2 => "returned from its closure",
        4 => "called split",
        _ => "called sync",
    };
    let culprit = if splitters <= p - splitters {
        first_splitter
    } else {
        first_other
    };
    let superstep = words[culprit * width + 1] as usize;
    let msg = format!(
        "processor {first_splitter} called split (forming sub-machines) while processor \
         {first_other} {} at superstep {}; every processor of a machine must call split at the \
         same point, and no processor may sync its machine while others work in sub-machines \
         ({splitters} of {p} processors called split)",
        doing(first_other),
        words[first_other * width + 1]
    );
    Some(Error::at(ErrorKind::SyncMismatch, culprit, superstep, msg))
}

/// Checks the rows gathered by a `split` (each `width` words) and returns
/// every processor's (color, key), by pid.
///
/// # Errors
///
/// A failure announced in place of a row, or [`ErrorKind::SyncMismatch`]
/// when some processor synced or returned instead of splitting.
pub(crate) fn decide_split(
    words: &[u64],
    width: usize,
    texts: impl FnOnce() -> Vec<String>,
) -> Result<Vec<(u64, u64)>, Error> {
    if let Some(error) = agreed_failure(words, width, texts) {
        return Err(error);
    }
    if let Some(error) = split_mismatch(words, width) {
        return Err(error);
    }
    Ok(words
        .chunks_exact(width)
        .map(|w| (w[SPLIT_COLOR], w[SPLIT_KEY]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: Status, superstep: u64) -> SyncRow {
        SyncRow {
            status,
            superstep,
            registrations: 2,
            fingerprint: 99,
            has_gets: false,
            bytes: 0,
            work_ns: 5,
            lends: false,
            records: 0,
            previous: SyncFigures {
                bytes: Traffic {
                    sent: 1,
                    received: 0,
                },
                sync_ns: 8,
                ..SyncFigures::default()
            },
            vote: 0,
            landings: 0,
        }
    }

    fn words(rows: &[SyncRow]) -> Vec<u64> {
        rows.iter().flat_map(|r| r.to_words()).collect()
    }

    #[test]
    fn rows_round_trip_through_words() {
        let mut r = row(Status::Returned, 7);
        r.has_gets = true;
        r.records = 17;
        r.previous.routes[1].header_bytes = 123;
        r.vote = 5;
        let words = r.to_words();
        assert_eq!(SyncRow::from_words(&words), r);
        // The fields `decide` reads in place.
        let at = [
            (SyncRow::STATUS, Status::Returned as u64),
            (SyncRow::SUPERSTEP, 7),
            (SyncRow::REGISTRATIONS, 2),
            (SyncRow::FINGERPRINT, 99),
            (SyncRow::HAS_GETS, 1),
            (SyncRow::RECORDS, 17),
            (SyncRow::VOTE, 5),
        ];
        for (index, value) in at {
            assert_eq!(words[index], value, "word {index}");
        }
        let mut lending = row(Status::Syncing, 1);
        (lending.lends, lending.bytes) = (true, 3);
        let w = lending.to_words();
        assert_eq!((w[SyncRow::LENDS], w[SyncRow::BYTES]), (1, 3));
        let all: Vec<u64> = [words, row(Status::Syncing, 1).to_words()].concat();
        assert_eq!(SyncRow::all(&all, SyncRow::WORDS).len(), 2);
    }

    #[test]
    fn agreeing_rows_give_a_decision() {
        let mut rows = vec![row(Status::Syncing, 3); 3];
        assert_eq!(
            decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap(),
            SyncDecision {
                anything: false,
                any_gets: false,
                any_lends: false,
                max_bytes: 0,
                total_bytes: 0,
                total_records: 0,
                exact_h: None,
                votes: 0,
            }
        );
        rows[0].vote = 4;
        rows[2].vote = 1;
        let votes = decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap();
        assert_eq!(votes.votes, 5);
        rows[1].vote = u64::MAX;
        let err = decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap_err();
        assert_eq!((err.kind(), err.pid()), (ErrorKind::Panic, Some(1)));
        rows[1].vote = 0;
        rows[1].bytes = 10;
        rows[1].records = 3;
        rows[2].bytes = 2;
        rows[2].records = 1;
        rows[2].lends = true;
        let d = decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap();
        assert!(d.anything && d.any_lends && !d.any_gets);
        assert_eq!((d.max_bytes, d.total_bytes, d.h_estimate(3)), (10, 12, 10));
        assert_eq!(d.total_records, 4);
        rows[0].bytes = 9;
        rows[1].bytes = 9;
        let d = decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap();
        assert_eq!(d.h_estimate(2), 10);
    }

    #[test]
    fn counts_in_the_rows_give_the_exact_h() {
        let rows = [
            row(Status::Syncing, 1),
            row(Status::Syncing, 1),
            row(Status::Syncing, 1),
        ];
        // Processor q sends counts[q][j] bytes to j, heads[q][j] of them
        // record heads; all to processor 2.
        let counts = [[5, 0, 7], [0, 0, 9], [0, 0, 100]];
        let heads = [[12, 0, 24], [0, 0, 24], [0, 0, 36]];
        let width = row_width(3, 0);
        let words: Rows = rows
            .iter()
            .zip(counts.iter().zip(heads))
            .flat_map(|(r, (c, h))| r.to_words().into_iter().chain(*c).chain(h))
            .collect();
        assert_eq!(width, SyncRow::WORDS + 6);
        let d = decide(&words, width, |_| Vec::new()).unwrap();
        // Processor 2 receives 7 + 9 from the others; its 100 to itself stay.
        assert_eq!(d.h_estimate(3), 16);
        let m = matrix(&words, width).unwrap();
        assert_eq!(
            (m.procs(), m.bytes(0, 2), m.bytes(2, 2), m.bytes(1, 0)),
            (3, 7, 100, 0)
        );
        assert_eq!(
            (m.head_bytes(0, 0), m.head_bytes(1, 2), m.head_bytes(2, 2)),
            (12, 24, 36)
        );
        assert_eq!(SyncRow::all(&words, width).len(), 3);
        assert!(matrix(&words, SyncRow::WORDS).is_none());
    }

    #[test]
    fn heads_in_the_slots_reach_their_receivers_when_all_fit() {
        // Processor q sends processor j heads[q][j] (bytes), in a slot of
        // 2 words (16 bytes) per row.
        let heads: [[&[u8]; 3]; 3] = [
            [b"ab", b"", b"cdefg"],
            [b"", b"", b"0123456789abcdef"],
            [b"x", b"yz", b""],
        ];
        let rows_with = |heads: &[[&[u8]; 3]; 3]| -> Rows {
            heads
                .iter()
                .flat_map(|h| {
                    let mut w = Vec::new();
                    row_words(
                        &mut w,
                        &row(Status::Syncing, 1),
                        3,
                        2,
                        |k| 100 + h[k].len() as u64,
                        |k| h[k].len() as u64,
                    );
                    if h.iter().map(|x| x.len()).sum::<usize>() <= 16 {
                        put_heads(&mut w, 3, h.iter().copied());
                    }
                    w
                })
                .collect()
        };
        let width = row_width(3, 2);
        assert_eq!(width, SyncRow::WORDS + 6 + 2);
        let m = matrix(&rows_with(&heads), width).unwrap();
        assert!(m.heads_in_rows());
        assert_eq!(m.most_head_bytes(), 16);
        for (q, h) in heads.iter().enumerate() {
            for (j, &expected) in h.iter().enumerate() {
                assert_eq!(m.heads(q, j), expected, "heads from {q} to {j}");
                assert_eq!(m.bytes(q, j), 100 + expected.len());
            }
        }
        // The exact h counts the bytes (heads included), not the slot.
        let d = decide(&rows_with(&heads), width, |_| Vec::new()).unwrap();
        assert_eq!(d.exact_h, Some(200 + 5 + 16));
        // One processor's heads overflow the slot: none travel in the rows.
        let mut over = heads;
        over[2][0] = b"too long for the slot";
        assert!(!matrix(&rows_with(&over), width).unwrap().heads_in_rows());
        // No slot, no heads in the rows.
        let none: Rows = (0..3)
            .flat_map(|_| {
                let mut w = Vec::new();
                row_words(&mut w, &row(Status::Syncing, 1), 3, 0, |_| 0, |_| 0);
                w
            })
            .collect();
        assert!(!matrix(&none, row_width(3, 0)).unwrap().heads_in_rows());
    }

    #[test]
    fn the_heads_slot_fits_the_most_heads_within_its_limits() {
        assert_eq!(heads_slot(2, 0), 0);
        assert_eq!(heads_slot(2, 17), 3);
        assert_eq!(heads_slot(2, 8 * HEADS_SLOT_MAX as u64), HEADS_SLOT_MAX);
        assert_eq!(heads_slot(2, 8 * HEADS_SLOT_MAX as u64 + 1), 0);
        // p rows of the slot stay within HEADS_SLOTS_MAX words.
        assert_eq!(heads_slot(64, 8 * 64), 64);
        assert_eq!(heads_slot(64, 8 * 65), 0);
        // Beyond COUNTS_IN_ROW processors rows carry no counts, so no heads.
        assert_eq!(heads_slot(COUNTS_IN_ROW + 1, 8), 0);
    }

    #[test]
    fn a_split_meeting_a_sync_is_a_mismatch_blaming_the_minority() {
        let width = SyncRow::WORDS;
        let mut w = words(&[row(Status::Syncing, 3); 3]);
        w[width..2 * width].copy_from_slice(&split_words(3, 1, 0, width));
        let e = decide(&w, width, |_| Vec::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::SyncMismatch);
        assert_eq!((e.pid(), e.superstep()), (Some(1), Some(3)));
        assert!(e.message().contains("processor 1 called split"), "{e}");
        // Two of three split: the one that synced is blamed.
        w[2 * width..].copy_from_slice(&split_words(3, 0, 0, width));
        let e = decide_split(&w, width, Vec::new).unwrap_err();
        assert_eq!(e.pid(), Some(0));
        let all: Vec<u64> = (0..3)
            .flat_map(|q| split_words(3, q % 2, 9 - q, width))
            .collect();
        assert_eq!(
            decide_split(&all, width, Vec::new).unwrap(),
            vec![(0, 9), (1, 8), (0, 7)]
        );
    }

    #[test]
    fn a_processor_that_returned_early_is_named() {
        let rows = [row(Status::Syncing, 4), row(Status::Returned, 4)];
        let e = decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::SyncMismatch);
        assert_eq!((e.pid(), e.superstep()), (Some(1), Some(4)));
        assert!(e.message().contains("5th time"), "{e}");
    }

    #[test]
    fn an_announced_failure_is_agreed_from_the_lowest_announcer() {
        let error = Error::at(ErrorKind::Abort, 2, 5, "first");
        let mut w = words(&[row(Status::Syncing, 5); 4]);
        let mut announce = |q: usize, e: &Error| {
            let f = failure_words(Some(e));
            w[q * SyncRow::WORDS..q * SyncRow::WORDS + SyncRow::WORDS].fill(0);
            w[q * SyncRow::WORDS..q * SyncRow::WORDS + FAILURE_WORDS].copy_from_slice(&f);
        };
        announce(3, &Error::at(ErrorKind::Panic, 3, 5, "second"));
        announce(2, &error);
        let texts = |t: Texts| {
            assert_eq!(t, Texts::Failure);
            vec![
                String::new(),
                String::new(),
                "first".into(),
                "second".into(),
            ]
        };
        assert_eq!(decide(&w, SyncRow::WORDS, texts).unwrap_err(), error);
        let none = [0u64; 2 * FAILURE_WORDS];
        assert!(agreed_failure(&none, FAILURE_WORDS, || unreachable!()).is_none());
    }

    #[test]
    fn registration_mismatches_are_named() {
        let mut rows = [row(Status::Syncing, 2), row(Status::Syncing, 2)];
        rows[1].registrations = 3;
        let histories = || vec!["coarray<u8>".to_owned(), "coarray<u16>".to_owned()];
        let e = decide(&words(&rows), SyncRow::WORDS, |_| histories()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RegistrationMismatch);
        assert_eq!(e.pid(), Some(1));
        let says =
            "Processor 1 registered and released: [coarray<u16>]; processor 0: [coarray<u8>]";
        assert!(e.message().contains(says), "{e}");
        rows[1].registrations = 2;
        rows[1].fingerprint = 1;
        let e = decide(&words(&rows), SyncRow::WORDS, |_| Vec::new()).unwrap_err();
        assert!(e.message().contains("different kinds"), "{e}");
    }
}
