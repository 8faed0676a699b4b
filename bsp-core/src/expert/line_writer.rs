//! Scattering elements over many output windows a whole cache line at a
//! time, with stores that do not read the memory they overwrite.
//!
//! A scatter (the grouping pass of a counting sort, a bucket fill) writes
//! each element to one of many windows, a few bytes at a time. An ordinary
//! store into a line that is not in the cache makes the processor read the
//! line from memory first, only to overwrite it: a scatter of n bytes then
//! moves 3n bytes through memory (the input read, each line read for
//! ownership, the line written back), and with a thousand windows open the
//! reads wait on one another. [`LineWriter`] collects each window's
//! elements in a line-sized buffer of its own, which stays in the cache,
//! and writes a full buffer out with non-temporal stores (`movntdq` on
//! x86-64), which send the line to memory without reading it: 2n bytes.
//! The first and last few elements of a window, which do not fill an
//! aligned line, are copied plainly.
//!
//! On the 2-core VM of BENCHMARKS.md, one thread scattering 2^25 8-byte
//! keys into 2^11 windows took 5.0 ns a key with plain stores and 3.1 ns
//! through line buffers (BENCHMARKS.md section 4d as of commit d743920, in git, has the sort
//! before and after).
//!
//! Elements whose size does not divide a line (or processors other than
//! x86-64) are written straight through, one store each, as a plain loop
//! would.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::prefetch;
use super::stores::{stores, StoreChoice, Stores};
use super::whole;

/// The bytes of the cache line that [`LineWriter`] fills before writing.
pub const LINE_BYTES: usize = super::prefetch::LINE_BYTES;

/// The effective number of busy bins from which
/// [`LineWriter::choose`] considers combining lines.
pub const COMBINE_MIN_BUSY: f64 = 64.0;

/// The bytes of a scatter from which [`LineWriter::choose`] considers
/// combining lines (under [`Stores::Auto`], by timing both ways): a
/// smaller output stays in a core's cache, where plain stores find their
/// lines, and is too quick to time. Where the line buffers start to pay
/// differs between machines: from 16 MiB per processor on the 2-core
/// Intel VM of BENCHMARKS.md (section 4d as of commit d743920), already at
/// 8 MiB on the 16-core Intel machine (section 13), hence a measurement
/// per size rather than one threshold.
pub const COMBINE_MIN_BYTES: u64 = 1 << 20;

/// One window's line buffer, aligned as a line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE_BYTES]);

/// Where one bin's window stands: the next element to write, and one
/// past its last (both null for a bin without a window).
#[derive(Clone, Copy)]
struct Window {
    at: *mut u8,
    end: *mut u8,
}

impl Window {
    const NONE: Window = Window {
        at: std::ptr::null_mut(),
        end: std::ptr::null_mut(),
    };

    /// Elements of `size` bytes left to write.
    fn left(&self, size: usize) -> usize {
        (self.end as usize - self.at as usize) / size
    }
}

/// The part of a bin's state every push reads, eight bytes: the elements
/// waiting in its line buffer, and the count at which it is written out.
///
/// A bin whose window is full (or absent) has `flush_at` 1 and `held` 0:
/// its next push reaches the count at once and finds, off the hot path,
/// that there is nowhere to write. A push then tests one count, where it
/// used to test the window's end as well, and the state every push reads
/// is 8 bytes a bin rather than 24 (16 KiB for 2^11 bins, not 48).
#[derive(Clone, Copy)]
struct Fill {
    held: u32,
    flush_at: u32,
}

impl Fill {
    const FULL: Fill = Fill {
        held: 0,
        flush_at: 1,
    };
}

/// Writes elements into many windows (`bins`), each filled front to back,
/// a cache line at a time (see the [module docs](self)).
///
/// A bin starts without a window; [`push`](LineWriter::push) hands an
/// element back when its bin's window is full (or absent), and the caller
/// then gives the bin its next window with
/// [`set_window`](LineWriter::set_window). Every element pushed is in its
/// window once the writer is [finished](LineWriter::finish) or dropped.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::line_writer::LineWriter;
///
/// let keys: Vec<u64> = (0..1000).map(|i| (i * 7919) % 1000).collect();
/// let mut low = vec![0u64; 500];
/// let mut high = vec![0u64; 500];
/// {
///     let mut out = LineWriter::new(2);
///     out.set_window(0, &mut low);
///     out.set_window(1, &mut high);
///     for &k in &keys {
///         out.push(usize::from(k >= 500), k).expect("the windows hold every key");
///     }
///     out.finish();
/// }
/// assert!(low.iter().all(|&k| k < 500) && high.iter().all(|&k| k >= 500));
/// let in_order: Vec<u64> = keys.iter().copied().filter(|&k| k < 500).collect();
/// assert_eq!(low, in_order);
/// ```
pub struct LineWriter<'a, T: Pod> {
    /// Per bin, what every push reads (see [`Fill`]); empty where `T` is
    /// not combined.
    fills: Vec<Fill>,
    /// Per bin, where its window stands; read when a line is written.
    windows: Vec<Window>,
    /// Per bin, its line buffer (empty where `T` is not combined).
    lines: Vec<Line>,
    _windows: PhantomData<&'a mut [T]>,
}

// SAFETY: the raw pointers in `windows` point into windows borrowed
// mutably for 'a (the `PhantomData` records the borrow); the writer owns
// that access exclusively, so moving it to another thread moves the
// access, as moving the `&'a mut [T]` would.
unsafe impl<T: Pod + Send> Send for LineWriter<'_, T> {}

impl<'a, T: Pod> LineWriter<'a, T> {
    /// Elements of `T` in a line.
    const PER_LINE: usize = LINE_BYTES / size_of_or_line::<T>();

    /// Whether elements of `T` go through line buffers here: where `T`'s
    /// size divides a line, on x86-64. Known when the code is compiled, so
    /// that a writer that does not combine has no test for it in its loop.
    const COMBINES: bool = cfg!(target_arch = "x86_64")
        && std::mem::size_of::<T>() > 0
        && LINE_BYTES % size_of_or_line::<T>() == 0
        && std::mem::size_of::<T>() <= LINE_BYTES
        && std::mem::align_of::<T>() <= LINE_BYTES
        && LINE_BYTES / size_of_or_line::<T>() > 1;

    /// A writer of `bins` bins, none with a window yet, that combines
    /// lines (where `T`'s size divides a line, on x86-64).
    ///
    /// # Cost
    ///
    /// Allocates 64 + 24 bytes per bin where `T` is combined, 16 where
    /// it is not.
    pub fn new(bins: usize) -> Self {
        let (fills, lines) = if Self::COMBINES {
            (vec![Fill::FULL; bins], vec![Line([0; LINE_BYTES]); bins])
        } else {
            (Vec::new(), Vec::new())
        };
        LineWriter {
            fills,
            windows: vec![Window::NONE; bins],
            lines,
            _windows: PhantomData,
        }
    }

    /// How a scatter of `counts[b]` elements into each bin b stores
    /// (see [`stores`](super::stores) for the policy): through line
    /// buffers only where `T` can be combined (its size divides a line, on
    /// x86-64) and many bins are busy at once. Where a few bins take most
    /// elements, their open lines stay in the cache and plain stores cost
    /// no extra read. "Many" is an effective number of bins, (Σc)² / Σc²,
    /// of [`COMBINE_MIN_BUSY`] or more. Under [`Stores::Auto`] a scatter
    /// of [`COMBINE_MIN_BYTES`] or more that could combine is timed and
    /// chooses by what earlier ones of its kind measured; a smaller one
    /// stays in the cache and stores plainly.
    ///
    /// Call [`StoreChoice::done`] when the scatter ends, so that a
    /// measured choice learns its time.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    /// use bsp_core::expert::stores::{set_stores, Stores};
    ///
    /// set_stores(Stores::Lines);
    /// let choice = LineWriter::<u64>::choose(&[1 << 20; 256]);
    /// assert_eq!(choice.lines(), cfg!(target_arch = "x86_64"));
    /// choice.done();
    /// assert!(!LineWriter::<u64>::choose(&[1 << 30, 10, 10, 10]).lines()); // one bin busy
    /// assert!(!LineWriter::<[u8; 3]>::choose(&[1 << 20; 256]).lines()); // 3 does not divide 64
    /// set_stores(Stores::Auto);
    /// assert!(!LineWriter::<u64>::choose(&[100; 256]).lines()); // 200 KiB: stays in the cache
    /// ```
    ///
    /// # Cost
    ///
    /// O(bins), and under [`Stores::Auto`] a lock of the process's table of
    /// what scatters learned.
    pub fn choose(counts: &[u64]) -> StoreChoice {
        let (sum, squares) = counts.iter().fold((0f64, 0f64), |(s, q), &c| {
            let c = c as f64;
            (s + c, q + c * c)
        });
        let bytes = sum * std::mem::size_of::<T>() as f64;
        let many = Self::COMBINES && sum * sum / squares >= COMBINE_MIN_BUSY;
        match stores() {
            Stores::Lines => StoreChoice::fixed(many),
            Stores::Auto if many && bytes >= COMBINE_MIN_BYTES as f64 => {
                StoreChoice::measured(std::mem::size_of::<T>(), counts.len(), bytes)
            }
            Stores::Auto | Stores::Plain => StoreChoice::fixed(false),
        }
    }

    /// Whether this writer combines lines.
    pub fn combines(&self) -> bool {
        Self::COMBINES
    }

    /// Gives `bin` its next window, after writing out what the bin holds
    /// into its current one.
    ///
    /// # Panics
    ///
    /// If `bin` is out of range.
    pub fn set_window(&mut self, bin: usize, window: &'a mut [T]) {
        self.flush(bin);
        let range = window.as_mut_ptr_range();
        self.windows[bin] = Window {
            at: range.start.cast(),
            end: range.end.cast(),
        };
        if Self::COMBINES {
            self.fills[bin] = self.next_fill(bin);
        }
    }

    /// Writes `x` as the next element of `bin`'s window, or hands it back
    /// when the window is full (or the bin has none). Zero-sized elements
    /// are never handed back.
    ///
    /// # Panics
    ///
    /// If `bin` is out of range.
    #[inline(always)]
    pub fn push(&mut self, bin: usize, x: T) -> Result<(), T> {
        let bins = self.windows.len();
        if bin >= bins {
            bin_out_of_range(bin, bins);
        }
        let size = std::mem::size_of::<T>();
        if size == 0 {
            // Nothing to write, and no window ever fills.
            return Ok(());
        }
        if !Self::COMBINES {
            let w = &mut self.windows[bin];
            if w.at == w.end {
                return Err(x);
            }
            // SAFETY: `at` < `end`, so `at` points at an element of the
            // window (a slice of `T`, so aligned for `T`), which the
            // writer borrows mutably for 'a.
            unsafe {
                w.at.cast::<T>().write(x);
                w.at = w.at.add(size);
            }
            return Ok(());
        }
        // SAFETY: the writer combines, so its three vectors have a slot
        // per bin, and `bin` is in range; `&mut self` borrows them all,
        // and the references made here end with the call.
        unsafe {
            let (fills, lines) = (self.fills.as_mut_ptr(), self.lines.as_mut_ptr());
            let windows = self.windows.as_mut_ptr();
            push_held(&mut *fills.add(bin), &mut *lines.add(bin), x, || {
                &mut *windows.add(bin)
            })
        }
    }

    /// Pushes every key of `keys`, in order, into bin `bin_of(key)`; where
    /// a bin's window is full (or absent), asks `next_window(bin)` for
    /// the bin's next window (again while it gives empty ones). The same
    /// as calling [`push`](LineWriter::push) for each key and
    /// [`set_window`](LineWriter::set_window) where one comes back, in a
    /// loop that keeps the writer's state in registers. A caller's own
    /// loop over `push` that refills in a function given the writer makes
    /// the writer's address escape, and the loop then reloads the writer's
    /// fields from memory for every key: the sort's scatter of 2^25 pairs
    /// per processor into 2^11 digits, written that way, made a reused
    /// sort of 2^26 pairs take 0.296–0.304 s, against 0.275–0.276 through
    /// this (BENCHMARKS.md, section 13f).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    ///
    /// let keys: Vec<u32> = (0..100).rev().collect();
    /// let mut out = vec![0u32; 100];
    /// let (even, odd) = out.split_at_mut(50);
    /// let mut windows = [Some(even), Some(odd)];
    /// let mut writer = LineWriter::new(2);
    /// writer.push_all(&keys, |k| (k % 2) as usize, |bin| {
    ///     windows[bin].take().expect("one window a bin")
    /// });
    /// writer.finish();
    /// assert_eq!(out[..3], [98, 96, 94]);
    /// assert_eq!(out[50..53], [99, 97, 95]);
    /// ```
    ///
    /// # Panics
    ///
    /// If `bin_of` gives a bin out of range, or where `next_window` does.
    ///
    /// # Cost
    ///
    /// Local: a read of `keys` (requested ahead, see
    /// [`prefetch::lines`]) and their writes.
    pub fn push_all(
        &mut self,
        keys: &[T],
        bin_of: impl Fn(&T) -> usize,
        next_window: impl FnMut(usize) -> &'a mut [T],
    ) {
        self.push_all_as(keys, bin_of, |&x| x, next_window);
    }

    /// [`push_all`](LineWriter::push_all) of `as_element(key)` for each
    /// key of `keys`, into bin `bin_of(key)`: the keys are read as one
    /// type and written as another (a key's low bits, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    ///
    /// let keys: Vec<u32> = (0..100).map(|k| k * 1000).collect();
    /// let mut out = vec![0u16; 100];
    /// let mut window = Some(&mut out[..]);
    /// let mut writer = LineWriter::new(1);
    /// writer.push_all_as(&keys, |_| 0, |&k| k as u16, |_| window.take().expect("one window"));
    /// writer.finish();
    /// assert_eq!(out[70], 70_000u32 as u16);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`push_all`](LineWriter::push_all).
    ///
    /// # Cost
    ///
    /// That of [`push_all`](LineWriter::push_all), with the writes the
    /// size of `T`.
    pub fn push_all_as<K: Copy>(
        &mut self,
        keys: &[K],
        bin_of: impl Fn(&K) -> usize,
        as_element: impl Fn(&K) -> T,
        mut next_window: impl FnMut(usize) -> &'a mut [T],
    ) {
        if !Self::COMBINES {
            for key in keys {
                let bin = bin_of(key);
                let mut x = as_element(key);
                while let Err(back) = self.push(bin, x) {
                    x = back;
                    self.set_window(bin, next_window(bin));
                }
            }
            return;
        }
        let bins = self.windows.len();
        let (fills, lines) = (self.fills.as_mut_ptr(), self.lines.as_mut_ptr());
        let windows = self.windows.as_mut_ptr();
        for piece in prefetch::lines(keys) {
            for key in piece {
                let bin = bin_of(key);
                if bin >= bins {
                    bin_out_of_range(bin, bins);
                }
                let x = as_element(key);
                // SAFETY: the three vectors have a slot per bin (the
                // writer combines) and `bin` is in range; they are not
                // resized while these pointers live, and nothing else
                // borrows them during the call.
                let pushed = unsafe {
                    push_held(&mut *fills.add(bin), &mut *lines.add(bin), x, || {
                        &mut *windows.add(bin)
                    })
                };
                if let Err(back) = pushed {
                    self.refill(bin, back, &mut next_window);
                }
            }
        }
    }

    /// Gives `bin` windows from `next_window` until `x` is written.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, bin: usize, mut x: T, next_window: &mut impl FnMut(usize) -> &'a mut [T]) {
        loop {
            self.set_window(bin, next_window(bin));
            match self.push(bin, x) {
                Ok(()) => return,
                Err(back) => x = back,
            }
        }
    }

    /// Writes out everything the bins hold; then every element pushed is
    /// in its window.
    pub fn finish(mut self) {
        self.flush_all();
    }

    /// Writes out everything the bins hold, as [`finish`](LineWriter::finish)
    /// does, and hands back what is left of each bin's window (empty for a
    /// bin without one), for the rest of a scatter to fill by other means.
    /// (For zero-sized elements, which are never written, every window
    /// comes back empty.)
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    ///
    /// let mut out = vec![0u32; 100];
    /// let mut writer = LineWriter::new(1);
    /// writer.set_window(0, &mut out);
    /// for k in 0..60 {
    ///     writer.push(0, k).unwrap();
    /// }
    /// let mut rest = writer.into_windows();
    /// rest[0].iter_mut().for_each(|x| *x = 7);
    /// assert_eq!(out[59..61], [59, 7]);
    /// ```
    ///
    /// # Cost
    ///
    /// O(bins), and the held elements' writes.
    pub fn into_windows(mut self) -> Vec<&'a mut [T]> {
        self.flush_all();
        let size = std::mem::size_of::<T>().max(1);
        std::mem::take(&mut self.windows)
            .into_iter()
            .map(|w| {
                if w.at.is_null() {
                    return &mut [][..];
                }
                // SAFETY: `at..end` is the unwritten rest of the bin's
                // window, a slice of `T` borrowed mutably for 'a that the
                // writer gives up here (its windows are taken, so it
                // writes nothing more); windows of different bins are
                // disjoint, as `&'a mut` slices handed to `set_window`.
                unsafe { std::slice::from_raw_parts_mut(w.at.cast::<T>(), w.left(size)) }
            })
            .collect()
    }

    fn flush_all(&mut self) {
        for bin in 0..self.windows.len() {
            self.flush(bin);
        }
        fence();
    }

    /// Writes out what `bin` holds, whatever its count.
    fn flush(&mut self, bin: usize) {
        if Self::COMBINES && self.fills[bin].held > 0 {
            self.write_out(bin);
        }
    }

    fn write_out(&mut self, bin: usize) {
        write_out::<T>(
            &mut self.fills[bin],
            &self.lines[bin],
            &mut self.windows[bin],
        );
    }

    /// See [`next_fill`].
    fn next_fill(&self, bin: usize) -> Fill {
        next_fill::<T>(&self.windows[bin])
    }
}

/// Stores `x` as the next held element of a bin (its fill, line buffer
/// and window, the window fetched only when the line is due) and, at its
/// count, writes the held elements out; hands `x` back if the window has
/// no room. The usual write, a whole aligned line with another whole line
/// after it in the window, is inline; the rest is not.
///
/// # Safety
///
/// `T` must combine ([`LineWriter::COMBINES`]), and `fill` and `window`
/// must be a bin's state as the writer keeps it (`held` < `flush_at` ≤
/// the elements to the window's next line boundary or end).
#[inline(always)]
unsafe fn push_held<'w, T: Pod>(
    fill: &mut Fill,
    line: &mut Line,
    x: T,
    window: impl FnOnce() -> &'w mut Window,
) -> Result<(), T> {
    let size = std::mem::size_of::<T>();
    let Fill { held, flush_at } = *fill;
    // SAFETY: `held` < `flush_at` ≤ PER_LINE, so the element lies in the
    // line buffer, aligned to 64 ≥ align_of T; `held * size` is a
    // multiple of `size`, itself a multiple of T's alignment.
    unsafe {
        whole::copy(
            &mut *line.0.as_mut_ptr().add(held as usize * size).cast::<T>(),
            &x,
        );
    }
    if held + 1 != flush_at {
        fill.held = held + 1;
        return Ok(());
    }
    let w = window();
    let whole_line = flush_at as usize * size == LINE_BYTES && w.at as usize % LINE_BYTES == 0;
    if whole_line && w.end as usize - w.at as usize >= 2 * LINE_BYTES {
        // SAFETY: `at` is aligned to a line and two lines are left in
        // the window (borrowed mutably by the writer), so the one written
        // lies in it and the next count is a whole line again.
        unsafe {
            stream_line(line.0.as_ptr(), w.at);
            w.at = w.at.add(LINE_BYTES);
        }
        fill.held = 0;
        return Ok(());
    }
    line_edge(fill, line, w, x)
}

/// The panic of a bin out of range, out of the loop that finds it (whose
/// registers the message's arguments would otherwise claim).
#[cold]
#[inline(never)]
fn bin_out_of_range(bin: usize, bins: usize) -> ! {
    panic!("bsp: bin {bin} of a line writer of {bins} bins")
}

/// [`push_held`] at a window's edge: its unaligned head, its last line,
/// or no room at all.
#[cold]
#[inline(never)]
fn line_edge<T: Pod>(fill: &mut Fill, line: &Line, w: &mut Window, x: T) -> Result<(), T> {
    if w.at == w.end {
        // Full (or absent): `x` was stored in slot 0 of a buffer that
        // holds nothing.
        return Err(x);
    }
    fill.held += 1;
    write_out::<T>(fill, line, w);
    Ok(())
}

/// Writes the `held` elements of a bin's line buffer at its window's next
/// element: one aligned line by non-temporal stores when full, else a
/// plain copy; then sets the bin's next count.
fn write_out<T: Pod>(fill: &mut Fill, line: &Line, w: &mut Window) {
    let bytes = fill.held as usize * std::mem::size_of::<T>();
    let line = line.0.as_ptr();
    // SAFETY: `held` ≤ `flush_at`, which `next_fill` bounds by the
    // elements left in the window, so `at..at + bytes` lies in the window
    // (borrowed mutably by the writer, and disjoint from the line buffer,
    // which the writer owns).
    unsafe {
        if bytes == LINE_BYTES && w.at as usize % LINE_BYTES == 0 {
            stream_line(line, w.at);
        } else {
            std::ptr::copy_nonoverlapping(line, w.at, bytes);
        }
        w.at = w.at.add(bytes);
    }
    *fill = next_fill::<T>(w);
}

/// The fill of a bin with nothing held: elements to hold before its next
/// write, to the next line boundary of its window (a whole line once
/// aligned), at most what is left of the window; [`Fill::FULL`] when the
/// window is full (or absent).
fn next_fill<T: Pod>(w: &Window) -> Fill {
    let size = std::mem::size_of::<T>().max(1);
    let left = if w.at.is_null() { 0 } else { w.left(size) };
    if left == 0 {
        return Fill::FULL;
    }
    let into_line = w.at as usize % LINE_BYTES;
    let to_boundary = if into_line == 0 {
        LineWriter::<T>::PER_LINE
    } else if into_line % size == 0 {
        (LINE_BYTES - into_line) / size
    } else {
        // Elements never meet a line boundary: plain writes of a line's
        // worth at a time.
        LineWriter::<T>::PER_LINE
    };
    Fill {
        held: 0,
        flush_at: to_boundary.min(left) as u32,
    }
}

impl<T: Pod> Drop for LineWriter<'_, T> {
    fn drop(&mut self) {
        self.flush_all();
    }
}

/// `size_of::<T>()`, or a line for zero-sized types (so that
/// `PER_LINE` is defined; they are written straight through).
const fn size_of_or_line<T>() -> usize {
    match std::mem::size_of::<T>() {
        0 => LINE_BYTES,
        n if n > LINE_BYTES => LINE_BYTES,
        n => n,
    }
}

/// Copies the 64-byte line at `from` to `to` (aligned to 64) with
/// non-temporal stores.
///
/// # Safety
///
/// `from` must be valid for reading 64 bytes (any alignment: the loads
/// are unaligned ones, as fast as aligned ones where the line is
/// aligned), `to` valid for writing 64 bytes and aligned to 64.
#[inline(always)]
pub(super) unsafe fn stream_line(from: *const u8, to: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let (from, to) = (from.cast::<__m128i>(), to.cast::<__m128i>());
        // SAFETY: SSE2 is part of x86-64; the four 16-byte loads and
        // stores stay within the 64 bytes the caller vouches for, the
        // stores at the alignment it vouches for.
        unsafe {
            _mm_stream_si128(to, _mm_loadu_si128(from));
            _mm_stream_si128(to.add(1), _mm_loadu_si128(from.add(1)));
            _mm_stream_si128(to.add(2), _mm_loadu_si128(from.add(2)));
            _mm_stream_si128(to.add(3), _mm_loadu_si128(from.add(3)));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as the caller vouches.
    unsafe {
        std::ptr::copy_nonoverlapping(from, to, LINE_BYTES)
    };
}

/// Orders the non-temporal stores before any later store (another thread
/// reading the windows learns of them through a later synchronisation).
pub(super) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` needs SSE, which every x86-64 processor has.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stable scatter of `keys` by `bin`, by plain stores.
    fn expected<T: Pod>(keys: &[T], bins: usize, bin: &impl Fn(&T) -> usize) -> Vec<T> {
        let mut starts = vec![0usize; bins];
        keys.iter().for_each(|k| starts[bin(k)] += 1);
        let mut at = 0;
        for s in starts.iter_mut() {
            (*s, at) = (at, at + *s);
        }
        let mut out = vec![T::zeroed(); keys.len()];
        for k in keys {
            out[starts[bin(k)]] = *k;
            starts[bin(k)] += 1;
        }
        out
    }

    /// Scatters `keys` by `bin` into `out` through a writer, each bin's
    /// range cut into two windows (the first a third of it), by `push`
    /// and `set_window` or (`all`) by `push_all`.
    fn scatter_through<T: Pod>(
        keys: &[T],
        bins: usize,
        bin: &impl Fn(&T) -> usize,
        out: &mut [T],
        all: bool,
    ) {
        let mut counts = vec![0usize; bins];
        keys.iter().for_each(|k| counts[bin(k)] += 1);
        let mut windows: Vec<Vec<&mut [T]>> = Vec::new();
        let mut rest = out;
        for &count in &counts {
            let (mine, tail) = rest.split_at_mut(count);
            rest = tail;
            let (a, b) = mine.split_at_mut(count / 3);
            windows.push(vec![a, b]);
        }
        let mut writer = LineWriter::new(bins);
        let mut next = vec![0usize; bins];
        let mut next_window = |d: usize| {
            next[d] += 1;
            std::mem::take(&mut windows[d][next[d] - 1])
        };
        if all {
            writer.push_all(keys, bin, next_window);
        } else {
            for k in keys {
                let d = bin(k);
                let mut x = *k;
                while let Err(back) = writer.push(d, x) {
                    x = back;
                    writer.set_window(d, next_window(d));
                }
            }
        }
        writer.finish();
    }

    /// Scatters `keys` by `bin` into windows cut from one output vector
    /// `offset` elements into its buffer, so that windows start at every
    /// alignment, both ways, and compares with a plain stable scatter.
    fn check<T: Pod + PartialEq + std::fmt::Debug>(
        keys: &[T],
        bins: usize,
        bin: impl Fn(&T) -> usize,
        offset: usize,
    ) {
        let want = expected(keys, bins, &bin);
        for all in [false, true] {
            let mut buffer = vec![T::zeroed(); keys.len() + offset];
            scatter_through(keys, bins, &bin, &mut buffer[offset..], all);
            assert_eq!(&buffer[offset..], &want[..], "push_all: {all}");
        }
    }

    #[test]
    fn elements_that_never_meet_a_line_boundary_are_written_plainly() {
        // 4-byte elements of alignment 1, a byte or three off a multiple
        // of 4: their windows never reach a line boundary.
        let keys: Vec<[u8; 4]> = (0..3000u32)
            .map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
            .collect();
        let bin = |k: &[u8; 4]| usize::from(k[1] % 40);
        let want = expected(&keys, 40, &bin);
        for shift in 1..4 {
            for all in [false, true] {
                let mut bytes = vec![0u8; 4 * keys.len() + 4];
                let out: &mut [[u8; 4]] =
                    bytemuck::cast_slice_mut(&mut bytes[shift..shift + 4 * keys.len()]);
                scatter_through(&keys, 40, &bin, out, all);
                assert_eq!(out, &want[..], "shift {shift}, push_all: {all}");
            }
        }
    }

    #[test]
    fn the_writer_scatters_stably_at_every_alignment() {
        let keys64: Vec<u64> = (0..5000u64)
            .map(|i| (i * 2_654_435_761) % 100_003)
            .collect();
        let keys32: Vec<u32> = keys64.iter().map(|&k| k as u32).collect();
        let pairs: Vec<[u32; 2]> = keys32
            .iter()
            .enumerate()
            .map(|(i, &k)| [k, i as u32])
            .collect();
        let wide: Vec<[u64; 2]> = keys64.iter().map(|&k| [k, !k]).collect();
        let odd: Vec<[u8; 3]> = keys32
            .iter()
            .map(|&k| [k as u8, (k >> 8) as u8, 1])
            .collect();
        for offset in 0..9 {
            check(&keys64, 37, |k| (*k % 37) as usize, offset);
            check(&keys32, 300, |k| (*k % 300) as usize, offset);
            check(&pairs, 5, |k| (k[0] % 5) as usize, offset);
            check(&wide, 64, |k| (k[0] % 64) as usize, offset);
            check(&odd, 7, |k| (k[0] % 7) as usize, offset);
        }
    }

    #[test]
    fn a_full_or_missing_window_hands_the_element_back() {
        let mut out = [0u32; 3];
        let mut writer = LineWriter::new(2);
        assert_eq!(writer.push(1, 9), Err(9));
        writer.set_window(0, &mut out);
        for x in 1..=3 {
            assert_eq!(writer.push(0, x), Ok(()));
        }
        assert_eq!(writer.push(0, 4), Err(4));
        drop(writer); // dropping writes out too
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    #[should_panic(expected = "bin 2 of a line writer of 2 bins")]
    fn a_push_to_a_bin_out_of_range_panics() {
        let mut writer = LineWriter::<u64>::new(2);
        let _ = writer.push(2, 7);
    }

    #[test]
    #[should_panic(expected = "bin 4 of a line writer of 4 bins")]
    fn a_push_of_elements_not_combined_to_a_bin_out_of_range_panics() {
        // 3-byte elements never share a line evenly: the plain path.
        let mut writer = LineWriter::<[u8; 3]>::new(4);
        let _ = writer.push(4, [1, 2, 3]);
    }

    #[test]
    #[should_panic(expected = "bin 5 of a line writer of 3 bins")]
    fn push_all_to_a_bin_out_of_range_panics() {
        let mut out = [0u64; 4];
        let mut writer = LineWriter::new(3);
        writer.set_window(0, &mut out);
        writer.push_all(
            &[0u64, 5],
            |k| *k as usize,
            |_| panic!("no window asked for"),
        );
    }
}
