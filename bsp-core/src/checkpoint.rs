//! Checkpoint files: one per processor and checkpoint, and a manifest that
//! names the complete checkpoints. Bytes and files only; what goes into a
//! processor's file is the registry's and the context's business
//! (`ctx/checkpoints.rs`).
//!
//! A processor's file is written under a temporary name, flushed to disk
//! and renamed, so it is either whole or absent. Processor 0 adds a
//! checkpoint to the manifest (the same way) only after every processor
//! has said its file is on disk, so the manifest names complete
//! checkpoints only. A file that is torn or altered anyway (its length or
//! checksum disagree) is detected when it is read back.

use std::borrow::Cow;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The first bytes of every processor's file.
const MAGIC: &[u8; 8] = b"BSPCKPT1";
/// The manifest's first line.
const MANIFEST_HEADER: &str = "bsp checkpoints v1";
/// The manifest's name in the checkpoint directory.
const MANIFEST: &str = "manifest";

/// Where a run keeps its checkpoints, and how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) dir: PathBuf,
    /// The complete checkpoints kept (at least 1).
    pub(crate) kept: usize,
}

/// One processor's saved state at a superstep boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot<'a> {
    pub(crate) nprocs: u64,
    pub(crate) pid: u64,
    /// The superstep in which the checkpoint was taken.
    pub(crate) superstep: u64,
    /// The registry's fingerprint: which coarrays and queues, in which
    /// order.
    pub(crate) fingerprint: u64,
    /// Each registration's saved bytes, in registration order (borrowed
    /// from the registry when saving, owned when read back).
    pub(crate) parts: Vec<Cow<'a, [u8]>>,
    /// The type of the program's state, as Rust names it.
    pub(crate) state_type: String,
    /// The program's own state, serialised.
    pub(crate) state: Vec<u8>,
}

/// Why a file cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Absent, or unreadable.
    Missing(String),
    /// Shorter or longer than it says, or its checksum disagrees.
    Torn,
}

/// The checksum of a file: FNV-1a over its little-endian 8-byte words
/// (the last, short one byte by byte), fed in pieces of any length. A
/// word at a time keeps it well above disk speed.
struct Sum {
    hash: u64,
    /// Bytes of a word not complete yet.
    tail: [u8; 8],
    held: usize,
}

impl Sum {
    const PRIME: u64 = 0x0100_0000_01b3;

    fn new() -> Self {
        Sum {
            hash: 0xcbf2_9ce4_8422_2325,
            tail: [0; 8],
            held: 0,
        }
    }

    fn word(&mut self, w: u64) {
        self.hash = (self.hash ^ w).wrapping_mul(Self::PRIME);
    }

    fn update(&mut self, mut bytes: &[u8]) {
        if self.held > 0 {
            let take = (8 - self.held).min(bytes.len());
            self.tail[self.held..self.held + take].copy_from_slice(&bytes[..take]);
            self.held += take;
            bytes = &bytes[take..];
            if self.held < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.tail));
            self.held = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.word(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.held = rest.len();
    }

    fn finish(mut self) -> u64 {
        for k in 0..self.held {
            self.hash = (self.hash ^ u64::from(self.tail[k])).wrapping_mul(Self::PRIME);
        }
        self.hash
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut sum = Sum::new();
    sum.update(bytes);
    sum.finish()
}

/// Reads the encoding of [`encode`], front to back.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*head))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u64()?).ok()?;
        if len > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(head)
    }
}

/// Writes the file of `snapshot` to `out`: the magic, the fields, the
/// parts and the state, each with its length, then the checksum of all
/// before it. The parts are written where they lie, not copied. Returns
/// the bytes written.
pub(crate) fn write_to(snapshot: &Snapshot<'_>, out: &mut impl Write) -> io::Result<u64> {
    let mut sum = Sum::new();
    let mut written = 8u64; // the checksum's
    let mut put = |bytes: &[u8]| -> io::Result<()> {
        sum.update(bytes);
        written += bytes.len() as u64;
        out.write_all(bytes)
    };
    put(MAGIC)?;
    for v in [
        snapshot.nprocs,
        snapshot.pid,
        snapshot.superstep,
        snapshot.fingerprint,
        snapshot.parts.len() as u64,
    ] {
        put(&v.to_le_bytes())?;
    }
    for part in &snapshot.parts {
        put(&(part.len() as u64).to_le_bytes())?;
        put(part)?;
    }
    for bytes in [snapshot.state_type.as_bytes(), &snapshot.state[..]] {
        put(&(bytes.len() as u64).to_le_bytes())?;
        put(bytes)?;
    }
    out.write_all(&sum.finish().to_le_bytes())?;
    Ok(written)
}

/// The file of `snapshot`, in memory.
#[cfg(test)]
pub(crate) fn encode(snapshot: &Snapshot<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    write_to(snapshot, &mut out).expect("a vector takes every write");
    out
}

/// The snapshot that `bytes` encode, its parts borrowed from `bytes` (a
/// restore copies each once, into its coarray); [`Unreadable::Torn`] when
/// they are not a whole file of [`encode`].
pub(crate) fn decode(bytes: &[u8]) -> Result<Snapshot<'_>, Unreadable> {
    let body_len = bytes.len().checked_sub(8).ok_or(Unreadable::Torn)?;
    let (body, sum) = bytes.split_at(body_len);
    let sum = u64::from_le_bytes(sum.try_into().map_err(|_| Unreadable::Torn)?);
    if checksum(body) != sum || !body.starts_with(MAGIC) {
        return Err(Unreadable::Torn);
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let mut field = || r.u64().ok_or(Unreadable::Torn);
    let (nprocs, pid, superstep, fingerprint, count) =
        (field()?, field()?, field()?, field()?, field()?);
    let mut parts = Vec::new();
    for _ in 0..count {
        parts.push(Cow::Borrowed(r.bytes().ok_or(Unreadable::Torn)?));
    }
    let state_type = r.bytes().ok_or(Unreadable::Torn)?;
    let state_type = String::from_utf8(state_type.to_vec()).map_err(|_| Unreadable::Torn)?;
    let state = r.bytes().ok_or(Unreadable::Torn)?.to_vec();
    if !r.0.is_empty() {
        return Err(Unreadable::Torn);
    }
    Ok(Snapshot {
        nprocs,
        pid,
        superstep,
        fingerprint,
        parts,
        state_type,
        state,
    })
}

/// Processor `pid`'s file of the checkpoint taken in `superstep`.
pub(crate) fn file_of(dir: &Path, superstep: u64, pid: u64) -> PathBuf {
    dir.join(format!("step{superstep:012}-pid{pid:06}.bsp"))
}

/// Writes to `path` what `fill` writes, whole or not at all: under a
/// temporary name, flushed to disk, then renamed (and the directory
/// flushed, so that the rename survives a crash).
pub(crate) fn write_whole<R>(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<R>,
) -> io::Result<R> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    let filled = fill(&mut out)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path)?;
    // A directory opened for reading can be flushed on Unix; elsewhere the
    // rename is as durable as the platform makes it.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(filled)
}

/// The bytes of processor `pid`'s file of the checkpoint of `superstep`,
/// for [`decode`].
pub(crate) fn read(dir: &Path, superstep: u64, pid: u64) -> Result<Vec<u8>, Unreadable> {
    let path = file_of(dir, superstep, pid);
    fs::read(&path).map_err(|e| Unreadable::Missing(format!("{}: {e}", path.display())))
}

/// A complete checkpoint, as the manifest lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) superstep: u64,
    pub(crate) nprocs: u64,
    pub(crate) fingerprint: u64,
}

/// The complete checkpoints in `dir`, oldest first (none without a
/// manifest, or with one that is not bsp's).
pub(crate) fn manifest(dir: &Path) -> Vec<Entry> {
    let Ok(text) = fs::read_to_string(dir.join(MANIFEST)) else {
        return Vec::new();
    };
    let mut lines = text.lines();
    if lines.next() != Some(MANIFEST_HEADER) {
        return Vec::new();
    }
    lines
        .filter_map(|line| {
            let mut words = line.split_whitespace().map(str::parse::<u64>);
            let (s, p, f) = (words.next()?, words.next()?, words.next()?);
            Some(Entry {
                superstep: s.ok()?,
                nprocs: p.ok()?,
                fingerprint: f.ok()?,
            })
        })
        .collect()
}

/// Adds `entry` to the manifest of `dir`, keeping the newest `kept`
/// checkpoints, and removes the files of those it drops. Called by
/// processor 0 once every processor's file is on disk.
pub(crate) fn commit(dir: &Path, entry: Entry, kept: usize) -> io::Result<()> {
    let mut entries = manifest(dir);
    entries.retain(|e| e.superstep != entry.superstep);
    entries.push(entry);
    let dropped = entries.len().saturating_sub(kept.max(1));
    let gone: Vec<Entry> = entries.drain(..dropped).collect();
    let mut text = format!("{MANIFEST_HEADER}\n");
    for e in &entries {
        text.push_str(&format!("{} {} {}\n", e.superstep, e.nprocs, e.fingerprint));
    }
    write_whole(&dir.join(MANIFEST), |out| out.write_all(text.as_bytes()))?;
    for e in gone {
        for pid in 0..e.nprocs {
            let _ = fs::remove_file(file_of(dir, e.superstep, pid));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot<'static> {
        Snapshot {
            nprocs: 3,
            pid: 1,
            superstep: 7,
            fingerprint: 0xfeed,
            parts: vec![vec![1, 2, 3].into(), vec![].into(), vec![9; 100].into()],
            state_type: "u8".into(),
            state: b"state".to_vec(),
        }
    }

    #[test]
    fn the_checksum_is_the_same_whatever_the_pieces() {
        let bytes: Vec<u8> = (0..100u8).collect();
        let whole = checksum(&bytes);
        for cut in [0, 1, 7, 8, 9, 50, 99, 100] {
            let mut sum = Sum::new();
            sum.update(&bytes[..cut]);
            sum.update(&bytes[cut..]);
            assert_eq!(sum.finish(), whole, "cut at {cut}");
        }
        assert_ne!(checksum(&bytes[..99]), whole);
    }

    #[test]
    fn a_file_reads_back_as_written_and_a_torn_one_is_refused() {
        let bytes = encode(&snapshot());
        assert_eq!(decode(&bytes), Ok(snapshot()));
        for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..cut]), Err(Unreadable::Torn), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(decode(&flipped), Err(Unreadable::Torn));
    }

    #[test]
    fn the_manifest_keeps_the_newest_and_removes_the_files_of_the_others() {
        let dir = std::env::temp_dir().join(format!("bsp-ckpt-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for s in [2u64, 5, 9] {
            for pid in 0..2 {
                write_whole(&file_of(&dir, s, pid), |out| out.write_all(b"x")).unwrap();
            }
            let entry = Entry {
                superstep: s,
                nprocs: 2,
                fingerprint: 1,
            };
            commit(&dir, entry, 2).unwrap();
        }
        let steps: Vec<u64> = manifest(&dir).iter().map(|e| e.superstep).collect();
        assert_eq!(steps, [5, 9]);
        assert!(!file_of(&dir, 2, 0).exists() && file_of(&dir, 5, 1).exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
