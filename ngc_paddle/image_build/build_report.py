"""The build report: JSON for machines, a short Markdown table for people.

Why: release engineers compare builds (what was cached, where time and size went). A failed
build writes its own report beside the last good one and never replaces it.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ngc_paddle import engine


@dataclass
class LayerResult:
    layer: str
    target: str
    tag: str
    image_id: str | None = None
    cached: bool = False
    duration_s: float = 0.0
    size_bytes: int = 0
    size_added_bytes: int = 0
    status: str = "pending"  # pending | built | cached | unchanged | failed
    log: str = ""
    # The layer's own fast checks, run right after it was built: passed, skipped, failed ids, seconds.
    checks: dict | None = None
    # sha256 of what the layer is built from (ngc_paddle/image_build/inputs.py), also its image's label.
    inputs_digest: str | None = None
    # The Dockerfile steps (RUN/ADD/COPY) BuildKit executed for it, and how many it took from a cache (local, or
    # the registry's: a second build host whose steps all come from the shared cache rebuilds nothing).
    steps_run: list[str] = field(default_factory=list)
    steps_cached: int = 0
    # What the scan holds a derived image to (scan/checks/config_record.py, own_layers.py): the image's diff ids
    # and its whole config (`docker image inspect`'s Config: Env, Entrypoint, Cmd, User, Labels, ...).
    diff_ids: list[str] = field(default_factory=list)
    config: dict | None = None

    def record_image(self, info: dict | None) -> None:
        """Keep the diff ids and config of the image this layer tagged (its inspect object)."""
        if info is not None:
            self.diff_ids = engine.diff_ids(info) or []
            self.config = info.get("Config") or {}


@dataclass
class BuildReport:
    release: str
    flavor: str
    base_image: str
    started: str
    # running | success | failed | unchanged (inputs equal to the images' labels: nothing built or checked)
    status: str = "running"
    duration_s: float = 0.0
    image: str = ""
    tags: list[str] = field(default_factory=list)
    image_size_bytes: int = 0
    error: str | None = None
    layers: list[LayerResult] = field(default_factory=list)
    inputs_digest: str | None = None  # the whole: the final image's ngc-paddle.inputs-digest label

    def write(self, folder: Path) -> tuple[Path, Path]:
        """Write build.json/.md on success or unchanged, build-failed.json/.md otherwise (the good report stays)."""
        folder.mkdir(parents=True, exist_ok=True)
        stem = "build" if self.status in ("success", "unchanged") else "build-failed"
        json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
        for path, text in ((json_path, json.dumps(asdict(self), indent=2) + "\n"), (md_path, self.markdown())):
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text)
            tmp.replace(path)
        return json_path, md_path

    def markdown(self) -> str:
        lines = [
            f"# Build {self.release}-{self.flavor}: {self.status}",
            "",
            f"- image: `{self.image or '-'}`" + (f" ({human(self.image_size_bytes)})" if self.image_size_bytes else ""),
            f"- base image: `{self.base_image}`",
            f"- started: {self.started}, took {self.duration_s:.1f} s",
            f"- inputs digest: `{self.inputs_digest or '-'}`",
        ]
        if self.error:
            lines.append(f"- error: {self.error}")
        lines += ["", "| layer | status | steps run / from cache | time (s) | size added | image id | checks |",
                  "| --- | --- | --- | ---: | ---: | --- | --- |"]
        for r in self.layers:
            short = (r.image_id or "-").removeprefix("sha256:")[:12]
            checks = "-" if r.checks is None else (
                f"{r.checks['passed']} passed" + (f", failed: {', '.join(r.checks['failed'])}" if r.checks["failed"]
                                                  else "") + f" ({r.checks['seconds']:.1f} s)")
            lines.append(f"| {r.layer} | {r.status} | {len(r.steps_run)} / {r.steps_cached} | {r.duration_s:.1f} | "
                         f"{human(r.size_added_bytes)} | {short} | {checks} |")
        return "\n".join(lines) + "\n"


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(size) < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1000
    return f"{size:.2f} GB"
