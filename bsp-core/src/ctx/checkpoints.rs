//! Checkpoint and restart at superstep boundaries: [`Ctx::checkpoint`]
//! saves every processor's coarrays, kept messages, program state and
//! superstep counter; [`Ctx::restore`] puts the newest complete checkpoint
//! back. The file format is `checkpoint.rs`'s.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Ctx;
use crate::checkpoint::{self, Entry, Place, Snapshot};
use crate::codec;
use crate::error::{Error, ErrorKind};
use crate::stats::CheckpointStats;

impl Ctx {
    /// Saves this processor's part of a checkpoint: its registered
    /// coarrays and areas, the messages of the queues that keep their
    /// unread ones ([`keep_unread`](Ctx::keep_unread)), `state` and the
    /// superstep counter, to the run's checkpoint directory
    /// ([`Runtime::with_checkpoint_dir`](crate::Runtime::with_checkpoint_dir)).
    ///
    /// Collective, and it ends the superstep like [`sync`](Ctx::sync): call
    /// it at a superstep boundary, after a sync and before this
    /// superstep's first put, get or send. Each processor writes its file
    /// whole (a temporary name, flushed, renamed); the sync tells every
    /// processor that every file is on disk, and only then processor 0
    /// names the checkpoint in the directory's manifest. A checkpoint is
    /// therefore complete or ignored: a process that dies while saving
    /// leaves the previous one usable. The newest
    /// [`checkpoints_kept`](crate::Runtime::checkpoints_kept) checkpoints
    /// are kept.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("bsp-doc-ckpt-{}", std::process::id()));
    /// let rt = bsp_core::Runtime::threads(2).with_checkpoint_dir(&dir);
    /// let program = |ctx: &mut bsp_core::Ctx| {
    ///     let a = ctx.coarray::<u64>(1);
    ///     let mut step: u64 = ctx.restore().unwrap_or(0); // None: a fresh start
    ///     while step < 4 {
    ///         ctx.local_mut(&a)[0] += step;
    ///         step += 1;
    ///         ctx.checkpoint(&step);
    ///     }
    ///     ctx.local(&a)[0]
    /// };
    /// let first = rt.run(program)?;
    /// let again = rt.run(program)?; // restores step 4: nothing left to do
    /// assert_eq!((first.root(), again.root()), (Some(&6), Some(&6)));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::Config`] where the run has no
    /// checkpoint directory (or this is a sub-machine of a
    /// [`split`](Ctx::split)), with [`ErrorKind::PendingCommunication`]
    /// where this superstep has requested communication already, and, on
    /// every processor, with [`ErrorKind::Io`] naming the processor whose
    /// file could not be written (a full disk, a directory that cannot be
    /// written) and the checkpoint's superstep.
    ///
    /// # Cost
    ///
    /// One superstep with no h-relation (l), plus writing this processor's
    /// registered bytes and state once, and flushing them to disk.
    pub fn checkpoint<S: Serialize>(&mut self, state: &S) {
        let place = self.checkpoint_place("checkpoint");
        self.at_boundary("checkpoint");
        let mut encoded = Vec::new();
        codec::encode(state, &mut encoded);
        let entry = Entry {
            superstep: self.superstep as u64,
            nprocs: self.nprocs as u64,
            fingerprint: self.registry.fingerprint(),
        };
        let file = checkpoint::file_of(&place.dir, entry.superstep, self.pid as u64);
        let snapshot = Snapshot {
            nprocs: entry.nprocs,
            pid: self.pid as u64,
            superstep: entry.superstep,
            fingerprint: entry.fingerprint,
            parts: self.registry.save(),
            state_type: std::any::type_name::<S>().to_owned(),
            state: encoded,
        };
        // The coarrays are written from where they lie, not copied.
        let start = std::time::Instant::now();
        let written = checkpoint::write_whole(&file, |out| checkpoint::write_to(&snapshot, out));
        drop(snapshot);
        if let Ok(bytes) = written {
            self.checkpointed.push(CheckpointStats {
                superstep: entry.superstep as usize,
                bytes,
                write_seconds: start.elapsed().as_secs_f64(),
            });
        }
        // The profile shows the checkpoint's superstep by name, with the
        // time its writes took as the superstep's work.
        self.label("checkpoint");
        let failed = self.sync_sum(u64::from(written.is_err()));
        if let Err(e) = &written {
            let msg = format!(
                "checkpoint: cannot write {}: {e} ({failed} processor(s) failed)",
                file.display()
            );
            self.abort_with(Error::at(
                ErrorKind::Io,
                self.pid,
                entry.superstep as usize,
                msg,
            ));
        }
        if failed > 0 {
            let msg = format!(
                "checkpoint of superstep {}: {failed} processor(s) could not write their file",
                entry.superstep
            );
            self.abort_with(Error::at(
                ErrorKind::Io,
                self.pid,
                entry.superstep as usize,
                msg,
            ));
        }
        if self.pid == 0 {
            if let Err(e) = checkpoint::commit(&place.dir, entry, place.kept) {
                let msg = format!(
                    "checkpoint: cannot write the manifest in {}: {e}",
                    place.dir.display()
                );
                self.abort_with(Error::at(
                    ErrorKind::Io,
                    self.pid,
                    entry.superstep as usize,
                    msg,
                ));
            }
        }
    }

    /// Puts back the newest complete checkpoint of the run's checkpoint
    /// directory and returns the state saved with it; `None` where there is
    /// none (or no directory), and the program starts fresh.
    ///
    /// Collective. Call it once the program has registered its coarrays
    /// and queues in the usual order (and set [`keep_unread`](Ctx::keep_unread)
    /// where it does), before any communication: it refills them, and sets
    /// the superstep counter to the superstep after the checkpoint's, as if
    /// [`checkpoint`](Ctx::checkpoint) had just returned. A checkpoint
    /// whose file is torn or altered on any processor (its length or
    /// checksum disagree) is skipped, with a warning on standard error, in
    /// favour of the one before.
    ///
    /// # Examples
    ///
    /// See [`checkpoint`](Ctx::checkpoint).
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::Config`] where the checkpoint was
    /// written by another number of processors, or by a program that
    /// registered other coarrays and queues, or saved a state of another
    /// type than `S` (the type is compared by name: restore the type that
    /// was saved): a clear error, never a silent mix.
    ///
    /// # Cost
    ///
    /// One superstep with no h-relation (l) per checkpoint tried, plus
    /// reading this processor's file.
    pub fn restore<S: DeserializeOwned>(&mut self) -> Option<S> {
        self.at_boundary("restore");
        let Some(place) = self.checkpoints.clone() else {
            // Every processor of a run has the same directory, or none.
            return None;
        };
        let candidates = checkpoint::manifest(&place.dir);
        // Every processor must try the same checkpoints: they agree on the
        // newest one named.
        let newest = candidates.last().map_or(0, |e| e.superstep + 1);
        let agreed = self.sync_sum(newest);
        if agreed != newest * self.nprocs as u64 {
            let msg = format!(
                "restore: the processors see different manifests in {} (this one's newest \
                 checkpoint: {})",
                place.dir.display(),
                candidates
                    .last()
                    .map_or("none".into(), |e| e.superstep.to_string())
            );
            self.fail(ErrorKind::Config, self.pid, msg);
        }
        for entry in candidates.iter().rev() {
            self.check_processors(&place, entry);
            let file = checkpoint::read(&place.dir, entry.superstep, self.pid as u64).ok();
            let mine = file
                .as_deref()
                .and_then(|bytes| self.check_checkpoint(&place, entry, bytes));
            let torn = self.sync_sum(u64::from(mine.is_none()));
            if let (0, Some(snapshot)) = (torn, mine) {
                return Some(self.apply_checkpoint(snapshot));
            }
            if self.pid == 0 {
                eprintln!(
                    "bsp: restore: the checkpoint of superstep {} in {} is skipped: {torn} \
                     processor(s) found their file missing, torn or altered",
                    entry.superstep,
                    place.dir.display()
                );
            }
        }
        None
    }

    /// Ends the run where `entry` was written by another number of
    /// processors.
    fn check_processors(&mut self, place: &Place, entry: &Entry) {
        if entry.nprocs != self.nprocs as u64 {
            let msg = format!(
                "restore: the checkpoint of superstep {} in {} was written by {} processors, \
                 this run has {}",
                entry.superstep,
                place.dir.display(),
                entry.nprocs,
                self.nprocs
            );
            self.fail(ErrorKind::Config, self.pid, msg);
        }
    }

    /// This processor's file of `entry` (`file`, its bytes), checked
    /// against the run; `None` where it is torn. A file of another run
    /// ends the run.
    fn check_checkpoint<'f>(
        &mut self,
        place: &Place,
        entry: &Entry,
        file: &'f [u8],
    ) -> Option<Snapshot<'f>> {
        let snapshot = checkpoint::decode(file).ok()?;
        let same_run = snapshot.nprocs == entry.nprocs
            && snapshot.pid == self.pid as u64
            && snapshot.superstep == entry.superstep;
        if !same_run {
            return None;
        }
        if snapshot.fingerprint != self.registry.fingerprint() {
            let msg = format!(
                "restore: the checkpoint of superstep {} in {} was written by a program that \
                 registered other coarrays or queues (this one registered: {})",
                entry.superstep,
                place.dir.display(),
                self.registry.history()
            );
            self.fail(ErrorKind::Config, self.pid, msg);
        }
        Some(snapshot)
    }

    /// Puts `snapshot` back and returns its state.
    fn apply_checkpoint<S: DeserializeOwned>(&mut self, snapshot: Snapshot<'_>) -> S {
        let wanted = std::any::type_name::<S>();
        if snapshot.state_type != wanted {
            let msg = format!(
                "restore: the checkpoint of superstep {} saved a state of type {}, and the \
                 program restores a {wanted}",
                snapshot.superstep, snapshot.state_type
            );
            self.fail(ErrorKind::Config, self.pid, msg);
        }
        let state = match codec::try_decode::<S>(&snapshot.state) {
            Ok(state) => state,
            Err(why) => {
                let msg = format!(
                    "restore: the state saved in the checkpoint of superstep {} does not \
                     decode as {}: {why}",
                    snapshot.superstep,
                    std::any::type_name::<S>()
                );
                self.fail(ErrorKind::Config, self.pid, msg)
            }
        };
        if let Err(why) = self.registry.load(snapshot.parts) {
            let msg = format!(
                "restore: the checkpoint of superstep {}: {why}",
                snapshot.superstep
            );
            self.fail(ErrorKind::Config, self.pid, msg);
        }
        let next = snapshot.superstep as usize + 1;
        self.superstep = next;
        self.comm.set_superstep(next);
        self.stats.restart_at(next);
        state
    }

    /// The run's checkpoint place, or the end of the run for `what`.
    fn checkpoint_place(&mut self, what: &str) -> Place {
        match self.checkpoints.clone() {
            Some(place) => place,
            None => {
                let msg = format!(
                    "{what}: the run has no checkpoint directory (Runtime::with_checkpoint_dir, \
                     or BSP_CHECKPOINT_DIR for Runtime::from_env; a split's sub-machine has none)"
                );
                self.fail(ErrorKind::Config, self.pid, msg)
            }
        }
    }

    /// Ends the run unless this superstep has requested nothing yet.
    fn at_boundary(&mut self, what: &str) {
        if !self.outbox.is_empty() || self.has_gets || !self.lending.is_empty() {
            let msg = format!(
                "{what} must be called at a superstep boundary, but processor {} has requested \
                 puts, gets or sends in superstep {}",
                self.pid, self.superstep
            );
            self.fail(ErrorKind::PendingCommunication, self.pid, msg);
        }
    }
}
