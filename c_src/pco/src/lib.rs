//! pcodec's standalone format (numcodecs `PCodec`: `pcodec.standalone.simple_compress`) for the
//! ExZarr NIF, with a C interface (`c_src/pcocodec.h`). Data is packed native-order numbers of
//! one type; nothing here panics across the interface (a panic becomes an error).

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use half::f16;
use pco::data_types::Number;
use pco::standalone::{simple_compress, simple_decompress_into};
use pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};

/// The allocator of this library: the system's, except that freed blocks of at least `BIG_BLOCK`
/// bytes are kept (up to `KEPT_BYTES` in all) for the next allocation of the same layout. pco
/// allocates tens of megabytes of working memory per call; the BEAM fixes malloc's mmap
/// threshold, so without this every call maps fresh pages and page faults take half the time
/// of an encode (numcodecs' Python process keeps them in malloc's heap). Blocks kept unused
/// for a while go back to the system (`xz_pco_release_idle`, called by the NIF's trimmer
/// thread), so an idle program does not hold them.
struct KeepBigBlocks;

const BIG_BLOCK: usize = 64 << 10;
const KEPT_BYTES: usize = 64 << 20;

/// A freed big block: its address, its layout, and when it was freed.
type Kept = (usize, Layout, Instant);

/// Freed big blocks, oldest first, and their total size.
static KEPT: Mutex<(Vec<Kept>, usize)> = Mutex::new((Vec::new(), 0));

impl KeepBigBlocks {
    /// A kept block of exactly `layout`, if any.
    fn take(layout: Layout) -> Option<*mut u8> {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        let i = kept.0.iter().position(|&(_, l, _)| l == layout)?;
        let (ptr, _, _) = kept.0.remove(i);
        kept.1 -= layout.size();
        Some(ptr as *mut u8)
    }
}

// SAFETY: every block comes from `System` with the layout it is kept under, and is handed out
// once (taken out of `KEPT` under the lock) or returned to `System` once.
unsafe impl GlobalAlloc for KeepBigBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= BIG_BLOCK {
            if let Some(ptr) = Self::take(layout) {
                return ptr;
            }
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= BIG_BLOCK {
            if let Some(ptr) = Self::take(layout) {
                std::ptr::write_bytes(ptr, 0, layout.size());
                return ptr;
            }
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() < BIG_BLOCK || layout.size() > KEPT_BYTES {
            return System.dealloc(ptr, layout);
        }
        let mut evicted = Vec::new();
        {
            let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
            kept.0.push((ptr as usize, layout, Instant::now()));
            kept.1 += layout.size();
            while kept.1 > KEPT_BYTES {
                let (p, l, _) = kept.0.remove(0);
                kept.1 -= l.size();
                evicted.push((p, l));
            }
        }
        for (p, l) in evicted {
            System.dealloc(p as *mut u8, l);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.size() < BIG_BLOCK && new_size < BIG_BLOCK {
            return System.realloc(ptr, layout, new_size);
        }
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let new = self.alloc(new_layout);
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: KeepBigBlocks = KeepBigBlocks;

/// Gives back to the system the kept blocks freed more than `idle_ms` milliseconds ago;
/// returns the bytes still kept.
#[no_mangle]
pub extern "C" fn xz_pco_release_idle(idle_ms: u64) -> usize {
    let idle = Duration::from_millis(idle_ms);
    let mut released = Vec::new();
    let left = {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        // (oldest first: the idle ones are a prefix)
        let n = kept
            .0
            .iter()
            .take_while(|&&(_, _, at)| at.elapsed() >= idle)
            .count();
        released.extend(kept.0.drain(..n).map(|(p, l, _)| (p, l)));
        kept.1 -= released.iter().map(|&(_, l)| l.size()).sum::<usize>();
        kept.1
    };
    for (p, l) in released {
        // SAFETY: each block came from `System` with this layout and left `KEPT` above.
        unsafe { System.dealloc(p as *mut u8, l) };
    }
    left
}

/// Number types, as in `pcocodec.h`.
const U16: u32 = 1;
const U32: u32 = 2;
const U64: u32 = 3;
const I16: u32 = 4;
const I32: u32 = 5;
const I64: u32 = 6;
const F16: u32 = 7;
const F32: u32 = 8;
const F64: u32 = 9;

/// A compressed buffer handed to C, released by `xz_pco_free`.
#[repr(C)]
pub struct XzPcoBuf {
    data: *mut u8,
    len: usize,
    cap: usize,
}

/// Compression settings, as in `pcocodec.h`.
#[repr(C)]
pub struct XzPcoConfig {
    level: u32,
    /// 0 auto, 1 classic
    mode: u32,
    /// 0 auto, 1 none, 2 try_consecutive (with `delta_order`), 3 try_lookback
    delta: u32,
    delta_order: u32,
    page_n: u64,
}

fn chunk_config(c: &XzPcoConfig) -> Result<ChunkConfig, String> {
    if c.level > 12 {
        return Err(format!("level {} is not in 0..12", c.level));
    }
    let mode = match c.mode {
        0 => ModeSpec::Auto,
        1 => ModeSpec::Classic,
        m => return Err(format!("unknown mode_spec {}", m)),
    };
    let delta = match (c.delta, c.delta_order) {
        (0, _) => DeltaSpec::Auto,
        (1, _) => DeltaSpec::None,
        (2, order) if order <= 7 => DeltaSpec::TryConsecutive(order as usize),
        (3, _) => DeltaSpec::TryLookback,
        (d, o) => return Err(format!("invalid delta_spec {} (order {})", d, o)),
    };
    if c.page_n == 0 || c.page_n > (1 << 24) {
        return Err(format!("equal_pages_up_to {} is not in 1..2^24", c.page_n));
    }
    Ok(ChunkConfig::default()
        .with_compression_level(c.level as usize)
        .with_mode_spec(mode)
        .with_delta_spec(delta)
        .with_paging_spec(PagingSpec::EqualPagesUpTo(c.page_n as usize)))
}

/// The numbers of `bytes`, copied when they are not aligned for `T`.
fn numbers<T: Number>(bytes: &[u8]) -> std::borrow::Cow<'_, [T]> {
    let n = bytes.len() / std::mem::size_of::<T>();
    if bytes.as_ptr() as usize % std::mem::align_of::<T>() == 0 {
        // SAFETY: aligned, in bounds, and every bit pattern is a valid number.
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(bytes.as_ptr() as *const T, n)
        })
    } else {
        let mut v = vec![T::default(); n];
        // SAFETY: v holds exactly n * size_of::<T>() bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                v.as_mut_ptr() as *mut u8,
                n * std::mem::size_of::<T>(),
            )
        };
        std::borrow::Cow::Owned(v)
    }
}

/// Chunks (one per page in the standalone format) with fewer numbers than this are read back
/// after compression when delta encoding may be lookback.
const CHECKED_CHUNK_N: u64 = 16;

/// Whether `n` numbers compressed with `c` must be read back: pco 0.4.9 writes a chunk it cannot
/// read when lookback delta encoding meets a chunk of a single number (a scan of every type,
/// level, mode and delta setting over many sizes and page sizes found no other case). Chunks
/// split `n` into equal parts of at most `page_n`; the smallest is checked, with a margin.
fn needs_check(c: &XzPcoConfig, n: u64) -> bool {
    let lookback = matches!(c.delta, 0 | 3);
    lookback && n > 0 && n / n.div_ceil(c.page_n) < CHECKED_CHUNK_N
}

/// Compresses, reading the result back where pco 0.4.9 may have written data it cannot read
/// (see `needs_check`), which must be an error here rather than a chunk lost on the next read.
fn compress<T: Number>(
    bytes: &[u8],
    raw: &XzPcoConfig,
    config: &ChunkConfig,
) -> Result<Vec<u8>, String> {
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 {
        return Err("data is not a whole number of elements".into());
    }
    let compressed = simple_compress(&numbers::<T>(bytes), config).map_err(|e| e.to_string())?;
    if !needs_check(raw, (bytes.len() / size) as u64) {
        return Ok(compressed);
    }
    let mut check = vec![0u8; bytes.len()];
    match decompress::<T>(&compressed, &mut check) {
        Ok(()) if check == bytes => Ok(compressed),
        _ => Err(
            "pcodec cannot encode these numbers with these settings (pco 0.4.9 would write \
                  data it cannot read back); use other settings"
                .into(),
        ),
    }
}

/// Decompresses exactly `out.len() / size_of::<T>()` numbers of type `T` into `out`.
fn decompress<T: Number>(src: &[u8], out: &mut [u8]) -> Result<(), String> {
    let size = std::mem::size_of::<T>();
    if out.len() % size != 0 {
        return Err("output is not a whole number of elements".into());
    }
    let n = out.len() / size;
    let aligned = out.as_ptr() as usize % std::mem::align_of::<T>() == 0;
    let mut copy: Vec<T> = if aligned {
        Vec::new()
    } else {
        vec![T::default(); n]
    };
    let dst: &mut [T] = if aligned {
        // SAFETY: aligned, in bounds, exclusively borrowed, any bit pattern valid.
        unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut T, n) }
    } else {
        &mut copy
    };
    let progress = simple_decompress_into(src, dst).map_err(|e| e.to_string())?;
    if progress.n_processed != n {
        return Err(format!(
            "the data holds {} numbers, the chunk {}",
            progress.n_processed, n
        ));
    }
    if !progress.finished {
        return Err(format!(
            "the data holds more than the chunk's {} numbers",
            n
        ));
    }
    if !aligned {
        // SAFETY: copy holds exactly out.len() bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(copy.as_ptr() as *const u8, out.as_mut_ptr(), out.len())
        };
    }
    Ok(())
}

macro_rules! by_type {
    ($dtype:expr, $f:ident, $($arg:expr),*) => {
        match $dtype {
            U16 => $f::<u16>($($arg),*),
            U32 => $f::<u32>($($arg),*),
            U64 => $f::<u64>($($arg),*),
            I16 => $f::<i16>($($arg),*),
            I32 => $f::<i32>($($arg),*),
            I64 => $f::<i64>($($arg),*),
            F16 => $f::<f16>($($arg),*),
            F32 => $f::<f32>($($arg),*),
            F64 => $f::<f64>($($arg),*),
            other => Err(format!("unsupported number type {}", other)),
        }
    };
}

/// Writes `msg` (truncated) as a C string into `err` (`cap` bytes).
fn set_error(err: *mut u8, cap: usize, msg: &str) -> i32 {
    if !err.is_null() && cap > 0 {
        let n = msg.len().min(cap - 1);
        // SAFETY: the caller gives `cap` writable bytes at `err`.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), err, n);
            *err.add(n) = 0;
        }
    }
    -1
}

fn guarded<F: FnOnce() -> Result<(), String>>(err: *mut u8, cap: usize, f: F) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(msg)) => set_error(err, cap, &msg),
        Err(_) => set_error(err, cap, "pcodec failed on this data"),
    }
}

/// Compresses `len` bytes of numbers of `dtype` into a new buffer (`*out`, freed with
/// `xz_pco_free`). 0 on success, -1 with a message in `err` otherwise.
///
/// # Safety
/// `src` points to `len` readable bytes, `config` and `out` are valid, `err` has `err_cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn xz_pco_compress(
    dtype: u32,
    src: *const u8,
    len: usize,
    config: *const XzPcoConfig,
    out: *mut XzPcoBuf,
    err: *mut u8,
    err_cap: usize,
) -> i32 {
    let bytes = if len == 0 {
        &[][..]
    } else {
        std::slice::from_raw_parts(src, len)
    };
    let raw = &*config;
    guarded(err, err_cap, || {
        let config = chunk_config(raw)?;
        let mut v = by_type!(dtype, compress, bytes, raw, &config)?;
        let buf = XzPcoBuf {
            data: v.as_mut_ptr(),
            len: v.len(),
            cap: v.capacity(),
        };
        std::mem::forget(v);
        *out = buf;
        Ok(())
    })
}

/// Releases a buffer of `xz_pco_compress`.
///
/// # Safety
/// `buf` was filled by `xz_pco_compress` and is released once.
#[no_mangle]
pub unsafe extern "C" fn xz_pco_free(buf: *mut XzPcoBuf) {
    let b = &mut *buf;
    if !b.data.is_null() {
        drop(Vec::from_raw_parts(b.data, b.len, b.cap));
        b.data = std::ptr::null_mut();
    }
}

/// Decompresses a standalone pcodec file of numbers of `dtype` into exactly `out_len` bytes at
/// `out`: an error unless it holds exactly that many numbers of that type.
///
/// # Safety
/// `src` has `len` readable bytes, `out` `out_len` writable bytes, `err` `err_cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn xz_pco_decompress(
    dtype: u32,
    src: *const u8,
    len: usize,
    out: *mut u8,
    out_len: usize,
    err: *mut u8,
    err_cap: usize,
) -> i32 {
    let src = if len == 0 {
        &[][..]
    } else {
        std::slice::from_raw_parts(src, len)
    };
    let out = if out_len == 0 {
        &mut [][..]
    } else {
        std::slice::from_raw_parts_mut(out, out_len)
    };
    guarded(err, err_cap, || by_type!(dtype, decompress, src, out))
}
