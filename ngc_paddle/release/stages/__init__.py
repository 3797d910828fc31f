"""The release stages, one module each, and the three small types between them and the pipeline.

Why: each stage module (build, validate, bench, scan, month_over_month, notes, push) says in one place
what its inputs are (the resume key), how it runs and how it reports (its progress line, the fields it
keeps in state.json, its row in the notes' gate table). The pipeline (ngc_paddle.release.pipeline) only
orders them per flavor, keeps state.json and decides the push. Plain dataclasses, no framework.
"""

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease
from ngc_paddle.manifest.schema import Flavor
from ngc_paddle.release.options import ReleaseOptions


@dataclass(frozen=True)
class Built:
    """One flavor's image as the build stage left it: the input of every gate stage after it."""
    resolved: ResolvedFlavor  # the flavor resolved once for the run: manifest, spec, lock, image names
    image_id: str  # every gate's resume key starts from it: a new image reruns every gate
    size: int
    folder: Path  # build/release/<release>/<flavor>: each stage writes into its own folder below
    opts: ReleaseOptions
    # Whether this host gives containers a GPU: an input of the gates whose evidence needs one (validate,
    # bench), so a NOT PROVEN result of a host without a GPU is never reused on one that has it.
    gpu_host: bool = False
    # A flavor of several platforms, once its candidate index is pushed: each platform -> REGISTRY/REPO@sha256:... of
    # that platform's manifest (the gates and the attestations take each); empty for a flavor of one platform.
    platform_refs: Mapping[str, str] = field(default_factory=dict)

    @property
    def entry(self) -> str:
        """Its name in state.json and the notes: the flavor's (`cpu`) on its first platform, the platform's build
        name (`cpu-arm64`) on another, whose gates are its own. A flavor whose first platform is not the default one
        (linux/arm64 alone) keeps its own name there too, as the build stage and the push keep it."""
        return self.flavor if self.resolved.platform == self.spec.platforms[0] else self.resolved.build_name

    def on_platforms(self) -> list["Built"]:
        """One Built per platform of the flavor's index (the first platform's gates and folder are the flavor's
        own); [self] for a flavor of one platform."""
        if not self.platform_refs:
            return [self]
        release = self.release_run
        out = []
        for platform, ref in self.platform_refs.items():
            one = replace(self, resolved=release.flavor(self.flavor, platform).with_digest(ref),
                          image_id=ref.rsplit("@", 1)[1], platform_refs={})
            out.append(replace(one, folder=self.folder.parent / one.entry))
        return out

    @property
    def release(self) -> str:
        return self.resolved.release

    @property
    def release_run(self) -> ResolvedRelease:
        """The run's release, resolved once: its `previous_release` (loaded once per run, on first use) gives the
        baselines, month-over-month and the A/B reference."""
        return self.resolved.release_run

    @property
    def flavor(self) -> str:
        return self.resolved.name

    @property
    def spec(self) -> Flavor:
        """The flavor as the manifest says it."""
        return self.resolved.spec

    @property
    def image(self) -> str:
        return self.resolved.image

    @property
    def root(self) -> Path:
        """The repository root, resolved."""
        return self.resolved.root


@dataclass(frozen=True)
class Outcome:
    """A stage's verdict. `status` and `detail` are its progress line (`    STAGE: STATUS: DETAIL`) and its row
    in the notes' gate table; `stored` are the extra fields it keeps in state.json (state_file.StageEntry)."""
    status: str  # passed, failed, not proven (the pipeline turns it into "accepted unproven" on a person's word)
    detail: str
    stored: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """A gate stage planned for one flavor: the key of its inputs and how to run it. The pipeline skips it
    when state.json holds a passed entry with the same key (a NOT PROVEN one always reruns)."""
    name: str  # the stage's name in state.json, the progress output and the notes
    key: str
    run: Callable[[], Outcome]


def digest(*parts: object) -> str:
    """A resume key: a short hash of the stage's inputs."""
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:16]


def file_digest(path: Path) -> str:
    """A file's content as a resume key input ("-" when there is none)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "-"


def release_folder(root: Path, release: str) -> Path:
    """Where a release's state.json and each flavor's stage outputs live (not committed)."""
    return root / "build" / "release" / release

