"""The scaling efficiency of a data-parallel run: a gate where a published multi-GPU figure exists, reported elsewhere.

Why: DLE publishes ResNet50's speed-up on the 8 GPUs of one DGX A100 (A100 80GB) over one GPU; gates.yaml holds it as
a floor on results.data_parallel.<precision>.scaling_efficiency for that profile and configuration (its `when`).
Any other run (CPU ranks, another GPU count, another GPU) has no reference to meet: its figure is reported, never
gated, and its report says why (docs/benchmarks.md, section "Data-parallel runs").
"""

NOT_GATED = "reported, not gated: "
NO_PUBLISHED_FIGURES = frozenset({"cpu", "relative"})  # profiles that hold no published multi-device figure


def metric(precision: str) -> str:
    """The gated figure of one training precision of a data-parallel run (data_parallel.summary)."""
    return f"data_parallel.{precision}.scaling_efficiency"


def published(table: dict, name: str) -> list[str]:
    """Where a model's gates (gates.yaml models.<model>) hold a reference for the metric `name`: 'PROFILE (k=v, ...)'
    each."""
    return [f"{profile} ({', '.join(f'{k}={v}' for k, v in gate.get('when', {}).items())})"
            for profile, gates in table.items() if profile not in NO_PUBLISHED_FIGURES
            for gate in gates if gate["metric"] == name]


def why_not_gated(table: dict, name: str, profile: str | None, mismatch: str | None) -> str:
    """Why a run's scaling efficiency is reported and not gated: the configuration its profile's gate differs in
    (`mismatch`), or the profiles a reference exists for, or that none does."""
    where = published(table, name)
    if mismatch:
        return f"{NOT_GATED}{mismatch} (the published scaling: {'; '.join(where)})"
    if where:
        return (f"{NOT_GATED}the published scaling is for {'; '.join(where)}; this run's hardware profile is "
                f"{profile or 'none of gates.yaml'}")
    return f"{NOT_GATED}no published scaling figure for this model and precision (gates.yaml)"
