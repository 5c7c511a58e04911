//! Which GPUs a run judges (docs/supervision.md, "Which GPUs a run judges"): every form of a
//! GPU list (ordinals, `GPU-…` UUIDs and prefixes, MIG, empty, invalid entries, Slurm's global
//! ids), the resolution order, and the selection of a node's cards, on the recorded H200 node.

use std::collections::HashMap;

use inferlint_host::gpu::{self, Gpu, GpuId, GpuScope, MigInstance, ScopeOrigin};

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

fn resolve(flag: Option<&str>, pairs: &[(&str, &str)]) -> gpu::ResolvedScope {
    GpuScope::resolve_noted(flag, &env(pairs)).unwrap()
}

fn idx(v: &[u32]) -> Option<Vec<GpuId>> {
    Some(v.iter().map(|&i| GpuId::Index(i)).collect())
}

/// The recorded H200 node (before the release): 8 cards with their UUIDs and used memory.
/// None (the test is skipped) when the evidence is absent outside CI.
fn h200() -> Option<Vec<Gpu>> {
    let text = inferlint_core::testkit::evidence_text(
        "nvidia-smi/h200x8-query-gpu-and-compute-apps-before-after.txt",
    )?;
    let block: String = text
        .lines()
        .skip_while(|l| !l.starts_with("index, uuid"))
        .take_while(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    Some(gpu::parse_query_gpu_fields(&block, &["index"]).unwrap())
}

#[test]
fn the_recorded_h200_query_parses_with_uuids_by_its_header() {
    let Some(g) = h200() else { return };
    assert_eq!(g.len(), 8);
    assert_eq!(g[2].index, 2);
    assert_eq!(
        g[2].uuid.as_deref(),
        Some("GPU-4e9e74b7-4977-f04d-3af3-ccfe5f570e90")
    );
    assert_eq!(g[2].memory_used_mib, Some(105_851));
    assert_eq!(g[7].memory_used_mib, Some(58_071));
    assert_eq!(g[7].memory_total_mib, Some(143_771));
    assert_eq!(g[0].name, "", "no name column was asked");
    assert_eq!(g[0].memory_free_mib, None);
    // The scope readings' own query, without header, a comma in the name.
    let g = gpu::parse_query_gpu_fields(
        "3, GPU-02dbe542-8a6f-11a4-7c2a-486b7d4e9092, Tesla V100, rev A, 16160, 10, 16150, 535.1, [N/A]\n",
        &gpu::QUERY_GPU_UUID.split(',').collect::<Vec<_>>(),
    )
    .unwrap();
    assert_eq!(g[0].name, "Tesla V100, rev A");
    assert_eq!(
        g[0].uuid.as_deref(),
        Some("GPU-02dbe542-8a6f-11a4-7c2a-486b7d4e9092")
    );
    assert_eq!(
        (
            g[0].memory_used_mib,
            g[0].driver.as_deref(),
            g[0].compute_cap.as_deref()
        ),
        (Some(10), Some("535.1"), None)
    );
    // Too few columns is an error naming the line.
    let err =
        gpu::parse_query_gpu_fields("0, GPU-x\n", &["index", "uuid", "memory.used"]).unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
}

#[test]
fn entries_ordinals_uuids_prefixes_and_mig() {
    assert_eq!(GpuId::parse(" 3 "), Some(GpuId::Index(3)));
    assert_eq!(
        GpuId::parse("GPU-8932f937"),
        Some(GpuId::Uuid("GPU-8932f937".into()))
    );
    assert_eq!(
        GpuId::parse("MIG-377e0049-aaaa"),
        Some(GpuId::Uuid("MIG-377e0049-aaaa".into()))
    );
    for bad in ["-1", "", "GPU-", "NoDevFiles", "all", "1.5", "0x1"] {
        assert_eq!(GpuId::parse(bad), None, "{bad:?}");
    }
    assert!(GpuId::parse("MIG-377e0049").unwrap().is_mig_instance());
    assert!(!GpuId::parse("MIG-GPU-4e9e74b7-4977/1/0")
        .unwrap()
        .is_mig_instance());
    assert!(!GpuId::parse("GPU-4e9e74b7").unwrap().is_mig_instance());
}

#[test]
fn cuda_visible_devices_is_read_as_cuda_reads_it() {
    // Survivors in list order; parsing stops at the first invalid entry.
    assert_eq!(
        gpu::parse_cuda_visible("0,2,-1,1"),
        (
            vec![GpuId::Index(0), GpuId::Index(2)],
            Some("-1".to_string())
        )
    );
    assert_eq!(
        gpu::parse_cuda_visible("2,1"),
        (vec![GpuId::Index(2), GpuId::Index(1)], None)
    );
    // Empty: no GPU at all (not every GPU).
    let r = resolve(None, &[("CUDA_VISIBLE_DEVICES", "")]);
    assert_eq!(r.scope.ids, Some(vec![]));
    assert_eq!(r.scope.origin, ScopeOrigin::CudaVisibleDevices);
    assert!(r.notes[0].contains("empty"), "{:?}", r.notes);
    assert_eq!(r.scope.describe(), "no GPU (from CUDA_VISIBLE_DEVICES)");
    let r = resolve(None, &[("CUDA_VISIBLE_DEVICES", "0,2,-1,1")]);
    assert_eq!(r.scope.ids, idx(&[0, 2]));
    assert!(
        r.notes[0].contains("stops reading at \"-1\", so the server sees GPUs 0,2"),
        "{:?}",
        r.notes
    );
    // Slurm's "no GPU" marker stops at once.
    let r = resolve(None, &[("CUDA_VISIBLE_DEVICES", "NoDevFiles")]);
    assert_eq!(r.scope.ids, Some(vec![]));
}

#[test]
fn ordinals_get_the_device_order_note_and_uuids_do_not() {
    let note = |pairs: &[(&str, &str)]| {
        resolve(None, pairs)
            .notes
            .iter()
            .any(|n| n.contains("CUDA_DEVICE_ORDER"))
    };
    assert!(note(&[("CUDA_VISIBLE_DEVICES", "1")]));
    assert!(note(&[
        ("CUDA_VISIBLE_DEVICES", "1"),
        ("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    ]));
    assert!(!note(&[
        ("CUDA_VISIBLE_DEVICES", "1"),
        ("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    ]));
    assert!(!note(&[("CUDA_VISIBLE_DEVICES", "GPU-4e9e74b7")]));
    // --gpus names NVML's numbering itself: no note.
    assert!(resolve(Some("1"), &[]).notes.is_empty());
}

#[test]
fn the_resolution_order() {
    let all = [
        ("CUDA_VISIBLE_DEVICES", "1"),
        ("SLURM_STEP_GPUS", "2"),
        ("SLURM_JOB_GPUS", "3"),
    ];
    let r = resolve(Some("4,GPU-4e9e74b7"), &all).scope;
    assert_eq!(r.origin, ScopeOrigin::Flag);
    assert_eq!(
        r.ids,
        Some(vec![GpuId::Index(4), GpuId::Uuid("GPU-4e9e74b7".into())])
    );
    assert_eq!(r.describe(), "GPUs 4,GPU-4e9e74b7 (from --gpus)");
    let r = resolve(None, &all).scope;
    assert_eq!(
        (r.origin, r.ids),
        (ScopeOrigin::CudaVisibleDevices, idx(&[1]))
    );
    let r = resolve(None, &all[1..]).scope;
    assert_eq!((r.origin, r.ids), (ScopeOrigin::SlurmStepGpus, idx(&[2])));
    let r = resolve(None, &all[2..]).scope;
    assert_eq!(
        (r.origin, r.ids.clone()),
        (ScopeOrigin::SlurmJobGpus, idx(&[3]))
    );
    assert_eq!(r.describe(), "GPU 3 (from SLURM_JOB_GPUS)");
    // An empty Slurm variable is no list.
    let r = resolve(None, &[("SLURM_STEP_GPUS", ""), ("SLURM_JOB_GPUS", "0,1")]).scope;
    assert_eq!((r.origin, r.ids), (ScopeOrigin::SlurmJobGpus, idx(&[0, 1])));
    let r = resolve(None, &[]).scope;
    assert_eq!(r, GpuScope::all());
    assert_eq!(r.describe(), "every GPU");
    let r = resolve(Some("all"), &all).scope;
    assert_eq!((r.origin, r.ids.clone()), (ScopeOrigin::Flag, None));
    assert_eq!(r.describe(), "every GPU (from --gpus)");
}

#[test]
fn bad_lists_are_errors_that_name_the_entry_and_where_it_came_from() {
    let err = |flag: Option<&str>, pairs: &[(&str, &str)]| {
        GpuScope::resolve(flag, &env(pairs))
            .unwrap_err()
            .to_string()
    };
    let e = err(Some("0,x,1"), &[]);
    assert!(e.starts_with("--gpus: \"x\" is not a GPU index"), "{e}");
    assert_eq!(err(Some(" "), &[]), "--gpus names no GPU");
    assert!(err(Some("0,-1"), &[]).contains("\"-1\""));
    // Slurm holds ordinals only.
    let e = err(None, &[("SLURM_STEP_GPUS", "0,GPU-4e9e74b7")]);
    assert!(e.starts_with("SLURM_STEP_GPUS: \"GPU-4e9e74b7\""), "{e}");
    // CUDA_VISIBLE_DEVICES is never an error: CUDA itself takes it.
    assert!(GpuScope::resolve(None, &env(&[("CUDA_VISIBLE_DEVICES", "x")])).is_ok());
}

fn select(scope: &GpuScope, gpus: &[Gpu], mig: &[MigInstance]) -> gpu::Selection {
    scope.select(gpus, mig)
}

fn scope(origin: ScopeOrigin, ids: &[&str]) -> GpuScope {
    GpuScope {
        ids: Some(ids.iter().map(|s| GpuId::parse(s).unwrap()).collect()),
        origin,
    }
}

#[test]
fn cards_are_matched_by_index_uuid_and_unique_prefix() {
    let Some(g) = h200() else { return };
    let s = scope(ScopeOrigin::Flag, &["GPU-4e9e74b7", "5"]);
    assert_eq!(select(&s, &g, &[]).cards, vec![2, 5]);
    assert!(s.includes(&g[2]) && s.includes(&g[5]));
    assert!(!s.includes(&g[4]), "GPU 4 is not in the scope");
    // The whole UUID, in another case.
    let s = scope(
        ScopeOrigin::Flag,
        &["gpu-28780EB0-24d5-1f13-59b8-ae5c23617a72"],
    );
    assert_eq!(select(&s, &g, &[]).cards, vec![7]);
    // A prefix that fits two cards names neither (CUDA wants a unique prefix).
    let s = scope(ScopeOrigin::Flag, &["GPU-4", "1"]);
    let sel = select(&s, &g, &[]);
    assert_eq!(sel.cards, vec![1]);
    assert_eq!(sel.missing, vec![GpuId::Uuid("GPU-4".into())]);
    assert!(sel.notes[0].contains("matches 2 GPUs"), "{:?}", sel.notes);
    // --gpus skips an entry naming no card, with a note.
    let sel = select(&scope(ScopeOrigin::Flag, &["9", "3"]), &g, &[]);
    assert_eq!(sel.cards, vec![3]);
    assert_eq!(sel.notes, vec!["--gpus entry 9 names no GPU here"]);
    // No list: every card.
    assert_eq!(
        select(&GpuScope::all(), &g, &[]).cards,
        (0..8).collect::<Vec<_>>()
    );
}

#[test]
fn cuda_visible_devices_stops_at_an_entry_that_names_no_card() {
    let Some(g) = h200() else { return };
    let sel = select(
        &scope(ScopeOrigin::CudaVisibleDevices, &["6", "9", "2"]),
        &g,
        &[],
    );
    assert_eq!(sel.cards, vec![6]);
    assert_eq!(sel.missing, vec![GpuId::Index(9), GpuId::Index(2)]);
    assert!(sel.notes[0].contains("CUDA stops there, so the server sees GPU 6"));
    // Empty list: no card, and the reading can tell nothing.
    let none = GpuScope {
        ids: Some(vec![]),
        origin: ScopeOrigin::CudaVisibleDevices,
    };
    assert!(select(&none, &g, &[]).cards.is_empty());
}

#[test]
fn mig_instances_are_judged_on_their_card() {
    let Some(g) = h200() else { return };
    let mig = gpu::parse_list_gpus(
        "GPU 0: NVIDIA H200 (UUID: GPU-a44622e3-2296-6285-0a86-84d0f6c67900)\n\
         GPU 1: NVIDIA H200 (UUID: GPU-4f31bb83-f8dc-d0af-029e-bc4356e6afeb)\n\
         \x20 MIG 3g.71gb     Device  0: (UUID: MIG-377e0049-1111-5555-9999-aaaaaaaaaaaa)\n\
         \x20 MIG 3g.71gb     Device  1: (UUID: MIG-377e0049-2222-5555-9999-bbbbbbbbbbbb)\n",
    );
    assert_eq!(
        mig,
        vec![
            MigInstance {
                uuid: "MIG-377e0049-1111-5555-9999-aaaaaaaaaaaa".into(),
                parent: 1
            },
            MigInstance {
                uuid: "MIG-377e0049-2222-5555-9999-bbbbbbbbbbbb".into(),
                parent: 1
            }
        ]
    );
    let s = scope(ScopeOrigin::CudaVisibleDevices, &["MIG-377e0049-2"]);
    assert!(s.names_mig_instance());
    let sel = select(&s, &g, &mig);
    assert_eq!(sel.cards, vec![1]);
    assert!(
        sel.notes[0].contains("MIG instance of GPU 1"),
        "{:?}",
        sel.notes
    );
    // Without the MIG table the instance names nothing (and CUDA's reading stops).
    assert!(select(&s, &g, &[]).cards.is_empty());
    // A prefix that fits both instances names no card.
    let sel = select(&scope(ScopeOrigin::Flag, &["MIG-377e0049"]), &g, &mig);
    assert!(sel.cards.is_empty());
    assert!(sel.notes[0].contains("matches 2 GPUs"), "{:?}", sel.notes);
    // The legacy form names its GPU itself.
    let legacy = scope(
        ScopeOrigin::Flag,
        &["MIG-GPU-02dbe542-8a6f-11a4-7c2a-486b7d4e9092/1/0"],
    );
    assert!(!legacy.names_mig_instance());
    assert_eq!(select(&legacy, &g, &[]).cards, vec![3]);
    assert!(legacy.includes(&g[3]) && !legacy.includes(&g[2]));
}

#[test]
fn slurm_ids_are_global() {
    let Some(g) = h200() else { return };
    // The whole node is visible: global ids are NVML's.
    let s = GpuScope::resolve(None, &env(&[("SLURM_STEP_GPUS", "2,4")])).unwrap();
    let sel = select(&s, &g, &[]);
    assert_eq!(sel.cards, vec![2, 4]);
    assert!(sel.notes.is_empty());
    // A device cgroup shows the job's two cards as 0 and 1: ids 6,7 exist nowhere, and both
    // cards shown are the job's.
    let cgroup: Vec<Gpu> = g[6..]
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, mut c)| {
            c.index = i as u32;
            c
        })
        .collect();
    let s = GpuScope::resolve(None, &env(&[("SLURM_JOB_GPUS", "6,7")])).unwrap();
    let sel = select(&s, &cgroup, &[]);
    assert_eq!(sel.cards, vec![0, 1]);
    assert!(sel.notes[0].contains("global ids"), "{:?}", sel.notes);
    // Ids 1,6 renumbered to 0,1: id 1 exists here but is the job's first card, not global 1.
    let s = GpuScope::resolve(None, &env(&[("SLURM_JOB_GPUS", "1,6")])).unwrap();
    assert_eq!(select(&s, &cgroup, &[]).cards, vec![0, 1]);
    // One of two ids missing on a full node is only a note, never every card.
    let s = GpuScope::resolve(None, &env(&[("SLURM_JOB_GPUS", "1,9")])).unwrap();
    let sel = select(&s, &g, &[]);
    assert_eq!(sel.cards, vec![1]);
    assert_eq!(sel.missing, vec![GpuId::Index(9)]);
}
