//! The registry: one processor's registered coarrays and queues, in
//! registration order, with the fingerprint that lets the sync check that
//! every processor registered the same sequence.

use std::borrow::Cow;
use std::sync::Arc;

use bytemuck::Pod;
use bytes::Bytes;

use crate::area::ForeignBytes;
use crate::coarray::{slice_of, slice_of_mut, LentStorage, Part, PodVec, Storage};
use crate::error::ErrorKind;
use crate::queue::Inbox;

/// One registered distributed variable.
enum Entry {
    Array(Box<dyn Storage>),
    /// A coarray whose local part is lent to the router during a sync, as
    /// the source of [`Ctx::put_from`](crate::Ctx::put_from) requests.
    Lent(Arc<Box<dyn Storage>>),
    Queue(Inbox),
    /// A coarray whose local part is taken out for the writes of a
    /// `DirectPut::put_direct`: not accessible locally
    /// until it is put back.
    Open,
    /// A coarray or queue that was released in the given superstep; its id
    /// is not reused.
    Released(usize),
}

/// Why an id cannot be used as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// The coarray or queue was released in the given superstep.
    Released(usize),
    /// The id names something else (a queue for a coarray, another element
    /// type, or nothing): the handle comes from another run.
    Foreign,
    /// The coarray is lent to the router for this sync.
    Lent,
    /// The coarray is being written by a direct put.
    Open,
}

impl Unusable {
    /// The error kind and message for a handle `what` (`coarray` or
    /// `queue`) that the user passed in.
    pub(crate) fn misuse(self, what: &str, id: u32) -> (ErrorKind, String) {
        match self {
            Unusable::Released(when) => (
                ErrorKind::Released,
                format!(
                    "{what} #{id} was released in superstep {when} and cannot be used any more"
                ),
            ),
            Unusable::Foreign => (
                ErrorKind::RegistrationMismatch,
                format!("{what} handle #{id} comes from another run"),
            ),
            Unusable::Lent => unreachable!("bsp: coarrays are lent only inside sync"),
            Unusable::Open => (
                ErrorKind::OutOfBounds,
                format!(
                    "{what} #{id} is being written by a put_direct and cannot be read or \
                     written locally until it returns"
                ),
            ),
        }
    }
}

/// Which id could not be used, and why.
pub(crate) type UnusableId = (Unusable, u32);

/// FNV-1a, to fingerprint registration sequences.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One step of the registration sequence.
#[derive(Clone, Copy)]
enum Step {
    Registered(u32),
    Released(u32),
}

/// The coarrays lent for one sync ([`Registry::lend`]): each one's local
/// part as bytes, shared. A sync lends the few coarrays its `put_from`s
/// read, each named once, so they are found by a look along the list (no
/// map to build and hash into every sync).
pub(crate) struct Lent(Vec<(u32, Bytes)>);

impl Lent {
    /// The local part of lent coarray `id`.
    ///
    /// # Panics
    ///
    /// If `id` was not lent: a bug in the runtime (a lent piece names a
    /// coarray the sync lent).
    pub(crate) fn of(&self, id: u32) -> &Bytes {
        let found = self.0.iter().find(|(lent, _)| *lent == id);
        &found.expect("bsp: a lent piece's coarray is lent").1
    }
}

/// A processor's registrations.
pub(crate) struct Registry {
    entries: Vec<Entry>,
    /// What each id was registered as (`coarray<u32>`, `queue<u8>`, ...).
    names: Vec<String>,
    /// Registrations and releases in order, for error messages.
    steps: Vec<Step>,
    fingerprint: u64,
    /// How many times an entry was added, released or given other
    /// memory, or the coarrays lent changed (see [`layout`](Registry::layout)).
    layout: u64,
    /// The coarrays lent in the last sync (see
    /// [`note_lending`](Registry::note_lending)).
    lent_last: Vec<u32>,
    /// Queues that received messages in a sync and may still hold some:
    /// the next sync drops what is left (see [`drop_unread`](Registry::drop_unread)).
    filled: Vec<u32>,
}

/// Messages that a sync dropped from a queue because they were not read.
pub(crate) struct Dropped {
    pub(crate) queue: u32,
    pub(crate) messages: usize,
}

/// A registration's name, `kind`, as registered on behalf of `owner`
/// (`all_reduce's coarray<u32>`), where there is one.
fn owned(owner: Option<&str>, kind: String) -> String {
    match owner {
        Some(owner) => format!("{owner}'s {kind}"),
        None => kind,
    }
}

/// Why an entry that is not a live queue cannot be used as one.
fn not_a_queue(entry: &Entry) -> Unusable {
    match entry {
        Entry::Released(when) => Unusable::Released(*when),
        _ => Unusable::Foreign,
    }
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            entries: Vec::new(),
            names: Vec::new(),
            steps: Vec::new(),
            fingerprint: 0xcbf2_9ce4_8422_2325,
            layout: 0,
            lent_last: Vec::new(),
            filled: Vec::new(),
        }
    }

    /// Number of registrations so far (releases included in the fingerprint only).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// A hash of the sequence of registrations and releases so far.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// A count that grows whenever a registration is made or released, a
    /// coarray's local part may have moved (`replace_local`, a direct
    /// put, a checkpoint loaded) or the coarrays lent in a sync are not
    /// those of the last ([`note_lending`](Registry::note_lending)): while
    /// it stands still, every live coarray's local part keeps its address
    /// and its memory, and the same ones are lent. A placed superstep that
    /// repeats the last one relies on it (see `Matrix::repeats`).
    pub(crate) fn layout(&self) -> u64 {
        self.layout
    }

    /// Notes that `ids` are the coarrays this sync will lend
    /// ([`lend`](Registry::lend)); the layout grows where they are not
    /// those of the last sync.
    pub(crate) fn note_lending(&mut self, ids: &[u32]) {
        // Compared element by element: a slice comparison calls `memcmp`,
        // which made an empty sync under MPI 0.20 -> 0.34 us on AMD-2b
        // (Zen 5, glibc 2.36), even for two empty lists.
        if !ids.iter().eq(&self.lent_last) {
            self.layout += 1;
            self.lent_last.clear();
            self.lent_last.extend_from_slice(ids);
        }
    }

    /// The registrations and releases so far, comma-separated (for error
    /// messages).
    pub(crate) fn history(&self) -> String {
        let step = |s: &Step| match *s {
            Step::Registered(id) => self.names[id as usize].clone(),
            Step::Released(id) => format!("release #{id}"),
        };
        self.steps.iter().map(step).collect::<Vec<_>>().join(", ")
    }

    fn push(&mut self, name: String, entry: Entry) -> u32 {
        let id = u32::try_from(self.entries.len()).expect("bsp: too many registrations");
        self.fingerprint = fnv1a(fnv1a(self.fingerprint, name.as_bytes()), &[0xff]);
        self.steps.push(Step::Registered(id));
        self.layout += 1;
        self.names.push(name);
        self.entries.push(entry);
        id
    }

    /// Registers a coarray with local part `local`.
    pub(crate) fn register_array<T: Pod + Send>(&mut self, local: Vec<T>) -> u32 {
        self.register_array_for(None, local)
    }

    /// Registers a coarray with local part `local`, on behalf of `owner`
    /// (a library call, which the coarray's errors then name).
    pub(crate) fn register_array_for<T: Pod + Send>(
        &mut self,
        owner: Option<&str>,
        local: Vec<T>,
    ) -> u32 {
        self.register_part_for(owner, Part::Heap(local))
    }

    /// Registers a coarray with local part `local` (a vector or mapped
    /// memory), on behalf of `owner` if given.
    pub(crate) fn register_part_for<T: Pod + Send>(
        &mut self,
        owner: Option<&str>,
        local: Part<T>,
    ) -> u32 {
        let kind = format!("coarray<{}>", std::any::type_name::<T>());
        self.push(owned(owner, kind), Entry::Array(local.into_storage()))
    }

    /// Registers a foreign area (see `area.rs`) whose local part is `local`.
    pub(crate) fn register_area(&mut self, local: ForeignBytes) -> u32 {
        self.register_area_for(None, local)
    }

    /// Registers a foreign area on behalf of `owner` (a library call,
    /// which the area's errors then name).
    pub(crate) fn register_area_for(&mut self, owner: Option<&str>, local: ForeignBytes) -> u32 {
        self.push(
            owned(owner, "area".to_owned()),
            Entry::Array(Box::new(local)),
        )
    }

    /// Releases foreign area `id` in `superstep`.
    pub(crate) fn release_area(&mut self, id: u32, superstep: usize) -> Result<(), Unusable> {
        let storage = self.storage(id)?;
        if storage.as_any().downcast_ref::<ForeignBytes>().is_none() {
            return Err(Unusable::Foreign);
        }
        self.release(id, superstep);
        Ok(())
    }

    /// The local length in bytes of foreign area `id`.
    pub(crate) fn area_len(&self, id: u32) -> Result<usize, Unusable> {
        let storage = self.storage(id)?;
        match storage.as_any().downcast_ref::<ForeignBytes>() {
            Some(area) => Ok(area.len()),
            None => Err(Unusable::Foreign),
        }
    }

    /// Registers a queue; `kind` names it in the signature (e.g. `queue<u32>`).
    pub(crate) fn register_queue(&mut self, kind: String) -> u32 {
        self.push(kind, Entry::Queue(Inbox::default()))
    }

    /// What `id` was registered as.
    pub(crate) fn name_of(&self, id: u32) -> &str {
        self.names
            .get(id as usize)
            .map_or("(unknown)", String::as_str)
    }

    fn entry(&self, id: u32) -> Result<&Entry, Unusable> {
        self.entries.get(id as usize).ok_or(Unusable::Foreign)
    }

    fn entry_mut(&mut self, id: u32) -> Result<&mut Entry, Unusable> {
        self.entries.get_mut(id as usize).ok_or(Unusable::Foreign)
    }

    /// The local part of coarray `id`, untyped (also while lent).
    pub(crate) fn storage(&self, id: u32) -> Result<&dyn Storage, Unusable> {
        match self.entry(id)? {
            Entry::Array(s) => Ok(s.as_ref()),
            Entry::Lent(s) => Ok(s.as_ref().as_ref()),
            Entry::Open => Err(Unusable::Open),
            Entry::Released(when) => Err(Unusable::Released(*when)),
            Entry::Queue(_) => Err(Unusable::Foreign),
        }
    }

    /// The local part of coarray `id`, untyped and mutably.
    pub(crate) fn storage_mut(&mut self, id: u32) -> Result<&mut dyn Storage, Unusable> {
        match self.entry_mut(id)? {
            Entry::Array(s) => Ok(s.as_mut()),
            Entry::Lent(_) => Err(Unusable::Lent),
            Entry::Open => Err(Unusable::Open),
            Entry::Released(when) => Err(Unusable::Released(*when)),
            Entry::Queue(_) => Err(Unusable::Foreign),
        }
    }

    /// The local part of coarray `id` as a slice of `T`.
    pub(crate) fn array<T: Pod>(&self, id: u32) -> Result<&[T], Unusable> {
        slice_of(self.storage(id)?).ok_or(Unusable::Foreign)
    }

    /// The local part of coarray `id` as a slice of `T`, mutably.
    pub(crate) fn array_mut<T: Pod>(&mut self, id: u32) -> Result<&mut [T], Unusable> {
        slice_of_mut(self.storage_mut(id)?).ok_or(Unusable::Foreign)
    }

    /// Makes `local` the local part of coarray `id` and returns the part
    /// it replaces, as a vector. A vector is swapped without a copy; mapped
    /// memory (`coarray.rs`'s `Mapped`) keeps its place and swaps contents
    /// with `local` when the lengths agree (two copies), and otherwise
    /// gives way to `local` and comes back copied.
    pub(crate) fn replace_array<T: Pod + Send>(
        &mut self,
        id: u32,
        mut local: Vec<T>,
    ) -> Result<Vec<T>, Unusable> {
        self.layout += 1;
        let storage = self.storage_mut(id)?;
        if let Some(v) = storage.as_any_mut().downcast_mut::<PodVec<T>>() {
            return Ok(std::mem::replace(&mut v.0, local));
        }
        let part = slice_of_mut::<T>(storage).ok_or(Unusable::Foreign)?;
        if part.len() == local.len() {
            part.swap_with_slice(&mut local);
            return Ok(local);
        }
        let old = part.to_vec();
        self.entries[id as usize] = Entry::Array(Box::new(PodVec(local)));
        Ok(old)
    }

    /// The local parts of two different coarrays, the second mutably; on
    /// failure, why and which of the two ids.
    pub(crate) fn array_pair_mut<T: Pod, U: Pod>(
        &mut self,
        read: u32,
        write: u32,
    ) -> Result<(&[T], &mut [U]), UnusableId> {
        assert_ne!(
            read, write,
            "bsp: local_pair_mut needs two different coarrays"
        );
        // Check both first, so that the split below cannot fail half-way.
        self.array::<T>(read).map_err(|why| (why, read))?;
        self.array_mut::<U>(write).map_err(|why| (why, write))?;
        let (r, w) = (read as usize, write as usize);
        let (low, high) = self.entries.split_at_mut(r.max(w));
        let (read_entry, write_entry) = if r < w {
            (&low[r], &mut high[0])
        } else {
            (&high[0], &mut low[w])
        };
        let (Entry::Array(from), Entry::Array(to)) = (read_entry, write_entry) else {
            unreachable!("checked above")
        };
        let from = slice_of::<T>(from.as_ref()).expect("checked");
        let to = slice_of_mut::<U>(to.as_mut()).expect("checked");
        Ok((from, to))
    }

    /// The received messages of queue `id`.
    pub(crate) fn inbox(&mut self, id: u32) -> Result<&mut Inbox, Unusable> {
        match self.entry_mut(id)? {
            Entry::Queue(inbox) => Ok(inbox),
            other => Err(not_a_queue(other)),
        }
    }

    /// Each registration's bytes for a checkpoint, in registration order:
    /// a coarray's or area's local part, the messages of a queue that
    /// keeps its unread ones (a queue that drops them saves nothing: the
    /// checkpoint's own sync would drop them), nothing for a released one.
    pub(crate) fn save(&self) -> Vec<Cow<'_, [u8]>> {
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Array(storage) => Cow::Borrowed(storage.bytes()),
                Entry::Queue(inbox) if inbox.keep_unread => Cow::Owned(inbox.save()),
                Entry::Queue(_) | Entry::Released(_) => Cow::Borrowed(&[][..]),
                Entry::Lent(_) | Entry::Open => {
                    unreachable!("bsp: a checkpoint is taken between supersteps")
                }
            })
            .collect()
    }

    /// Puts back the parts of [`save`](Registry::save), taken on a
    /// registry of the same fingerprint; the message of a part that does
    /// not fit names its registration.
    pub(crate) fn load(&mut self, parts: Vec<Cow<'_, [u8]>>) -> Result<(), String> {
        self.layout += 1;
        if parts.len() != self.entries.len() {
            return Err(format!(
                "the checkpoint holds {} registrations, the program made {}",
                parts.len(),
                self.entries.len()
            ));
        }
        for (id, (entry, part)) in self.entries.iter_mut().zip(parts).enumerate() {
            let fits = match entry {
                Entry::Array(storage) => storage.restore_bytes(&part),
                Entry::Queue(inbox) if part.is_empty() => {
                    inbox.clear();
                    true
                }
                Entry::Queue(inbox) => inbox.load(&part),
                _ => part.is_empty(),
            };
            if !fits {
                return Err(format!(
                    "registration #{id} ({}) cannot take the {} bytes the checkpoint saved for it",
                    self.names[id],
                    part.len()
                ));
            }
            if matches!(entry, Entry::Queue(inbox) if inbox.len() > 0) {
                self.filled.push(id as u32);
            }
        }
        Ok(())
    }

    /// Notes that queue `id` received messages in this sync.
    pub(crate) fn note_filled(&mut self, id: u32) {
        self.filled.push(id);
    }

    /// Drops the messages that the queues received in the last sync and
    /// that were not read, except on queues that keep them (BSPlib's
    /// semantics: a queue holds one superstep's messages). Returns, for
    /// debug builds to report, the queues that dropped messages for the
    /// first time. Costs one look per queue that received, not per
    /// registration.
    pub(crate) fn drop_unread(&mut self) -> Vec<Dropped> {
        let mut first_drops = Vec::new();
        let mut kept = 0;
        for k in 0..self.filled.len() {
            let id = self.filled[k];
            let Some(Entry::Queue(inbox)) = self.entries.get_mut(id as usize) else {
                continue; // released since
            };
            let messages = inbox.len();
            if messages == 0 {
                continue;
            }
            if inbox.keep_unread {
                self.filled[kept] = id;
                kept += 1;
                continue;
            }
            if !inbox.warned {
                inbox.warned = true;
                first_drops.push(Dropped {
                    queue: id,
                    messages,
                });
            }
            inbox.clear();
        }
        self.filled.truncate(kept);
        first_drops
    }

    /// Queue `id`'s inbox, to read without taking.
    pub(crate) fn inbox_ref(&self, id: u32) -> Result<&Inbox, Unusable> {
        match self.entry(id)? {
            Entry::Queue(inbox) => Ok(inbox),
            other => Err(not_a_queue(other)),
        }
    }

    /// Whether `id` names a coarray lent for this sync.
    pub(crate) fn is_lent(&self, id: u32) -> bool {
        matches!(self.entry(id), Ok(Entry::Lent(_)))
    }

    /// Releases coarray `id` in `superstep` and returns its local part.
    pub(crate) fn release_array<T: Pod + Send>(
        &mut self,
        id: u32,
        superstep: usize,
    ) -> Result<Part<T>, Unusable> {
        self.array::<T>(id)?;
        let Entry::Array(storage) = self.release(id, superstep) else {
            unreachable!("checked above")
        };
        Ok(Part::<T>::of(storage).expect("checked above"))
    }

    /// Releases queue `id` in `superstep`, dropping the messages not taken.
    pub(crate) fn release_queue(&mut self, id: u32, superstep: usize) -> Result<(), Unusable> {
        self.inbox(id)?;
        self.release(id, superstep);
        Ok(())
    }

    fn release(&mut self, id: u32, superstep: usize) -> Entry {
        let step = format!("release #{id}");
        self.fingerprint = fnv1a(fnv1a(self.fingerprint, step.as_bytes()), &[0xfe]);
        self.steps.push(Step::Released(id));
        self.layout += 1;
        std::mem::replace(&mut self.entries[id as usize], Entry::Released(superstep))
    }

    /// Lends coarrays `ids` to the router for one sync: returns each one's
    /// local part as bytes, shared, until [`reclaim`](Registry::reclaim).
    pub(crate) fn lend(&mut self, ids: &[u32]) -> Lent {
        let mut lent = Vec::with_capacity(ids.len());
        for &id in ids {
            let entry = &mut self.entries[id as usize];
            let Entry::Array(storage) = std::mem::replace(entry, Entry::Released(0)) else {
                unreachable!("bsp: only coarrays are lent")
            };
            let shared = Arc::new(storage);
            lent.push((id, Bytes::from_owner(LentStorage(Arc::clone(&shared)))));
            *entry = Entry::Lent(shared);
        }
        Lent(lent)
    }

    /// Takes the local part of coarray `id` out for a direct put; until
    /// [`put_back`](Registry::put_back), local access to it fails.
    pub(crate) fn open<T: Pod + Send>(&mut self, id: u32) -> Result<Part<T>, Unusable> {
        self.array::<T>(id)?;
        let Entry::Array(storage) = std::mem::replace(&mut self.entries[id as usize], Entry::Open)
        else {
            unreachable!("checked above")
        };
        Ok(Part::of(storage).expect("checked above"))
    }

    /// Returns the local part of coarray `id`, taken by [`open`](Registry::open).
    pub(crate) fn put_back<T: Pod + Send>(&mut self, id: u32, local: Part<T>) {
        self.layout += 1;
        let entry = &mut self.entries[id as usize];
        assert!(
            matches!(entry, Entry::Open),
            "bsp: put_back of a coarray not open"
        );
        *entry = Entry::Array(local.into_storage());
    }

    /// Takes back every lent coarray.
    ///
    /// # Panics
    ///
    /// If the router still holds a reference to one, which would be a bug
    /// in the runtime: call it after every reader has finished.
    pub(crate) fn reclaim(&mut self) {
        for entry in &mut self.entries {
            if !matches!(entry, Entry::Lent(_)) {
                continue;
            }
            // Taken out without allocating a stand-in.
            let Entry::Lent(shared) = std::mem::replace(entry, Entry::Released(0)) else {
                unreachable!("matched above")
            };
            let storage = Arc::try_unwrap(shared).unwrap_or_else(|_| {
                unreachable!("bsp: a lent coarray is still referenced after the barrier")
            });
            *entry = Entry::Array(storage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_access_release_and_fingerprint() {
        let mut a = Registry::new();
        let mut b = Registry::new();
        let x = a.register_array(vec![1u32, 2, 3]);
        let q = a.register_queue("queue<u8>".into());
        assert_eq!(b.register_array(vec![0u32; 9]), x);
        assert_ne!(a.fingerprint(), b.fingerprint());
        b.register_queue("queue<u8>".into());
        assert_eq!(
            a.fingerprint(),
            b.fingerprint(),
            "local lengths do not count"
        );
        assert_eq!(a.array::<u32>(x).unwrap(), &vec![1, 2, 3]);
        assert_eq!(a.array::<u64>(x).unwrap_err(), Unusable::Foreign);
        assert_eq!(a.array::<u32>(q).unwrap_err(), Unusable::Foreign);
        assert_eq!(a.inbox(x).err(), Some(Unusable::Foreign));
        assert_eq!(a.array::<u32>(99).unwrap_err(), Unusable::Foreign);
        a.array_mut::<u32>(x).unwrap()[0] = 7;
        assert_eq!(
            a.release_array::<u32>(x, 3).unwrap().into_vec(),
            vec![7, 2, 3]
        );
        assert_eq!(a.array::<u32>(x).unwrap_err(), Unusable::Released(3));
        assert_eq!(a.name_of(q), "queue<u8>");
        assert_eq!(a.history(), "coarray<u32>, queue<u8>, release #0");
        assert_ne!(a.fingerprint(), b.fingerprint());
        b.release_array::<u32>(x, 3).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn the_layout_grows_whenever_a_landing_may_change() {
        let mut r = Registry::new();
        let mut last = r.layout();
        let grew = |r: &Registry, last: &mut u64, what: &str| {
            assert!(r.layout() > *last, "{what} left the layout at {last}");
            *last = r.layout();
        };
        let x = r.register_array(vec![1u32, 2, 3]);
        grew(&r, &mut last, "a registration");
        r.replace_array(x, vec![4u32, 5, 6]).unwrap();
        grew(&r, &mut last, "replace_local");
        let part = r.open::<u32>(x).unwrap();
        r.put_back(x, part);
        grew(&r, &mut last, "a direct put");
        let saved: Vec<Vec<u8>> = r.save().into_iter().map(|c| c.into_owned()).collect();
        r.load(saved.into_iter().map(Cow::Owned).collect()).unwrap();
        grew(&r, &mut last, "a checkpoint loaded");
        r.release_array::<u32>(x, 1).unwrap();
        grew(&r, &mut last, "a release");
        // Reading, writing in place and lending move nothing...
        let y = r.register_array(vec![0u8; 4]);
        grew(&r, &mut last, "a registration");
        r.array_mut::<u8>(y).unwrap()[0] = 1;
        drop(r.lend(&[y]));
        r.reclaim();
        assert_eq!(r.layout(), last);
        // ...but lending other coarrays than the last sync did counts.
        r.note_lending(&[y]);
        grew(&r, &mut last, "lending y");
        r.note_lending(&[y]);
        assert_eq!(r.layout(), last, "lending y again");
        r.note_lending(&[]);
        grew(&r, &mut last, "lending nothing");
    }

    #[test]
    fn lent_arrays_are_readable_and_come_back() {
        let mut r = Registry::new();
        let x = r.register_array(vec![5u8, 6, 7]);
        let lent = r.lend(&[x]);
        assert!(r.is_lent(x));
        assert_eq!(&lent.of(x)[..], &[5, 6, 7]);
        assert_eq!(r.storage(x).unwrap().len(), 3);
        assert_eq!(r.storage_mut(x).err(), Some(Unusable::Lent));
        drop(lent);
        r.reclaim();
        assert!(!r.is_lent(x));
        assert_eq!(r.array::<u8>(x).unwrap(), &vec![5, 6, 7]);
    }
}
