//! The test binary's allocator: the system's, counting the bytes live on the heap for the whole
//! process (for the overload tests, which run alone in a process of their own) and per thread
//! (for the hostile-server tests, which decode on the test's own thread).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// The process-wide peak costs a contended `fetch_max` per allocation: kept only when asked.
static TRACK_PEAK: AtomicBool = AtomicBool::new(false);

thread_local! {
    static THREAD_LIVE: Cell<isize> = const { Cell::new(0) };
    static THREAD_PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    if TRACK_PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
    // `try_with`: a thread's locals may be gone while it frees what it held.
    let _ = THREAD_LIVE.try_with(|t| {
        let now = t.get() + n;
        t.set(now);
        let _ = THREAD_PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The bytes live on the heap of the whole process now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed).max(0) as usize
}

/// Starts keeping the process-wide peak, from the bytes live now.
pub fn reset_peak() -> usize {
    let now = LIVE.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    TRACK_PEAK.store(true, Ordering::Relaxed);
    now.max(0) as usize
}

/// The most the whole process held at once since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed).max(0) as usize
}

/// The most this thread held at once while `f` ran, above what it held before.
pub async fn peak_during<T>(f: impl std::future::Future<Output = T>) -> (T, usize) {
    let base = THREAD_LIVE.with(Cell::get);
    THREAD_PEAK.with(|p| p.set(base));
    let out = f.await;
    let peak = THREAD_PEAK.with(Cell::get) - base;
    (out, peak.max(0) as usize)
}
