//! One chatbot's vector index: the commands its Durable Object takes and the state it keeps in
//! memory between them. The object stores every vector in its own SQLite too (so the index
//! survives restarts and evictions) and rebuilds this state from there when it wakes up; the
//! scan itself always runs over memory.

use super::vector::{signs_from_bytes, Neighbour, Quantised, VectorSet};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// A vector as it travels to the index: already normalised and quantised by the Worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireVector {
    pub scale: f32,
    pub codes: Vec<i8>,
}

impl From<&Quantised> for WireVector {
    fn from(q: &Quantised) -> Self {
        WireVector {
            scale: q.scale,
            codes: q.codes.clone(),
        }
    }
}

impl WireVector {
    pub fn quantised(&self) -> Option<Quantised> {
        (self.scale.is_finite() && self.scale > 0.0 && !self.codes.is_empty()).then(|| Quantised {
            scale: self.scale,
            codes: self.codes.clone(),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexedChunk {
    pub id: i64,
    pub source: String,
    pub vector: WireVector,
}

/// What the Worker asks of a chatbot's vector index. Externally tagged on the wire
/// (`{"remove": {"ids": [..]}}`): it needs no buffering to decode, which keeps the Worker small.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexCommand {
    /// Forgets every vector and starts over for `model` (a new or changed embedding model).
    Reset {
        model: String,
    },
    /// Writes vectors made by `model`; refused if the index holds another model's.
    Upsert {
        model: String,
        chunks: Vec<IndexedChunk>,
    },
    Remove {
        ids: Vec<i64>,
    },
    /// Forgets everything (the chatbot is gone).
    Wipe,
    /// The `k` nearest chunks, only from `sources` when given. Answers nothing when the index
    /// was built by another model than `model`: vectors of two models never meet.
    Query {
        model: String,
        vector: WireVector,
        k: usize,
        sources: Option<Vec<String>>,
    },
    Stats,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexStats {
    pub model: Option<String>,
    pub vectors: usize,
    pub dimensions: usize,
    pub memory_bytes: usize,
}

/// The in-memory half of the index.
#[derive(Debug, Default)]
pub struct IndexState {
    pub model: Option<String>,
    set: Option<VectorSet>,
    /// Which source each vector came from, as an index into `sources`.
    source_of: HashMap<i64, u32>,
    sources: Vec<String>,
    source_ids: HashMap<String, u32>,
}

/// Why a command was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexRefusal {
    OtherModel { held: Option<String> },
    Dimensions { held: usize, given: usize },
    BadVector,
}

impl std::fmt::Display for IndexRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexRefusal::OtherModel { held } => write!(
                f,
                "the index holds vectors of {}",
                held.as_deref().unwrap_or("no model yet")
            ),
            IndexRefusal::Dimensions { held, given } => {
                write!(f, "the index holds {held}-dimensional vectors, not {given}")
            }
            IndexRefusal::BadVector => {
                f.write_str("a vector is empty or its scale is not positive")
            }
        }
    }
}

impl IndexState {
    pub fn new(model: Option<String>) -> Self {
        IndexState {
            model,
            ..Default::default()
        }
    }

    pub fn stats(&self) -> IndexStats {
        let set = self.set.as_ref();
        IndexStats {
            model: self.model.clone(),
            vectors: set.map_or(0, VectorSet::len),
            dimensions: set.map_or(0, VectorSet::dimensions),
            memory_bytes: set.map_or(0, VectorSet::memory_bytes)
                + self.source_of.len() * 16
                + self.sources.iter().map(|s| s.len() + 24).sum::<usize>(),
        }
    }

    /// The source a held vector came from.
    pub fn source_of(&self, id: i64) -> Option<&str> {
        let at = *self.source_of.get(&id)?;
        self.sources.get(at as usize).map(String::as_str)
    }

    fn source_index(&mut self, source: &str) -> u32 {
        if let Some(i) = self.source_ids.get(source) {
            return *i;
        }
        let i = self.sources.len() as u32;
        self.sources.push(source.to_string());
        self.source_ids.insert(source.to_string(), i);
        i
    }

    /// Checks a batch before anything is written, so a refused batch changes nothing.
    pub fn check_upsert(&self, model: &str, chunks: &[IndexedChunk]) -> Result<(), IndexRefusal> {
        if self.model.as_deref() != Some(model) {
            return Err(IndexRefusal::OtherModel {
                held: self.model.clone(),
            });
        }
        let mut width = self.set.as_ref().map(VectorSet::dimensions);
        for chunk in chunks {
            let given = chunk.vector.codes.len();
            if chunk.vector.quantised().is_none() {
                return Err(IndexRefusal::BadVector);
            }
            match width {
                Some(held) if held != given => {
                    return Err(IndexRefusal::Dimensions { held, given })
                }
                _ => width = Some(given),
            }
        }
        Ok(())
    }

    /// Adds or replaces vectors (call `check_upsert` first).
    pub fn upsert(&mut self, chunks: &[IndexedChunk]) {
        let replaced: HashSet<i64> = chunks
            .iter()
            .map(|c| c.id)
            .filter(|id| self.source_of.contains_key(id))
            .collect();
        if !replaced.is_empty() {
            self.remove(&replaced.iter().copied().collect::<Vec<_>>());
        }
        for chunk in chunks {
            let Some(vector) = chunk.vector.quantised() else {
                continue;
            };
            let set = self
                .set
                .get_or_insert_with(|| VectorSet::new(vector.dimensions()));
            if set.push(chunk.id, &vector) {
                let source = self.source_index(&chunk.source);
                self.source_of.insert(chunk.id, source);
            }
        }
    }

    /// Puts back a stored vector by its signs (`signs_to_bytes`' form) when the object wakes
    /// up; `false` for unreadable bytes or another width than the index holds.
    pub fn restore(&mut self, id: i64, source: &str, signs: &[u8]) -> bool {
        let Some((width, words)) = signs_from_bytes(signs) else {
            return false;
        };
        let set = self.set.get_or_insert_with(|| VectorSet::new(width));
        if set.dimensions() != width || self.source_of.contains_key(&id) {
            return false;
        }
        if set.push_signs(id, &words) {
            let source = self.source_index(source);
            self.source_of.insert(id, source);
            return true;
        }
        false
    }

    pub fn remove(&mut self, ids: &[i64]) {
        let gone: HashSet<i64> = ids
            .iter()
            .copied()
            .filter(|id| self.source_of.remove(id).is_some())
            .collect();
        if let (Some(set), false) = (self.set.as_mut(), gone.is_empty()) {
            set.retain(|id| !gone.contains(&id));
        }
    }

    /// Starts over for `model` (or for nothing, when wiped).
    pub fn reset(&mut self, model: Option<String>) {
        *self = IndexState::new(model);
    }

    /// The `k` nearest vectors; `codes_of` reads the full codes of the candidates the sign
    /// scan picks (the object's storage holds them; memory holds only the signs).
    pub fn query(
        &self,
        model: &str,
        vector: &WireVector,
        k: usize,
        sources: Option<&[String]>,
        codes_of: impl FnOnce(&[i64]) -> Vec<(i64, Quantised)>,
    ) -> Vec<Neighbour> {
        let (Some(set), Some(query)) = (self.set.as_ref(), vector.quantised()) else {
            return Vec::new();
        };
        if self.model.as_deref() != Some(model) {
            return Vec::new();
        }
        let allowed: Option<HashSet<u32>> = sources.map(|list| {
            list.iter()
                .filter_map(|s| self.source_ids.get(s).copied())
                .collect()
        });
        set.nearest(
            &query,
            k,
            |id| match &allowed {
                None => true,
                Some(allowed) => self.source_of.get(&id).is_some_and(|s| allowed.contains(s)),
            },
            codes_of,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: i64, source: &str, v: &[f32]) -> IndexedChunk {
        IndexedChunk {
            id,
            source: source.into(),
            vector: WireVector::from(&Quantised::from_f32(v).unwrap()),
        }
    }

    fn query(v: &[f32]) -> WireVector {
        WireVector::from(&Quantised::from_f32(v).unwrap())
    }

    /// The index with the storage beside it that holds every vector's full codes.
    #[derive(Default)]
    struct Stored {
        state: IndexState,
        codes: HashMap<i64, Quantised>,
    }

    impl Stored {
        fn new(model: &str) -> Self {
            Stored {
                state: IndexState::new(Some(model.into())),
                codes: HashMap::new(),
            }
        }
        fn upsert(&mut self, chunks: &[IndexedChunk]) {
            for c in chunks {
                self.codes.insert(c.id, c.vector.quantised().unwrap());
            }
            self.state.upsert(chunks);
        }
        fn query(
            &self,
            model: &str,
            v: &WireVector,
            k: usize,
            sources: Option<&[String]>,
        ) -> Vec<Neighbour> {
            self.state.query(model, v, k, sources, |ids| {
                ids.iter()
                    .filter_map(|id| Some((*id, self.codes.get(id)?.clone())))
                    .collect()
            })
        }
    }

    #[test]
    fn upserts_replace_and_queries_filter_by_source() {
        let mut state = Stored::new("m");
        let batch = vec![chunk(1, "a", &[1.0, 0.0]), chunk(2, "b", &[0.0, 1.0])];
        state.state.check_upsert("m", &batch).unwrap();
        state.upsert(&batch);
        assert_eq!(state.state.stats().vectors, 2);
        let near = state.query("m", &query(&[0.1, 1.0]), 1, None);
        assert_eq!(near[0].id, 2);
        let only_a = state.query("m", &query(&[0.1, 1.0]), 5, Some(&["a".to_string()]));
        assert_eq!(only_a.iter().map(|n| n.id).collect::<Vec<_>>(), vec![1]);
        // Replacing chunk 2's vector moves it.
        state.upsert(&[chunk(2, "b", &[1.0, 0.1])]);
        assert_eq!(state.state.stats().vectors, 2);
        assert_eq!(state.query("m", &query(&[1.0, -0.5]), 1, None)[0].id, 1);
        assert_eq!(state.query("m", &query(&[0.0, 1.0]), 1, None)[0].id, 2);
        assert_eq!(state.state.source_of(2), Some("b"));
        // An id taken by another source's chunk says so.
        state.upsert(&[chunk(2, "c", &[1.0, 0.1])]);
        assert_eq!(state.state.source_of(2), Some("c"));
        state.state.remove(&[1, 2, 99]);
        assert_eq!(state.state.stats().vectors, 0);
        assert_eq!(state.state.source_of(2), None);
    }

    #[test]
    fn another_model_or_width_is_refused_and_never_answers() {
        let mut stored = Stored::new("m");
        stored.upsert(&[chunk(1, "a", &[1.0, 0.0])]);
        assert!(stored
            .query("other", &query(&[1.0, 0.0]), 3, None)
            .is_empty());
        let mut state = stored.state;
        assert!(matches!(
            state.check_upsert("other", &[chunk(2, "a", &[1.0, 0.0])]),
            Err(IndexRefusal::OtherModel { .. })
        ));
        assert!(matches!(
            state.check_upsert("m", &[chunk(2, "a", &[1.0, 0.0, 0.0])]),
            Err(IndexRefusal::Dimensions { held: 2, given: 3 })
        ));
        state.reset(Some("other".into()));
        assert_eq!(state.stats().vectors, 0);
        assert_eq!(state.model.as_deref(), Some("other"));
    }

    #[test]
    fn a_restored_index_answers_like_the_one_it_was_stored_from() {
        let mut stored = Stored::new("m");
        stored.upsert(&[
            chunk(1, "a", &[1.0, 0.0, 0.2]),
            chunk(2, "b", &[0.0, 1.0, 0.1]),
        ]);
        let mut woken = Stored::new("m");
        for (id, source) in [(1, "a"), (2, "b")] {
            let signs = super::super::vector::signs_to_bytes(&stored.codes[&id]);
            assert!(woken.state.restore(id, source, &signs));
            assert!(
                !woken.state.restore(id, source, &signs),
                "a second copy is refused"
            );
        }
        woken.codes = stored.codes.clone();
        assert!(!woken.state.restore(3, "a", &[1, 2, 3]));
        let asked = query(&[0.1, 1.0, 0.0]);
        assert_eq!(
            woken.query("m", &asked, 2, None),
            stored.query("m", &asked, 2, None)
        );
        assert_eq!(woken.state.stats(), stored.state.stats());
    }

    #[test]
    fn commands_travel_as_externally_tagged_json() {
        let c: IndexCommand = serde_json::from_str(r#"{"remove":{"ids":[1,2]}}"#).unwrap();
        assert_eq!(c, IndexCommand::Remove { ids: vec![1, 2] });
        let text = serde_json::to_string(&IndexCommand::Wipe).unwrap();
        assert_eq!(text, r#""wipe""#);
    }
}
