//! Agent lineage by `parent` (FORMAT §6): children, ancestry and descendants over one
//! listing of `agents/`. Parent links come from files anyone can edit, so every walk here
//! stops at a repeated id instead of looping.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::agent::{Agent, AgentStatus};

/// Every readable agent record, indexed by id and by parent.
pub struct Roster {
    by_id: BTreeMap<String, Agent>,
    children: BTreeMap<String, Vec<String>>,
}

impl Roster {
    /// Indexes `agents`; children lists are sorted by id.
    pub fn new(agents: Vec<Agent>) -> Roster {
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for a in &agents {
            if let Some(p) = &a.parent
                && *p != a.id
            {
                children.entry(p.clone()).or_default().push(a.id.clone());
            }
        }
        for list in children.values_mut() {
            list.sort();
        }
        let by_id = agents.into_iter().map(|a| (a.id.clone(), a)).collect();
        Roster { by_id, children }
    }

    /// The direct children of `id`, sorted by id.
    pub fn children(&self, id: &str) -> impl Iterator<Item = &Agent> {
        self.children
            .get(id)
            .into_iter()
            .flatten()
            .filter_map(|c| self.by_id.get(c))
    }

    /// The live direct children of `id`, sorted by id.
    pub fn live_children(&self, id: &str) -> Vec<&Agent> {
        self.children(id)
            .filter(|a| a.status == AgentStatus::Live)
            .collect()
    }

    /// True when `ancestor` is `id` itself or appears on `id`'s chain of parents.
    pub fn is_within(&self, id: &str, ancestor: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut at = Some(id);
        while let Some(cur) = at {
            if cur == ancestor {
                return true;
            }
            if !seen.insert(cur) {
                return false;
            }
            at = self.by_id.get(cur).and_then(|a| a.parent.as_deref());
        }
        false
    }

    /// The live descendants of `id` (not `id` itself), deepest first and by id within one
    /// depth: every agent comes before its parent, so retiring in this order never leaves a
    /// live child behind.
    pub fn live_descendants_deepest_first(&self, id: &str) -> Vec<String> {
        let mut found: Vec<(usize, String)> = Vec::new();
        let mut seen = BTreeSet::from([id.to_string()]);
        let mut level = vec![id.to_string()];
        let mut depth = 0;
        while !level.is_empty() {
            depth += 1;
            let mut next = Vec::new();
            for parent in &level {
                for child in self.children(parent) {
                    if seen.insert(child.id.clone()) {
                        if child.status == AgentStatus::Live {
                            found.push((depth, child.id.clone()));
                        }
                        next.push(child.id.clone());
                    }
                }
            }
            level = next;
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        found.into_iter().map(|(_, id)| id).collect()
    }
}
