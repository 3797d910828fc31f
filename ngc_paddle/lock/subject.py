"""What lock/ reads of a flavor: one flavor of one release's manifest (the run's mirrors applied), chosen once.

Why: a lock is made from, checked against and read for one flavor of one manifest. Passed as one object, the run's
ngc_paddle.flavor.ResolvedFlavor (above lock/; it satisfies LockSubject), the flavor is looked up once and every
step reads the same manifest: nothing in lock/ takes the raw manifest and a flavor name to look the flavor up again
(one step with the mirrors, another without). A flavor on another platform than the default one is read through a
manifest whose flavor carries that platform's versions (flavor.py, manifest_on). ManifestFlavor is the
plain subject: what the resolver (flavor.py) starts from, and what a lock that leaves optional layers out was
resolved from (check.without_layers).
"""

from dataclasses import dataclass
from typing import Protocol

from ngc_paddle.manifest.schema import Flavor, Manifest
from ngc_paddle.platforms import DEFAULT_PLATFORM


class LockSubject(Protocol):
    """One flavor of a release, its name already checked against the manifest."""

    @property
    def manifest(self) -> Manifest: ...  # the run's sources applied

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> Flavor: ...  # the flavor as the manifest says it (on another platform: at its versions there)

    @property
    def platform(self) -> str: ...  # the platform locked (linux/amd64, linux/arm64: ngc_paddle/platforms.py)


@dataclass(frozen=True)
class ManifestFlavor:
    """A flavor of a manifest, by a name the caller checked (the resolver, or a narrowing of a subject)."""

    manifest: Manifest
    name: str
    platform: str = DEFAULT_PLATFORM

    @property
    def spec(self) -> Flavor:
        return self.manifest.flavors[self.name]
