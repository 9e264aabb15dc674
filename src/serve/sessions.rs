//! The episodes a `serve-env` holds: bounded in number, expired when idle. A session's environment
//! is taken out while its step is in flight, so a second concurrent step on the same episode is
//! refused (409) instead of racing.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::environment::episode::{DialogueEnv, EpisodeRecord, PolicyRef};

/// One episode held by the server.
pub struct Session {
    /// `None` while a step is in flight.
    pub env: Option<DialogueEnv>,
    pub policy: PolicyRef,
    /// The episode's number since the server started (the record's `sample`).
    pub number: u64,
    /// Set once the dialogue ended: the record as written to the log.
    pub record: Option<EpisodeRecord>,
    last_used: Instant,
}

/// Why a session could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionError {
    /// No session with this id (never created, or expired).
    Unknown,
    /// A step on this episode is in flight.
    Busy,
    /// The dialogue is over.
    Finished,
}

/// A fresh episode id: `ep-` and 32 hex digits.
pub fn new_id() -> String {
    format!("ep-{:032x}", rand::random::<u128>())
}

/// The sessions, keyed by episode id.
pub struct SessionTable {
    map: HashMap<String, Session>,
    max: usize,
    ttl: Duration,
}

impl SessionTable {
    /// A table holding at most `max` sessions, each expiring after `ttl` without a request.
    pub fn new(max: usize, ttl: Duration) -> Self {
        SessionTable {
            map: HashMap::new(),
            max,
            ttl,
        }
    }

    /// Sessions held (live and finished).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no session is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The most sessions held at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// True while another session fits.
    pub fn has_room(&self) -> bool {
        self.map.len() < self.max
    }

    /// Adds a session as episode `number` and returns its id, or `None` when the table is full.
    /// The id is 128 random bits from the operating system's generator, so a client cannot guess
    /// another's episode, and an id from before a restart reaches nothing.
    pub fn insert(&mut self, number: u64, env: DialogueEnv, policy: PolicyRef) -> Option<String> {
        if !self.has_room() {
            return None;
        }
        let id = new_id();
        self.map.insert(
            id.clone(),
            Session {
                env: Some(env),
                policy,
                number,
                record: None,
                last_used: Instant::now(),
            },
        );
        Some(id)
    }

    /// Takes a live session's environment out for a step.
    pub fn take(&mut self, id: &str) -> Result<(DialogueEnv, PolicyRef, u64), SessionError> {
        let s = self.map.get_mut(id).ok_or(SessionError::Unknown)?;
        s.last_used = Instant::now();
        if s.record.is_some() {
            return Err(SessionError::Finished);
        }
        let env = s.env.take().ok_or(SessionError::Busy)?;
        Ok((env, s.policy.clone(), s.number))
    }

    /// Puts an environment back after its step, with the record when the dialogue ended. A
    /// session that expired in the meantime is not brought back.
    pub fn put_back(&mut self, id: &str, env: DialogueEnv, record: Option<EpisodeRecord>) {
        if let Some(s) = self.map.get_mut(id) {
            s.env = Some(env);
            s.record = record;
            s.last_used = Instant::now();
        }
    }

    /// A session to read (touches it).
    pub fn get(&mut self, id: &str) -> Result<&Session, SessionError> {
        let s = self.map.get_mut(id).ok_or(SessionError::Unknown)?;
        s.last_used = Instant::now();
        Ok(s)
    }

    /// Removes a session; false if there was none.
    pub fn remove(&mut self, id: &str) -> bool {
        self.map.remove(id).is_some()
    }

    /// Drops sessions idle for longer than the ttl (never one whose step is in flight) and
    /// returns how many live (unfinished) ones were dropped.
    pub fn expire(&mut self, now: Instant) -> usize {
        let ttl = self.ttl;
        let mut live_dropped = 0;
        self.map.retain(|_, s| {
            let keep = s.env.is_none() || now.duration_since(s.last_used) < ttl;
            if !keep && s.record.is_none() {
                live_dropped += 1;
            }
            keep
        });
        live_dropped
    }

    /// Live (unfinished) sessions.
    pub fn live(&self) -> usize {
        self.map.values().filter(|s| s.record.is_none()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::profile::{Catalog, Difficulty, KnobOverrides};
    use crate::environment::reward::{Aggregate, RewardMode};

    fn env() -> DialogueEnv {
        let catalog = Catalog::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let id = catalog.split(crate::environment::profile::Split::Test)[0].clone();
        let p = catalog
            .profile(&id, Difficulty::Moderate, &KnobOverrides::default())
            .unwrap();
        let mut e = DialogueEnv::new(p, RewardMode::Behavior, Aggregate::Final);
        e.reset(1);
        e
    }

    #[test]
    fn ids_are_random_128_bit_not_the_episode_number() {
        let (mut t, mut u) = (
            SessionTable::new(2, Duration::from_secs(60)),
            SessionTable::new(2, Duration::from_secs(60)),
        );
        let (a, b) = (
            t.insert(0, env(), PolicyRef::default()).unwrap(),
            u.insert(0, env(), PolicyRef::default()).unwrap(),
        );
        assert_ne!(
            a, b,
            "the first episode of two servers (a restart) shares no id"
        );
        for id in [&a, &b] {
            let hex = id.strip_prefix("ep-").expect("ep- prefix");
            assert_eq!(hex.len(), 32, "{id}");
            assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        }
        assert_eq!(u.take(&a).err(), Some(SessionError::Unknown));
    }

    #[test]
    fn bounded_busy_and_expiry() {
        let mut t = SessionTable::new(2, Duration::from_secs(60));
        let a = t.insert(0, env(), PolicyRef::default()).unwrap();
        let _b = t.insert(1, env(), PolicyRef::default()).unwrap();
        assert!(!t.has_room());
        assert_eq!(
            t.insert(2, env(), PolicyRef::default()),
            None,
            "a full table takes no more"
        );
        let (e, _, n) = t.take(&a).unwrap();
        assert_eq!(n, 0);
        assert_eq!(t.take(&a).err(), Some(SessionError::Busy));
        assert_eq!(t.take("ep-9").err(), Some(SessionError::Unknown));
        // A session whose step is in flight never expires.
        assert_eq!(t.expire(Instant::now() + Duration::from_secs(120)), 1);
        assert_eq!(t.len(), 1);
        t.put_back(&a, e, None);
        assert!(t.take(&a).is_ok());
        assert!(t.remove(&a));
        assert!(t.is_empty());
    }
}
