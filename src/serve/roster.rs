//! The models one `taper serve` answers with, loaded on demand within a budget: as many as
//! `--keep-loaded` allows and the memory budget holds (each model's weights and its slots'
//! full KV caches) are read before the server listens, in the order given; a request for one
//! that is not loaded reads it, first unloading the least recently used idle models until it
//! fits. A model answering or queueing a request is never unloaded: a request that needs its
//! room waits until it is idle, and meanwhile the models it waits for take no new requests
//! (those wait their turn), so a model kept busy cannot starve the others. Loads happen one at
//! a time.

use super::error::ApiError;
use super::log::{self, LogFormat};
use super::models::{self, Served};
use super::room::{plan_room, refuse_unless_alone_fits, Budget, Occupant};
use super::ModelOptions;
use crate::engine::model::weights::packed_cache;
use crate::engine::model::{self, CacheOptions, Footprint};
use crate::engine::{EngineHandle, Status};
use anyhow::Result;
use axum::http::StatusCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a request waiting for room looks again.
const ROOM_POLL: Duration = Duration::from_millis(50);

/// One model the server can answer with.
pub struct Listed {
    /// Its id in `/v1/models` and in answers.
    pub name: String,
    options: ModelOptions,
    pub footprint: Footprint,
    loaded: Mutex<Option<Loaded>>,
}

/// A listed model while it is loaded.
struct Loaded {
    served: Arc<Served>,
    engine: EngineHandle,
    last_used: Instant,
    /// A load waits for this model to be idle to unload it: it takes no new requests.
    draining: bool,
}

impl Loaded {
    fn new(served: Arc<Served>, engine: EngineHandle) -> Self {
        Self {
            served,
            engine,
            last_used: Instant::now(),
            draining: false,
        }
    }
}

impl Loaded {
    /// Nothing holds its [`Served`] but the roster (a request being prepared holds one) and
    /// its host has no request.
    fn idle(&self) -> bool {
        let status = self.engine.status();
        Arc::strong_count(&self.served) == 1
            && status.busy.load(Ordering::SeqCst) == 0
            && status.queued.load(Ordering::SeqCst) == 0
    }
}

impl Listed {
    fn state(&self) -> MutexGuard<'_, Option<Loaded>> {
        // A panic while holding it cannot leave a half-made state: every change is one store.
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The model's handlers, marked used now, when it is loaded and not draining.
    fn touch(&self) -> Option<Arc<Served>> {
        let mut state = self.state();
        let loaded = state.as_mut().filter(|l| !l.draining)?;
        loaded.last_used = Instant::now();
        Some(loaded.served.clone())
    }

    pub fn is_loaded(&self) -> bool {
        self.state().is_some()
    }
}

/// Every model listed, and what is loaded of them.
pub struct Roster {
    pub models: Vec<Listed>,
    pub budget: Budget,
    cache: CacheOptions,
    parallel: usize,
    log: LogFormat,
    /// One load (with the unloads that make its room) at a time; held by the load itself, so
    /// a client that hangs up mid-load does not let a second one start.
    loading: Arc<tokio::sync::Mutex<()>>,
}

impl Roster {
    /// Reads each model's header, refuses one that could never fit the budget, and loads the
    /// models in order while they fit together (the first always does); the rest load when a
    /// request names them.
    pub fn start(
        options: &[ModelOptions],
        cache: CacheOptions,
        parallel: usize,
        budget: Budget,
        log: LogFormat,
    ) -> Result<Self> {
        let mut models = Vec::new();
        for one in options {
            let name = models::model_name(&one.path);
            let footprint =
                match model::footprint(&one.path, cache.context, cache.cache_type, parallel) {
                    Ok(footprint) => footprint,
                    // The load says best what is wrong with the file.
                    Err(header) => {
                        models::load(one, cache, parallel, log, false)?;
                        return Err(header);
                    }
                };
            refuse_unless_alone_fits(&name, footprint.bytes, &budget, parallel)?;
            models.push(Listed {
                name,
                options: one.clone(),
                footprint,
                loaded: Mutex::new(None),
            });
        }
        let roster = Self {
            models,
            budget,
            cache,
            parallel,
            log,
            loading: Arc::new(tokio::sync::Mutex::new(())),
        };
        let (mut count, mut bytes) = (0, 0u64);
        for listed in &roster.models {
            let after = bytes.saturating_add(listed.footprint.bytes);
            if !roster.budget.holds(count + 1, after) {
                continue;
            }
            let (served, engine) = models::load(&listed.options, cache, parallel, log, true)?;
            *listed.state() = Some(Loaded::new(Arc::new(served), engine));
            (count, bytes) = (count + 1, after);
        }
        Ok(roster)
    }

    /// The index of the model a request's `model` names: None picks the first; with one
    /// model any name does (as with llama-server: clients send names of their own); with
    /// several an unknown name is a 404 listing the ones there are.
    pub fn pick(&self, asked: Option<&str>) -> Result<usize, ApiError> {
        if self.models.is_empty() {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the server has no model",
            ));
        }
        let Some(asked) = asked else {
            return Ok(0);
        };
        if let Some(found) = self.models.iter().position(|m| m.name == asked) {
            return Ok(found);
        }
        if self.models.len() == 1 {
            return Ok(0);
        }
        let names: Vec<&str> = self.models.iter().map(|m| m.name.as_str()).collect();
        Err(ApiError {
            param: Some("model".into()),
            ..ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "`model`: this server has no model {asked:?}; it serves {}",
                    names.join(", ")
                ),
            )
        })
    }

    /// The model at `index`, loaded: at once when it is, else once its room is made (waiting
    /// while busy models hold it, which meanwhile take no new requests) and it has been read.
    pub async fn ready(self: &Arc<Self>, index: usize) -> Result<Arc<Served>, ApiError> {
        loop {
            if let Some(served) = self.models[index].touch() {
                return Ok(served);
            }
            let turn = self.loading.clone().lock_owned().await;
            if let Some(served) = self.models[index].touch() {
                return Ok(served);
            }
            if self.models[index].is_loaded() {
                // Draining for a load that has just given up its turn: look again shortly.
                drop(turn);
                tokio::time::sleep(ROOM_POLL).await;
                continue;
            }
            // The turn is held while waiting, so the models drained for this load stay the
            // ones it waits for; they are let go if the client hangs up meanwhile.
            let drain = Drain(self.clone());
            let unloaded = loop {
                if let Some(unloaded) = self.take_room(index) {
                    break unloaded;
                }
                tokio::time::sleep(ROOM_POLL).await;
            };
            let roster = self.clone();
            return tokio::task::spawn_blocking(move || {
                let loaded = roster.swap_in(index, unloaded);
                drop(drain);
                drop(turn);
                loaded
            })
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "loading the model failed",
                )
            })?;
        }
    }

    /// Takes out the models to unload for `index`'s room, decided and taken under their
    /// locks so no request picks one up meanwhile; None when the room is not free yet, and
    /// then the models that will leave once idle are drained.
    fn take_room(&self, index: usize) -> Option<Vec<(String, EngineHandle)>> {
        let mut states: Vec<(usize, MutexGuard<'_, Option<Loaded>>)> = self
            .models
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .map(|(i, listed)| (i, listed.state()))
            .filter(|(_, state)| state.is_some())
            .collect();
        let occupants: Vec<Occupant> = states
            .iter()
            .filter_map(|(i, state)| {
                state.as_ref().map(|loaded| Occupant {
                    bytes: self.models[*i].footprint.bytes,
                    last_used: loaded.last_used,
                    idle: loaded.idle(),
                })
            })
            .collect();
        let need = self.models[index].footprint.bytes;
        let Some(unload) = plan_room(&occupants, need, &self.budget) else {
            let all_idle: Vec<Occupant> = occupants
                .iter()
                .map(|o| Occupant { idle: true, ..*o })
                .collect();
            for at in plan_room(&all_idle, need, &self.budget).unwrap_or_default() {
                if let Some(loaded) = states[at].1.as_mut() {
                    loaded.draining = true;
                }
            }
            return None;
        };
        Some(
            unload
                .into_iter()
                .filter_map(|at| {
                    let (i, state) = &mut states[at];
                    let loaded = state.take()?;
                    drop(loaded.served);
                    Some((self.models[*i].name.clone(), loaded.engine))
                })
                .collect(),
        )
    }

    /// Stops the models unloaded (their memory is free when each returns), then reads the
    /// one at `index`.
    fn swap_in(
        &self,
        index: usize,
        unloaded: Vec<(String, EngineHandle)>,
    ) -> Result<Arc<Served>, ApiError> {
        let listed = &self.models[index];
        let any = !unloaded.is_empty();
        for (name, engine) in unloaded {
            engine.stop();
            log::event(
                self.log,
                "model_unloaded",
                &name,
                &format!("to make room for {}", listed.name),
            );
        }
        if any {
            // A repack cache file still being written holds its model's matrices: the memory
            // of a model unloaded is free only once its write is done.
            packed_cache::finish_writes();
        }
        let started = Instant::now();
        let (served, engine) =
            models::load(&listed.options, self.cache, self.parallel, self.log, false).map_err(
                |e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("cannot load {}: {e:#}", listed.name),
                    )
                },
            )?;
        let served = Arc::new(served);
        *listed.state() = Some(Loaded::new(served.clone(), engine));
        log::event(
            self.log,
            "model_loaded",
            &listed.name,
            &format!("in {:.2} s", started.elapsed().as_secs_f64()),
        );
        Ok(served)
    }

    /// Calls `each` with the host status of every model loaded now.
    pub fn for_each_loaded(&self, mut each: impl FnMut(&Status)) {
        for listed in &self.models {
            if let Some(loaded) = listed.state().as_ref() {
                each(loaded.engine.status());
            }
        }
    }

    /// Stops every model's host, waiting for each.
    pub fn stop_all(&self) {
        for listed in &self.models {
            let loaded = listed.state().take();
            if let Some(loaded) = loaded {
                loaded.engine.stop();
            }
        }
    }
}

/// The drain of a load waiting for room: when it ends (the load is done, or its request has
/// gone), every model takes requests again.
struct Drain(Arc<Roster>);

impl Drop for Drain {
    fn drop(&mut self) {
        for listed in &self.0.models {
            if let Some(loaded) = listed.state().as_mut() {
                loaded.draining = false;
            }
        }
    }
}
