//! What makes a script give the same values when its host runs it again to replay it (the agent
//! loop does after a call the script made paused the run for a decision): `Math.random` draws
//! from a seed recorded with the call, and `Date` (`Date.now()`, `new Date()`, `Date()`) reads
//! the clock readings recorded the first time, in order, before it reads the clock again.
//!
//! Both go through [`ToolContext::replayable_value`] and [`ToolContext::record_value`], and are
//! set up only for a host that replays calls ([`ToolContext::replays`]): elsewhere the script
//! has the engine's own, and its start-up is not made longer by compiling these.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};

use pi_tool::ToolContext;
use rquickjs::{Ctx, Function};
use serde_json::json;

/// The name the random seed is recorded under.
const SEED: &str = "pi-codemode/random-seed";
/// The name the clock readings are recorded under.
const CLOCK: &str = "pi-codemode/clock";

/// `Math.random`: SplitMix64 from a seed (the same seed gives the same numbers).
pub(crate) struct Random(Cell<u64>);

impl Random {
    /// The seed recorded with the call when it is replayed, else a fresh one (recorded).
    pub(crate) fn for_call(ctx: &ToolContext) -> Self {
        let seed = ctx.replayable_value(SEED, || json!(fresh_seed()));
        Random(Cell::new(seed.as_u64().unwrap_or_else(fresh_seed)))
    }

    /// A number in [0, 1), as `Math.random` gives.
    fn next(&self) -> f64 {
        let state = self.0.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.0.set(state);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits, as a double's fraction.
        (z >> 11) as f64 * (1.0 / (1_u64 << 53) as f64)
    }
}

/// A seed no other call shares (the process's random hasher keys, and the time).
fn fresh_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
    );
    hasher.finish()
}

/// The clock a script reads: the readings recorded the first time (each value with how many
/// reads gave it), then the system clock; every reading is kept for a later replay.
pub(crate) struct Clock {
    recorded: Vec<(i64, u64)>,
    /// Where the replay stands in `recorded`: the entry, and reads of it given so far.
    cursor: (usize, u64),
    readings: Vec<(i64, u64)>,
}

impl Clock {
    /// The clock of the call of `ctx`: its recorded readings when it is replayed.
    pub(crate) fn for_call(ctx: &ToolContext) -> Self {
        let recorded = ctx
            .recorded_value(CLOCK)
            .and_then(|value| serde_json::from_value(value).ok())
            .unwrap_or_default();
        Clock {
            recorded,
            cursor: (0, 0),
            readings: Vec::new(),
        }
    }

    /// Milliseconds since the epoch, as `Date.now()` gives.
    fn now(&mut self) -> i64 {
        let millis = self.replayed().unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
                })
        });
        match self.readings.last_mut() {
            Some((last, count)) if *last == millis => *count += 1,
            _ => self.readings.push((millis, 1)),
        }
        millis
    }

    /// The next recorded reading, if the replay has one left.
    fn replayed(&mut self) -> Option<i64> {
        let (entry, given) = &mut self.cursor;
        let (millis, count) = *self.recorded.get(*entry)?;
        *given += 1;
        if *given >= count {
            *entry += 1;
            *given = 0;
        }
        Some(millis)
    }

    /// Records the readings with the call, for a replay of it.
    pub(crate) fn record(&self, ctx: &ToolContext) {
        ctx.record_value(
            CLOCK,
            serde_json::to_value(&self.readings).unwrap_or_default(),
        );
    }
}

/// Puts `Math.random` over `random` and `Date` over `clock` in the realm (before the lockdown,
/// which leaves both as they are for the script).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    clock: &Rc<RefCell<Clock>>,
    random: &Rc<Random>,
) -> rquickjs::Result<()> {
    let now = {
        let clock = Rc::clone(clock);
        Function::new(ctx.clone(), move || -> f64 {
            clock.borrow_mut().now() as f64
        })?
    };
    now.set_name("now")?;
    let next = {
        let random = Rc::clone(random);
        Function::new(ctx.clone(), move || -> f64 { random.next() })?
    };
    next.set_name("random")?;
    let replace: Function<'js> = ctx.eval(REPLACE)?;
    replace.call((now, next))
}

/// `Date` reading the host's clock for "now" (a call without a time), otherwise the engine's
/// own `Date`; `Math.random` the host's.
const REPLACE: &str = r#"(function (now, random) {
  'use strict';
  const EngineDate = Date;
  const Date_ = function Date(...args) {
    if (new.target === undefined) return new EngineDate(now()).toString();
    return Reflect.construct(EngineDate, args.length === 0 ? [now()] : args, new.target);
  };
  Object.setPrototypeOf(Date_, EngineDate);
  Object.defineProperty(Date_, 'prototype', { value: EngineDate.prototype, writable: false });
  Object.defineProperty(Date_, 'length', { value: 7 });
  Object.defineProperty(Date_, 'now', { value: now, writable: true, configurable: true });
  Object.defineProperty(EngineDate.prototype, 'constructor', { value: Date_, writable: true, configurable: true });
  Object.defineProperty(globalThis, 'Date', { value: Date_, writable: true, configurable: true });
  Object.defineProperty(Math, 'random', { value: random, writable: true, configurable: true });
})"#;
