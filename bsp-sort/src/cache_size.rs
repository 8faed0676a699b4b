//! The sizes of a core's first- and second-level data caches, which the
//! radix sort's top digit is sized by.
//!
//! A top-first sort leaves each bucket to be sorted by the lower digits on
//! one core, in its cache: the bucket and a scratch copy of it, read and
//! written once per local pass. Their size is what the top digit's width
//! decides (n / 2^bits elements a bucket), so the sort reads the cache's
//! size from the machine rather than assuming one: per core, the AMD VMs
//! of BENCHMARKS.md have 512 KiB or 1 MiB of L2 and the Intel ones 2 MiB.
//! The scatter to the buckets' owners keeps a 64-byte line buffer per
//! bucket, which is fastest where they all fit in the L1.

use std::sync::OnceLock;

/// The L2 size taken where the machine does not say (not Linux, or no
/// `sysfs`): a middle value among current servers' (512 KiB to 2 MiB).
const DEFAULT_L2_BYTES: u64 = 1 << 20;

/// The L1 data cache size taken where the machine does not say: the
/// smallest among current servers' (32 to 48 KiB).
const DEFAULT_L1D_BYTES: u64 = 32 << 10;

/// The bytes of the L2 cache of the first processor, as Linux reports it
/// under `/sys/devices/system/cpu/cpu0/cache`, or [`DEFAULT_L2_BYTES`].
/// Read once per process.
pub(crate) fn l2_bytes() -> u64 {
    static L2: OnceLock<u64> = OnceLock::new();
    *L2.get_or_init(|| read_cache(2).unwrap_or(DEFAULT_L2_BYTES))
}

/// The bytes of the L1 data cache of the first processor, as
/// [`l2_bytes`] reads the L2, or [`DEFAULT_L1D_BYTES`].
pub(crate) fn l1d_bytes() -> u64 {
    static L1D: OnceLock<u64> = OnceLock::new();
    *L1D.get_or_init(|| read_cache(1).unwrap_or(DEFAULT_L1D_BYTES))
}

/// The size of cpu0's data or unified cache of `level`, from `sysfs`.
fn read_cache(level: u32) -> Option<u64> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let level = level.to_string();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let field = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        let at_level = field("level");
        let kind = field("type");
        if at_level.as_deref().map(str::trim) == Some(level.as_str())
            && matches!(kind.as_deref().map(str::trim), Some("Data" | "Unified"))
        {
            return field("size").and_then(|s| parse_size(&s));
        }
    }
    None
}

/// A cache size as `sysfs` writes it (`1024K`, `2M`, `32768K`, or bytes).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, 'K') => (&text[..i], 1 << 10),
        (i, 'M') => (&text[..i], 1 << 20),
        (i, 'G') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    let size = digits.parse::<u64>().ok()?.checked_mul(unit)?;
    (size > 0).then_some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_size("1024K\n"), Some(1 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("524288"), Some(1 << 19));
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn the_caches_are_read_or_assumed() {
        let l2 = l2_bytes();
        assert!((1 << 15..=1 << 30).contains(&l2), "{l2} bytes");
        let l1d = l1d_bytes();
        assert!((1 << 12..=1 << 22).contains(&l1d), "{l1d} bytes");
        assert!(l1d < l2);
    }
}
