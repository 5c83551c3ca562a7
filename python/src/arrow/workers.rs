//! The threads that parse a batch.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use std::sync::{Arc, Mutex, PoisonError};

/// Where the elements are worked on: `threads=None` is rayon's global pool (every core,
/// or `RAYON_NUM_THREADS`), 1 the calling thread alone, N a pool of N threads kept for the
/// next call. An engine that runs one task per core (Ray, Spark) wants 1, so that its
/// workers do not each spread over every core.
pub(super) enum Workers {
    Global,
    Caller,
    Pool(Arc<rayon::ThreadPool>),
}

impl Workers {
    pub(super) fn new(threads: Option<i64>) -> PyResult<Workers> {
        static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
        let threads = threads
            .map(|n| crate::convert::non_negative::<usize>("threads", n))
            .transpose()?;
        match threads {
            None => Ok(Workers::Global),
            Some(0) => Err(PyValueError::new_err(
                "threads must be at least 1 (None: every core)",
            )),
            Some(1) => Ok(Workers::Caller),
            Some(n) => {
                // A pool holds no state a panic could break; a poisoned lock is still good.
                let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some((_, pool)) = pools.iter().find(|(size, _)| *size == n) {
                    return Ok(Workers::Pool(pool.clone()));
                }
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("atfunc-{i}"))
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}")))?;
                let pool = Arc::new(pool);
                pools.push((n, pool.clone()));
                Ok(Workers::Pool(pool))
            }
        }
    }

    /// `work(i, element)` for every element, in order.
    pub(super) fn map<T: Send>(
        &self,
        elements: &[Option<&[u8]>],
        work: impl Fn(usize, Option<&[u8]>) -> T + Sync + Send,
    ) -> Vec<T> {
        let parallel = || {
            elements
                .par_iter()
                .enumerate()
                .map(|(i, element)| work(i, *element))
                .collect()
        };
        match self {
            Workers::Global => parallel(),
            Workers::Pool(pool) => pool.install(parallel),
            Workers::Caller => elements
                .iter()
                .enumerate()
                .map(|(i, element)| work(i, *element))
                .collect(),
        }
    }
}
