//! One reading of the node's cards and the processes on them, and its view through a
//! [`GpuScope`]: the run judges only its own cards, and memory elsewhere is a note.

use serde::Serialize;

use super::holder::GpuHolder;
use super::scope::GpuScope;
use super::Gpu;
use crate::fmt::thousands;

/// A compute process as the source listed it, before attribution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RawProc {
    pub gpu: u32,
    pub pid: u32,
    pub used_mib: Option<u64>,
    /// The source's own name for it (nvidia-smi's `process_name`), if any.
    pub name: Option<String>,
}

/// A source's answer before attribution: the cards, their processes (None: not listed), and
/// the MIG instances.
pub type RawNode = (Vec<Gpu>, Option<Vec<RawProc>>, Vec<MigInstance>);

/// A MIG instance and the card it is part of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MigInstance {
    pub uuid: String,
    pub parent: u32,
}

/// Every card of the node and every compute process on them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeReading {
    pub gpus: Vec<Gpu>,
    /// None: the source cannot attribute memory.
    pub holders: Option<Vec<GpuHolder>>,
    /// The MIG instances (read only when the scope names one).
    pub mig: Vec<MigInstance>,
}

/// One reading of the scope's cards.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScopeReading {
    /// Only the cards in the scope.
    pub gpus: Vec<Gpu>,
    /// None: the source cannot attribute memory.
    pub holders: Option<Vec<GpuHolder>>,
}

impl ScopeReading {
    /// The largest used MiB over the scope's cards; None when a card is unreadable or the
    /// scope has no card (no GPU is "can't tell", never clear).
    pub fn max_used_mib(&self) -> Option<u64> {
        self.gpus
            .iter()
            .map(|g| g.memory_used_mib)
            .collect::<Option<Vec<u64>>>()?
            .into_iter()
            .max()
    }

    /// Whether the listed holders account for every card's used memory but `slack_mib`: then
    /// no memory is held by a process the driver no longer lists (a dead one whose memory is
    /// not given back yet). False when a card or a holder's memory is unknown, or the source
    /// lists no holders.
    pub fn attributed_within(&self, slack_mib: u64) -> bool {
        let Some(holders) = &self.holders else {
            return false;
        };
        if self.gpus.is_empty() || holders.iter().any(|h| h.used_mib.is_none()) {
            return false;
        }
        self.gpus.iter().all(|g| {
            let held: u64 = holders
                .iter()
                .filter(|h| h.gpu == g.index)
                .filter_map(|h| h.used_mib)
                .sum();
            g.memory_used_mib
                .is_some_and(|used| used <= held.saturating_add(slack_mib))
        })
    }
}

/// A node reading seen through a scope: the scope's cards, the others, and notes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScopeView {
    pub reading: ScopeReading,
    /// The cards outside the scope.
    pub outside: Vec<Gpu>,
    /// The holders on those cards (None when the source cannot attribute).
    pub outside_holders: Option<Vec<GpuHolder>>,
    /// How the scope met this node (entries naming no card, MIG instances judged whole, …).
    pub notes: Vec<String>,
}

impl ScopeView {
    /// "GPU 0 (not judged) holds 21,768 MiB: pid 4711 (alice) VLLM::EngineCore, 21768 MiB on
    /// GPU 0": the cards outside the scope using more than
    /// `max_used_mib`, one clause each; None when there is none. Memory there is a note, not a
    /// reason to refuse.
    pub fn busy_outside(&self, max_used_mib: u64) -> Option<String> {
        let parts: Vec<String> = self
            .outside
            .iter()
            .filter(|g| g.memory_used_mib.is_some_and(|u| u > max_used_mib))
            .map(|g| {
                let used = g.memory_used_mib.unwrap_or(0);
                let who: Vec<String> = self
                    .outside_holders
                    .iter()
                    .flatten()
                    .filter(|h| h.gpu == g.index)
                    .map(GpuHolder::describe)
                    .collect();
                let who = if who.is_empty() {
                    String::new()
                } else {
                    format!(": {}", who.join(", "))
                };
                format!(
                    "GPU {} (not judged) holds {} MiB{who}",
                    g.index,
                    thousands(used as i64)
                )
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

impl NodeReading {
    /// This reading through `scope`.
    pub fn scoped(&self, scope: &GpuScope) -> ScopeView {
        let sel = scope.select(&self.gpus, &self.mig);
        let (inside, outside): (Vec<Gpu>, Vec<Gpu>) = self
            .gpus
            .iter()
            .cloned()
            .partition(|g| sel.cards.contains(&g.index));
        let split = |keep: bool| {
            self.holders.as_ref().map(|hs| {
                hs.iter()
                    .filter(|h| sel.cards.contains(&h.gpu) == keep)
                    .cloned()
                    .collect::<Vec<_>>()
            })
        };
        ScopeView {
            reading: ScopeReading {
                gpus: inside,
                holders: split(true),
            },
            outside,
            outside_holders: split(false),
            notes: sel.notes,
        }
    }
}

/// `--query-compute-apps` rows placed on their cards by `gpu_uuid` (a GPU's, or a MIG
/// instance's from the MIG table); a row without `gpu_uuid` only on a node of one card. A row
/// whose card is unknown is left out: the card's used memory still counts, only its
/// attribution is missing.
pub fn compute_apps_on_cards(text: &str, gpus: &[Gpu], mig: &[MigInstance]) -> Vec<RawProc> {
    let card_of = |uuid: &str| {
        let u = uuid.to_ascii_lowercase();
        gpus.iter()
            .find(|g| {
                g.uuid
                    .as_deref()
                    .is_some_and(|x| x.to_ascii_lowercase() == u)
            })
            .map(|g| g.index)
            .or_else(|| {
                mig.iter()
                    .find(|m| m.uuid.to_ascii_lowercase() == u)
                    .map(|m| m.parent)
            })
    };
    super::parse_compute_apps(text)
        .into_iter()
        .filter_map(|a| {
            let gpu = match (a.gpu_uuid.as_deref(), gpus) {
                (Some(u), _) => card_of(u)?,
                (None, [only]) => only.index,
                (None, _) => return None,
            };
            Some(RawProc {
                gpu,
                pid: a.pid,
                used_mib: a.used_mib,
                name: a.process_name,
            })
        })
        .collect()
}

/// `nvidia-smi -L`: the MIG instances under each `GPU n: … (UUID: GPU-…)` line
/// (`  MIG 1g.10gb Device  0: (UUID: MIG-…)`).
pub fn parse_list_gpus(text: &str) -> Vec<MigInstance> {
    let mut out = Vec::new();
    let mut parent: Option<u32> = None;
    for line in text.lines() {
        let t = line.trim();
        let uuid = t
            .rsplit_once("(UUID: ")
            .map(|(_, u)| u.trim_end_matches(')').trim().to_string());
        if let Some(rest) = t.strip_prefix("GPU ") {
            parent = rest.split(':').next().and_then(|n| n.trim().parse().ok());
        } else if t.starts_with("MIG ") {
            if let (Some(p), Some(u)) = (parent, uuid) {
                out.push(MigInstance { uuid: u, parent: p });
            }
        }
    }
    out
}
