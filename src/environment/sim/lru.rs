//! A least-recently-used map with a fixed capacity: the embedder's cache, so that a long-running
//! server that sees new replies for days holds a bounded number of embeddings. Lookups and inserts
//! cost O(log n): the map holds each entry's last use, and an ordered index of uses finds the
//! oldest.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// Holds at most `capacity` entries; inserting one more drops the least recently used.
pub struct Lru<K, V> {
    capacity: usize,
    clock: u64,
    entries: HashMap<K, (V, u64)>,
    by_use: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    /// An empty map for at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            clock: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    /// The value for `key`, which becomes the most recently used.
    pub fn get<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.clock += 1;
        let (value, used) = self.entries.get_mut(key)?;
        let k = self.by_use.remove(used)?;
        *used = self.clock;
        self.by_use.insert(self.clock, k);
        Some(value.clone())
    }

    /// Puts `value` under `key` as the most recently used, dropping the least recently used
    /// entry when the map is full.
    pub fn insert(&mut self, key: K, value: V) {
        self.clock += 1;
        if let Some((_, used)) = self.entries.remove(&key) {
            self.by_use.remove(&used);
        } else if self.entries.len() >= self.capacity {
            if let Some((_, oldest)) = self.by_use.pop_first() {
                self.entries.remove(&oldest);
            }
        }
        self.by_use.insert(self.clock, key.clone());
        self.entries.insert(key, (value, self.clock));
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most entries held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let mut m = Lru::new(2);
        m.insert("a", 1);
        m.insert("b", 2);
        assert_eq!(m.get("a"), Some(1)); // b is now the oldest
        m.insert("c", 3);
        assert_eq!(m.get("b"), None);
        assert_eq!((m.get("a"), m.get("c")), (Some(1), Some(3)));
        m.insert("a", 10); // an update, not a new entry: nothing dropped
        assert_eq!(m.len(), 2);
        m.insert("d", 4); // c was used before a's update
        assert_eq!(
            (m.get("c"), m.get("a"), m.get("d")),
            (None, Some(10), Some(4))
        );
        assert_eq!(m.by_use.len(), m.entries.len(), "one use per entry");
    }

    #[test]
    fn a_zero_capacity_still_holds_one() {
        let mut m = Lru::new(0);
        m.insert(1, "x");
        m.insert(2, "y");
        assert_eq!((m.len(), m.capacity(), m.get(&2)), (1, 1, Some("y")));
    }
}
