//! Memory that the other processes of a machine can map (Linux, feature
//! `mpi`): the local part of a large coarray under the MPI transport on
//! one node, so that a sender copies its payload straight into the
//! receiver's coarray, one `memcpy`, as `MPI_Put` into a shared-memory
//! window does, where the kernel's cross-memory copy would be slower.
//!
//! A [`Region`] is an anonymous memory file (`memfd_create`), sized and
//! mapped shared in the process that made it. Another process of the same
//! user duplicates the file's descriptor with `pidfd_getfd` (Linux 5.6;
//! the same permission as `process_vm_readv`) and maps the file too
//! ([`Peers`]). Every region has a serial number unique in its process;
//! the process counts the regions it has freed and remembers the serials
//! of the last few ([`freed`]), so that a peer drops its mappings of
//! exactly those (which would otherwise keep freed memory alive) and
//! keeps the others: mapping a region again costs a page fault per page
//! written.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Where a range of this process's memory lies in a live [`Region`]:
/// what a peer needs to map it and find the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// The region's descriptor in this process.
    pub(crate) fd: i32,
    /// The region's serial number.
    pub(crate) serial: u64,
    /// The range's offset in the region.
    pub(crate) offset: u64,
}

/// A live region: its length, descriptor and serial, by its address.
struct Live {
    len: usize,
    fd: i32,
    serial: u64,
}

/// The live regions of this process, by start address.
static LIVE: Mutex<BTreeMap<usize, Live>> = Mutex::new(BTreeMap::new());
/// The last serial number given.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// Under test: whether [`Peers::map`] refuses every mapping, as a kernel
/// without `pidfd_getfd` (before Linux 5.6) or a seccomp policy would, so
/// that a push takes its `process_vm_writev` way (`transport/mpi/pull.rs`).
#[cfg(test)]
pub(crate) static REFUSE_MAPS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// How many serials of freed regions [`Freed`] tells.
pub(crate) const RECENT: usize = 16;

/// What this process has freed: how many regions, and the serials of the
/// last [`RECENT`] or fewer, held inline so that taking a copy (once per
/// exchange) allocates nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Freed {
    pub(crate) count: u64,
    /// `serials[..known]`, oldest first.
    serials: [u64; RECENT],
    known: usize,
}

impl Freed {
    /// `count` regions freed, the last of them those of `recent` (oldest
    /// first; only the last [`RECENT`] are kept).
    pub(crate) fn new(count: u64, recent: impl IntoIterator<Item = u64>) -> Freed {
        let mut freed = Freed {
            count,
            ..Freed::default()
        };
        recent.into_iter().for_each(|serial| freed.remember(serial));
        freed
    }

    /// The serials of the last regions freed, oldest first.
    pub(crate) fn recent(&self) -> &[u64] {
        &self.serials[..self.known]
    }

    /// How it travels to another process: the count, the number of
    /// serials known, then the serials ([`read`](Freed::read) reads it).
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        [self.count, self.known as u64]
            .into_iter()
            .chain(self.recent().iter().copied())
    }

    /// What [`words`](Freed::words) wrote, taken a word at a time from
    /// `next`.
    pub(crate) fn read(mut next: impl FnMut() -> u64) -> Freed {
        let count = next();
        let known = next();
        Freed::new(count, (0..known).map(|_| next()))
    }

    fn remember(&mut self, serial: u64) {
        if self.known == RECENT {
            self.serials.rotate_left(1);
            self.known -= 1;
        }
        self.serials[self.known] = serial;
        self.known += 1;
    }
}

/// What this process has freed so far.
static FREED: Mutex<Freed> = Mutex::new(Freed {
    count: 0,
    serials: [0; RECENT],
    known: 0,
});

/// What this process has freed so far.
pub(crate) fn freed() -> Freed {
    *FREED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the `len` bytes at `at` lie, if wholly inside one live region.
pub(crate) fn locate(at: *const u8, len: usize) -> Option<Place> {
    let at = at as usize;
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let (&start, region) = live.range(..=at).next_back()?;
    (at + len <= start + region.len).then_some(Place {
        fd: region.fd,
        serial: region.serial,
        offset: (at - start) as u64,
    })
}

/// Zeroed memory, mapped shared from an anonymous memory file that other
/// processes may map too. Unmapped and closed when dropped.
pub(crate) struct Region {
    ptr: *mut u8,
    len: usize,
    fd: i32,
    serial: u64,
}

// SAFETY: a `Region` owns its mapping as a `Box<[u8]>` owns its memory:
// `&Region` hands out only `&[u8]` and mutation needs `&mut Region`.
// Peers write into it only during a sync, into landing ranges that its
// owner has given them and does not touch until the sync's last
// collective (the MPI transport's `pull.rs`).
unsafe impl Send for Region {}
// SAFETY: as for `Send`; shared references only read.
unsafe impl Sync for Region {}

impl Region {
    /// `len` (more than 0) zeroed bytes; `None` where the kernel refuses
    /// (no `memfd_create`, or no memory).
    pub(crate) fn zeroed(len: usize) -> Option<Region> {
        assert!(len > 0, "bsp: an empty shared region");
        // SAFETY: the name is a NUL-terminated string; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"bsp-coarray".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let close = |fd| {
            // SAFETY: `fd` is this function's own descriptor, closed once.
            unsafe { libc::close(fd) };
        };
        // SAFETY: `fd` is a fresh memory file; growing it gives zero bytes.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            close(fd);
            return None;
        }
        let Ok(ptr) = map_shared(fd, len) else {
            close(fd);
            return None;
        };
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed) + 1;
        let live = Live { len, fd, serial };
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ptr as usize, live);
        Some(Region {
            ptr,
            len,
            fd,
            serial,
        })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for the region's life.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`, and `&mut self` excludes other local access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(self.ptr as usize));
        // SAFETY: the mapping and descriptor made in `zeroed`, released
        // once; no reference into the mapping outlives `self`.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
            libc::close(self.fd);
        }
        let mut freed = FREED.lock().unwrap_or_else(|e| e.into_inner());
        freed.count += 1;
        freed.remember(self.serial);
    }
}

/// The first `len` bytes of the memory file `fd`, mapped shared, readable
/// and writable, where the kernel places them.
fn map_shared(fd: i32, len: usize) -> io::Result<*mut u8> {
    // SAFETY: a new shared mapping of an open file, placed by the kernel
    // (it overlaps nothing); the caller owns it from here.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    match ptr == libc::MAP_FAILED {
        true => Err(io::Error::last_os_error()),
        false => Ok(ptr.cast()),
    }
}

/// A peer's region mapped into this process.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Peers::map`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// This process's mappings of other processes' regions, kept from one
/// sync to the next.
#[derive(Default)]
pub(crate) struct Peers {
    /// A descriptor of each peer process (`pidfd_open`).
    pidfds: HashMap<libc::pid_t, i32>,
    /// The mapped regions, by process and serial number.
    maps: HashMap<(libc::pid_t, u64), Mapping>,
    /// Each peer's count of freed regions when its mappings were last
    /// checked.
    seen: HashMap<libc::pid_t, u64>,
}

// SAFETY: the mappings are memory of other processes that this one only
// writes while the transport's protocol gives it the ranges; the raw
// pointers are not shared between threads otherwise.
unsafe impl Send for Peers {}

impl Peers {
    /// The `len` bytes at `place` in a region of process `pid`, mapped
    /// into this one, as a pointer valid for writes of `len` bytes until
    /// the peer frees the region. `freed` is what the peer has freed, as
    /// it reported it with `place`: the mappings of the regions freed
    /// since the last call are dropped (all of the peer's where more were
    /// freed than it names).
    pub(crate) fn map(
        &mut self,
        pid: libc::pid_t,
        freed: &Freed,
        place: Place,
        len: usize,
    ) -> io::Result<*mut u8> {
        #[cfg(test)]
        if REFUSE_MAPS.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "mappings refused under test",
            ));
        }
        match self.seen.insert(pid, freed.count) {
            Some(seen) if seen == freed.count => {}
            Some(seen) if freed.count - seen <= freed.recent().len() as u64 => {
                for &serial in freed.recent() {
                    self.maps.remove(&(pid, serial));
                }
            }
            _ => self.maps.retain(|&(p, _), _| p != pid),
        }
        let key = (pid, place.serial);
        if !self.maps.contains_key(&key) {
            let mapping = self.map_file(pid, place.fd)?;
            self.maps.insert(key, mapping);
        }
        let mapping = &self.maps[&key];
        let end = place.offset as usize + len;
        if end > mapping.len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "bytes {}..{end} of a {}-byte region",
                    place.offset, mapping.len
                ),
            ));
        }
        // SAFETY: the range lies inside the mapping (checked above).
        Ok(unsafe { mapping.ptr.add(place.offset as usize) })
    }

    /// Maps the whole memory file that process `pid` holds as `fd`.
    fn map_file(&mut self, pid: libc::pid_t, fd: i32) -> io::Result<Mapping> {
        let pidfd = match self.pidfds.get(&pid) {
            Some(&pidfd) => pidfd,
            None => {
                // SAFETY: pidfd_open takes a pid and flags; it returns a
                // new descriptor or -1.
                let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
                if pidfd < 0 {
                    return Err(io::Error::last_os_error());
                }
                self.pidfds.insert(pid, pidfd);
                pidfd
            }
        };
        // SAFETY: pidfd_getfd takes a pidfd, the target's descriptor and
        // flags; it returns a new descriptor of this process or -1.
        let ours = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) } as i32;
        if ours < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: an all-zero `stat` is a valid value to be overwritten.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `ours` is open and `stat` is writable.
        let sized = unsafe { libc::fstat(ours, &mut stat) } == 0;
        let len = stat.st_size as usize;
        let mapped = match (sized, len) {
            (false, _) => Err(io::Error::last_os_error()),
            // A region is never empty: this is not one of ours.
            (true, 0) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the peer's memory file is empty",
            )),
            (true, _) => map_shared(ours, len),
        };
        // SAFETY: our duplicate is no longer needed (the mapping keeps
        // the file); closed once.
        unsafe { libc::close(ours) };
        Ok(Mapping { ptr: mapped?, len })
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        for &pidfd in self.pidfds.values() {
            // SAFETY: descriptors opened by `map_file`, closed once.
            unsafe { libc::close(pidfd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_keeps_the_last_serials_oldest_first() {
        let few = Freed::new(3, [7, 8, 9]);
        assert_eq!((few.count, few.recent()), (3, &[7, 8, 9][..]));
        let many = Freed::new(40, 1..=40);
        let last: Vec<u64> = (41 - RECENT as u64..=40).collect();
        assert_eq!((many.count, many.recent()), (40, &last[..]));
    }

    #[test]
    fn a_region_is_zeroed_located_and_mapped_again() {
        let mut region = Region::zeroed(3 << 16).expect("memfd_create works here");
        assert!(region.bytes().iter().all(|&b| b == 0));
        region.bytes_mut()[70_000] = 7;
        let at = region.bytes()[70_000..].as_ptr();
        let place = locate(at, 100).expect("inside the region");
        assert_eq!(place.offset, 70_000);
        assert_eq!(locate(at, 3 << 16), None, "runs past the end");
        // This process maps its own region a second time, as a peer would.
        let mut peers = Peers::default();
        let me = std::process::id() as libc::pid_t;
        let there = peers.map(me, &freed(), place, 100).expect("pidfd_getfd");
        // SAFETY: the mapping covers 100 bytes from `there`.
        unsafe {
            assert_eq!(*there, 7);
            *there.add(1) = 9;
        }
        assert_eq!(region.bytes()[70_001], 9, "both mappings share the pages");
        let serial = place.serial;
        // Another region freed: the mapping of the first is kept.
        let other = Region::zeroed(4096).expect("memfd_create");
        let other_place = locate(other.bytes().as_ptr(), 1).expect("inside");
        peers.map(me, &freed(), other_place, 1).expect("mapped");
        drop(other);
        let again = peers.map(me, &freed(), place, 100).expect("still mapped");
        assert_eq!(again, there, "the first region's mapping was kept");
        assert!(!peers.maps.contains_key(&(me, other_place.serial)));
        drop(region);
        assert!(locate(at, 1).is_none_or(|p| p.serial != serial));
    }
}
