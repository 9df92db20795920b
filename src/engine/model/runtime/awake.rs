//! Keeps the rayon pool's other workers awake through one forward pass, so that each of the
//! pass's few hundred parallel steps does not start by waking a sleeping thread.
//!
//! An idle rayon worker yields a few dozen times and then sleeps on a futex; the next
//! parallel step wakes it with a system call, which in a virtual machine is an inter-processor
//! interrupt as well. Between two matmuls of a prefill the pass thread runs a norm or a
//! rotation for tens of microseconds, long enough for the other workers to fall asleep: a
//! SmolLM2 prefill spent 7.4% of its time in `futex_wake` alone. Here each other worker runs a
//! job that takes the pool's work as it appears (`rayon::yield_now`) and yields its core in
//! between, until the pass ends.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A worker that has found no work for this long gives up and leaves the pool to sleep as
/// usual: it bounds the spinning if the pass stalls, and keeps a worker that picked up its
/// spinner while waiting inside one of the pass's own tasks from holding that task up for
/// more than this.
const IDLE_LIMIT: Duration = Duration::from_millis(2);

/// Spinners running now, in every pool (what the tests check returns to zero).
static SPINNING: AtomicUsize = AtomicUsize::new(0);

/// Runs `pass` (on a pool thread) with the pool's other workers kept awake.
pub(in crate::engine::model) fn with_workers_awake<R>(pass: impl FnOnce() -> R) -> R {
    let others = rayon::current_num_threads().saturating_sub(1);
    let Some(owner) = rayon::current_thread_index() else {
        return pass();
    };
    if others == 0 {
        return pass();
    }
    let done = Arc::new(AtomicBool::new(false));
    // One spinner on each worker, the pass's own included (it returns at once there): a
    // broadcast goes to every worker's own queue, where a plain `spawn` would put them all
    // on this thread's deque, from which it could take them back itself.
    let spinners = Arc::clone(&done);
    rayon::spawn_broadcast(move |_| spin_until(&spinners, owner));
    let result = pass();
    done.store(true, Ordering::Release);
    result
}

/// Takes the pool's work until `done`, or until none came for [`IDLE_LIMIT`]. A spinner the
/// pass's own thread picks up returns at once: that thread has the pass to finish.
fn spin_until(done: &AtomicBool, owner: usize) {
    if rayon::current_thread_index() == Some(owner) {
        return;
    }
    SPINNING.fetch_add(1, Ordering::SeqCst);
    take_work_until(done);
    SPINNING.fetch_sub(1, Ordering::SeqCst);
}

fn take_work_until(done: &AtomicBool) {
    let mut last_work = Instant::now();
    let mut idle_rounds = 0u32;
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle_rounds = 0;
            continue;
        }
        // The clock is read every 64 idle rounds, not every round.
        idle_rounds += 1;
        if idle_rounds % 64 == 1 {
            if idle_rounds == 1 {
                last_work = Instant::now();
            } else if last_work.elapsed() > IDLE_LIMIT {
                return;
            }
        }
        // Not a bare spin: with more workers than free cores, the OS gives the core to a
        // thread that has work.
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a test pool")
    }

    /// Waits (bounded) until no spinner runs.
    fn spinners_gone() -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while SPINNING.load(Ordering::SeqCst) != 0 {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    #[test]
    fn a_pass_gets_its_result_and_the_spinners_leave_when_it_ends() {
        let pool = pool(3);
        for _ in 0..50 {
            let sum: u64 = pool.install(|| {
                with_workers_awake(|| {
                    // Several parallel steps with serial work between them, as in a pass.
                    (0..20u64)
                        .map(|step| {
                            let s: u64 = (0..10_000u64).into_par_iter().map(|i| i ^ step).sum();
                            std::hint::black_box((0..2_000u64).sum::<u64>());
                            s
                        })
                        .sum()
                })
            });
            let expect: u64 = (0..20u64)
                .map(|step| (0..10_000u64).map(|i| i ^ step).sum::<u64>())
                .sum();
            assert_eq!(sum, expect);
        }
        assert!(spinners_gone(), "spinners still running after the passes");
    }

    #[test]
    fn a_pass_with_nested_parallel_steps_and_long_serial_gaps_finishes() {
        let pool = pool(2);
        let total: usize = pool.install(|| {
            with_workers_awake(|| {
                let nested: usize = (0..8usize)
                    .into_par_iter()
                    .map(|i| {
                        (0..1000usize)
                            .into_par_iter()
                            .map(|j| i * j % 7)
                            .sum::<usize>()
                    })
                    .sum();
                // Longer than the idle limit: the spinners give up and the pass goes on.
                std::thread::sleep(IDLE_LIMIT * 3);
                nested + (0..100usize).into_par_iter().sum::<usize>()
            })
        });
        let nested: usize = (0..8usize)
            .map(|i| (0..1000usize).map(|j| i * j % 7).sum::<usize>())
            .sum();
        assert_eq!(total, nested + 4950);
        assert!(spinners_gone());
    }

    #[test]
    fn outside_a_pool_or_with_one_thread_the_pass_just_runs() {
        assert_eq!(with_workers_awake(|| 7), 7);
        assert_eq!(pool(1).install(|| with_workers_awake(|| 8)), 8);
        assert!(spinners_gone());
    }
}
