//! The GPUs a run judges (docs/supervision.md, "Which GPUs a run judges"): `--gpus LIST`, else
//! CUDA_VISIBLE_DEVICES, else Slurm's step/job GPUs, else every GPU; and the processes holding
//! memory on those cards, each attributed to a pid, user and command ([`GpuHolder`](super::GpuHolder)).
//!
//! A list entry is an ordinal or a `GPU-…`/`MIG-…` UUID or a unique prefix of one. Ordinals are
//! matched against NVML's (PCI bus) numbering, which is CUDA's only with
//! `CUDA_DEVICE_ORDER=PCI_BUS_ID`: [`GpuScope::resolve_noted`] says so in a note. UUIDs are the
//! same in every numbering, container and cgroup, so they are the safe form.

use serde::Serialize;

use super::reading::MigInstance;
use super::Gpu;

/// Where the run's GPU list came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScopeOrigin {
    /// `--gpus`.
    Flag,
    CudaVisibleDevices,
    SlurmStepGpus,
    SlurmJobGpus,
    All,
}

impl ScopeOrigin {
    /// The flag or variable, as a user would type it.
    pub fn name(self) -> &'static str {
        match self {
            ScopeOrigin::Flag => "--gpus",
            ScopeOrigin::CudaVisibleDevices => "CUDA_VISIBLE_DEVICES",
            ScopeOrigin::SlurmStepGpus => "SLURM_STEP_GPUS",
            ScopeOrigin::SlurmJobGpus => "SLURM_JOB_GPUS",
            ScopeOrigin::All => "no GPU list",
        }
    }
}

/// One entry of a GPU list: an ordinal or a (GPU-/MIG-) UUID or UUID prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum GpuId {
    Index(u32),
    Uuid(String),
}

impl std::fmt::Display for GpuId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuId::Index(i) => write!(f, "{i}"),
            GpuId::Uuid(u) => f.write_str(u),
        }
    }
}

impl GpuId {
    /// One list entry: digits, or `GPU-`/`MIG-` followed by something (a prefix is allowed).
    /// Anything else (`-1`, `NoDevFiles`, an empty entry) is None.
    pub fn parse(entry: &str) -> Option<GpuId> {
        let t = entry.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            return t.parse().ok().map(GpuId::Index);
        }
        let lower = t.to_ascii_lowercase();
        ((lower.starts_with("gpu-") || lower.starts_with("mig-")) && t.len() > 4)
            .then(|| GpuId::Uuid(t.to_string()))
    }

    /// A MIG instance in the current form (`MIG-377e0049-…`), which only a MIG table can place
    /// on its card; the legacy `MIG-GPU-<uuid>/<gi>/<ci>` names its card itself.
    pub fn is_mig_instance(&self) -> bool {
        matches!(self, GpuId::Uuid(u) if u.to_ascii_lowercase().starts_with("mig-") && legacy_mig_parent(u).is_none())
    }
}

/// `MIG-GPU-8932f937-…/1/0` → `GPU-8932f937-…` (lower case).
fn legacy_mig_parent(u: &str) -> Option<String> {
    let lower = u.to_ascii_lowercase();
    let rest = lower.strip_prefix("mig-")?;
    rest.starts_with("gpu-")
        .then(|| rest.split('/').next().unwrap_or(rest).to_string())
}

/// CUDA's reading of CUDA_VISIBLE_DEVICES: the entries before the first invalid one, and that
/// invalid entry (parsing stops there: `0,2,-1,1` exposes 0 and 2). Empty means no GPU.
pub fn parse_cuda_visible(value: &str) -> (Vec<GpuId>, Option<String>) {
    let mut out = Vec::new();
    if value.trim().is_empty() {
        return (out, None);
    }
    for entry in value.split(',') {
        match GpuId::parse(entry) {
            Some(id) => out.push(id),
            None => return (out, Some(entry.trim().to_string())),
        }
    }
    (out, None)
}

/// The GPUs a run judges. `ids == None` means every GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuScope {
    pub ids: Option<Vec<GpuId>>,
    pub origin: ScopeOrigin,
}

/// A scope and what the user should know about how it was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResolvedScope {
    pub scope: GpuScope,
    /// E.g. the ordinal caveat, or where CUDA stopped parsing.
    pub notes: Vec<String>,
}

/// A GPU list that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error(
        "{origin}: {entry:?} is not a GPU index or UUID (an ordinal such as 1, or GPU-…/MIG-…)"
    )]
    BadEntry { origin: String, entry: String },
    #[error("{origin} names no GPU")]
    Empty { origin: String },
}

/// Which cards of a node a scope selects ([`GpuScope::select`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Card indices (as in `Gpu::index`), ascending, each once.
    pub cards: Vec<u32>,
    /// Entries that name no card here (or more than one).
    pub missing: Vec<GpuId>,
    pub notes: Vec<String>,
}

impl GpuScope {
    pub fn all() -> GpuScope {
        GpuScope {
            ids: None,
            origin: ScopeOrigin::All,
        }
    }

    /// --gpus LIST, else CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS, else SLURM_JOB_GPUS, else all.
    pub fn resolve(
        flag: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<GpuScope, ScopeError> {
        GpuScope::resolve_noted(flag, env).map(|r| r.scope)
    }

    /// resolve() with the process environment.
    pub fn from_env(flag: Option<&str>) -> Result<GpuScope, ScopeError> {
        GpuScope::resolve(flag, &|k| std::env::var(k).ok())
    }

    /// resolve_noted() with the process environment.
    pub fn from_env_noted(flag: Option<&str>) -> Result<ResolvedScope, ScopeError> {
        GpuScope::resolve_noted(flag, &|k| std::env::var(k).ok())
    }

    /// [`GpuScope::resolve`], with notes. `--gpus` is strict (a bad entry is an error);
    /// CUDA_VISIBLE_DEVICES is read as CUDA reads it (empty: no GPU; parsing stops at the first
    /// invalid entry, with a note); Slurm's variables hold global ordinals only.
    pub fn resolve_noted(
        flag: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedScope, ScopeError> {
        let mut notes = Vec::new();
        if let Some(list) = flag {
            let origin = ScopeOrigin::Flag;
            if list.trim().eq_ignore_ascii_case("all") {
                return Ok(ResolvedScope {
                    scope: GpuScope { ids: None, origin },
                    notes,
                });
            }
            let ids = strict(list, origin, true)?;
            return Ok(ResolvedScope {
                scope: GpuScope {
                    ids: Some(ids),
                    origin,
                },
                notes,
            });
        }
        if let Some(value) = env("CUDA_VISIBLE_DEVICES") {
            let (ids, stopped) = parse_cuda_visible(&value);
            if value.trim().is_empty() {
                notes.push(
                    "CUDA_VISIBLE_DEVICES is empty: CUDA shows the server no GPU".to_string(),
                );
            }
            if let Some(bad) = stopped {
                notes.push(format!(
                    "CUDA_VISIBLE_DEVICES={}: CUDA stops reading at {bad:?}, so the server sees {}",
                    value.trim(),
                    list_or_none(&ids)
                ));
            }
            let ordinals = ids.iter().any(|i| matches!(i, GpuId::Index(_)));
            let order = env("CUDA_DEVICE_ORDER").unwrap_or_default();
            if ordinals && order.trim() != "PCI_BUS_ID" {
                notes.push(format!(
                    "CUDA_VISIBLE_DEVICES holds ordinals and CUDA_DEVICE_ORDER is {}: CUDA then \
                     numbers GPUs fastest first while NVML and nvidia-smi number them by PCI bus, \
                     so on a node with mixed GPU models the ordinals may name other cards; set \
                     CUDA_DEVICE_ORDER=PCI_BUS_ID, or use GPU UUIDs",
                    if order.trim().is_empty() {
                        "unset".to_string()
                    } else {
                        order.trim().to_string()
                    }
                ));
            }
            return Ok(ResolvedScope {
                scope: GpuScope {
                    ids: Some(ids),
                    origin: ScopeOrigin::CudaVisibleDevices,
                },
                notes,
            });
        }
        for (var, origin) in [
            ("SLURM_STEP_GPUS", ScopeOrigin::SlurmStepGpus),
            ("SLURM_JOB_GPUS", ScopeOrigin::SlurmJobGpus),
        ] {
            let Some(value) = env(var).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            let ids = strict(&value, origin, false)?;
            return Ok(ResolvedScope {
                scope: GpuScope {
                    ids: Some(ids),
                    origin,
                },
                notes,
            });
        }
        Ok(ResolvedScope {
            scope: GpuScope::all(),
            notes,
        })
    }

    /// Whether a card (by index or uuid) is in the scope. A MIG instance in the current UUID
    /// form needs the node's MIG table: see [`GpuScope::select`].
    pub fn includes(&self, gpu: &Gpu) -> bool {
        match &self.ids {
            None => true,
            Some(ids) => ids.iter().any(|id| matches(id, gpu, &[])),
        }
    }

    /// Whether reading the scope needs the node's MIG instances.
    pub fn names_mig_instance(&self) -> bool {
        self.ids.iter().flatten().any(GpuId::is_mig_instance)
    }

    /// "GPUs 0,1 (from CUDA_VISIBLE_DEVICES)", "every GPU".
    pub fn describe(&self) -> String {
        let from = match self.origin {
            ScopeOrigin::All => String::new(),
            o => format!(" (from {})", o.name()),
        };
        match &self.ids {
            None => format!("every GPU{from}"),
            Some(ids) => format!("{}{from}", list_or_none(ids)),
        }
    }

    /// The cards of `gpus` in the scope. CUDA_VISIBLE_DEVICES stops at the first entry that
    /// names no card (as CUDA does); `--gpus` and Slurm skip it with a note. Slurm's ids are
    /// global: when one of them does not exist here and the node shows exactly as many cards
    /// as the list, a device cgroup renumbered them, and every card shown is the job's.
    pub fn select(&self, gpus: &[Gpu], mig: &[MigInstance]) -> Selection {
        let mut sel = Selection::default();
        let Some(ids) = &self.ids else {
            sel.cards = gpus.iter().map(|g| g.index).collect();
            sel.cards.sort_unstable();
            sel.cards.dedup();
            return sel;
        };
        let name = self.origin.name();
        for (k, id) in ids.iter().enumerate() {
            match locate(id, gpus, mig) {
                Ok(card) => {
                    if id.is_mig_instance() || legacy_mig_parent(&id.to_string()).is_some() {
                        sel.notes.push(format!(
                            "{id} is a MIG instance of GPU {card}: the whole card is judged, \
                             other instances' memory included"
                        ));
                    }
                    sel.cards.push(card);
                }
                Err(n) => {
                    let why = if n == 0 {
                        "names no GPU here".to_string()
                    } else {
                        format!("matches {n} GPUs")
                    };
                    sel.missing.push(id.clone());
                    if self.origin == ScopeOrigin::CudaVisibleDevices {
                        sel.missing.extend(ids[k + 1..].iter().cloned());
                        sel.notes.push(format!(
                            "CUDA_VISIBLE_DEVICES entry {id} {why}: CUDA stops there, so the \
                             server sees {}",
                            list_or_none(&ids[..k])
                        ));
                        break;
                    }
                    sel.notes.push(format!("{name} entry {id} {why}"));
                }
            }
        }
        let slurm = matches!(
            self.origin,
            ScopeOrigin::SlurmStepGpus | ScopeOrigin::SlurmJobGpus
        );
        // A full node has every global id; one missing means a renumbered (cgroup) view, where
        // a matching ordinal would be the wrong card.
        if slurm && !sel.missing.is_empty() && gpus.len() == ids.len() {
            sel.cards = gpus.iter().map(|g| g.index).collect();
            sel.missing.clear();
            sel.notes = vec![format!(
                "{name}={} are Slurm's global ids; this node shows {} GPUs (a device cgroup \
                 renumbers them), so all of them are judged",
                list(ids),
                gpus.len()
            )];
        }
        sel.cards.sort_unstable();
        sel.cards.dedup();
        sel
    }
}

fn list(ids: &[GpuId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn list_or_none(ids: &[GpuId]) -> String {
    match ids.len() {
        0 => "no GPU".to_string(),
        1 => format!("GPU {}", ids[0]),
        _ => format!("GPUs {}", list(ids)),
    }
}

/// A strict list: every entry valid, at least one. Slurm's lists hold ordinals only.
fn strict(value: &str, origin: ScopeOrigin, uuids: bool) -> Result<Vec<GpuId>, ScopeError> {
    if value.trim().is_empty() {
        return Err(ScopeError::Empty {
            origin: origin.name().into(),
        });
    }
    let mut out: Vec<GpuId> = Vec::new();
    for entry in value.split(',') {
        let id = GpuId::parse(entry)
            .filter(|id| uuids || matches!(id, GpuId::Index(_)))
            .ok_or_else(|| ScopeError::BadEntry {
                origin: origin.name().into(),
                entry: entry.trim().to_string(),
            })?;
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Whether `id` names `gpu` (UUIDs case-insensitive, by prefix).
fn matches(id: &GpuId, gpu: &Gpu, mig: &[MigInstance]) -> bool {
    match id {
        GpuId::Index(i) => gpu.index == *i,
        GpuId::Uuid(u) => {
            let u = u.to_ascii_lowercase();
            let uuid = gpu.uuid.as_deref().unwrap_or("").to_ascii_lowercase();
            if u.starts_with("gpu-") {
                !uuid.is_empty() && uuid.starts_with(&u)
            } else if let Some(parent) = legacy_mig_parent(&u) {
                !uuid.is_empty() && uuid.starts_with(&parent)
            } else {
                mig.iter()
                    .any(|m| m.parent == gpu.index && m.uuid.to_ascii_lowercase().starts_with(&u))
            }
        }
    }
}

/// The one card `id` names, or how many it names (0, or more than 1 for a short prefix).
fn locate(id: &GpuId, gpus: &[Gpu], mig: &[MigInstance]) -> Result<u32, usize> {
    if id.is_mig_instance() {
        let GpuId::Uuid(u) = id else { unreachable!() };
        let u = u.to_ascii_lowercase();
        let hits: Vec<&MigInstance> = mig
            .iter()
            .filter(|m| m.uuid.to_ascii_lowercase().starts_with(&u))
            .collect();
        return match hits.as_slice() {
            [one] if gpus.iter().any(|g| g.index == one.parent) => Ok(one.parent),
            [_] => Err(0),
            many => Err(many.len()),
        };
    }
    let hits: Vec<u32> = gpus
        .iter()
        .filter(|g| matches(id, g, mig))
        .map(|g| g.index)
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        many => Err(many.len()),
    }
}
