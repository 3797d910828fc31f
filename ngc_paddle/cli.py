"""`ngc-paddle`: the command line, one subcommand per job (build, manifest, lock, validate, scan, gates, release...).

Why: make targets, CI and release engineers all go through one entry point that turns every
failure into one line on stderr and a distinct exit code (ngc_common.exit_codes: 1 a build or gate
failed, 2 bad input or toolchain, 3 not proven, 4 an internal error, its traceback saved to a file
named in the line, 130 interrupted). SIGTERM stops a run as Ctrl-C does (jobs a fan-out submitted are
cancelled first), 143.
"""

import argparse
import json
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from ngc_common import crash
from ngc_common.errors import OneLineError, shown
from ngc_common.exit_codes import ExitCode
from ngc_paddle import fields, image_ref
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import build_flavor, image_index
from ngc_paddle.image_build.bakefile import OVERRIDE, write_build_inputs, write_override
from ngc_paddle.manifest.loader import latest_release
from ngc_paddle.manifest.resolve import platform_differences
from ngc_paddle.validate_image import validate


def _source_overrides(values: list[str]) -> dict[str, str]:
    overrides = {}
    for value in values:
        name, sep, where = value.partition("=")
        if not sep or not name or not where:
            raise NgcPaddleError(f"--source {value!r} must be NAME=URL or NAME=PATH (e.g. pypi=https://mirror/simple)")
        overrides[name] = where
    return overrides


def _references(values: list[str]) -> dict[str, str]:
    """--reference [FLAVOR=]IMAGE, repeated: the A/B reference per flavor ("*": every flavor), each an image by
    digest in the OCI reference grammar (the flavor is checked against the release where it is loaded:
    ngc_paddle.release.stages.ab.check_references)."""
    found = {}
    for value in values:
        flavor, sep, image = value.partition("=")
        if not sep:
            flavor, image = "*", value
        try:
            if sep and not flavor.strip():
                raise ValueError("names no flavor before '='")
            fields.digest_reference(image)
        except ValueError as exc:
            raise NgcPaddleError(f"--reference {shown(value)}: (argument): {exc}; fix: --reference "
                                 "[FLAVOR=]REGISTRY/REPO@sha256:<64 hex> (an image by digest, which every node "
                                 "pulls)") from None
        found[flavor] = image
    return found


def _registry(args: argparse.Namespace) -> None:
    """--registry is put before image names that docker pushes and pulls: what docker would refuse (a space, a
    newline, a scheme) is one line here, before anything runs."""
    value = getattr(args, "registry", None)
    if value is not None:
        try:
            fields.registry(value)
        except ValueError as exc:
            raise NgcPaddleError(f"--registry {shown(value)}: (argument): {exc}; fix: --registry HOST[:PORT] "
                                 "(e.g. 127.0.0.1:5000, registry.example:5000)") from None


def _ab_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference", action="append", default=[], metavar="[FLAVOR=]IMAGE",
                   help="A/B reference by digest (default: the previous release's image of each flavor, by digest)")
    p.add_argument("--ab-rounds", type=int, help="A/B rounds, 1 to 999 (default: 5, 3 with --ab-smoke; a FAIL "
                   "needs at least 5)")
    p.add_argument("--ab-smoke", action="store_true", help="seconds-long A/B rounds (tests)")
    p.add_argument("--ab-validation-time", action="store_true", help="each A/B round also times the validation "
                   "suite's fast checks")


def cmd_build(args: argparse.Namespace) -> int:
    release = ResolvedRelease.load(Path(args.root), args.release, _source_overrides(args.source))
    platforms = args.platform or release.platforms(args.flavor)  # default: every platform the flavor is built for
    flavors = [release.flavor(args.flavor, platform) for platform in platforms]  # all checked first
    for flavor in flavors:
        build_flavor.build(flavor, force=args.force, say=lambda line: print(line, flush=True),
                           cache_registry=args.cache_registry or os.environ.get("NGC_PADDLE_CACHE_REGISTRY") or None)
    first = release.flavor(args.flavor)
    if len(flavors) > 1 and set(platforms) == set(release.platforms(args.flavor)):  # all of them: one tag
        image_index.fold({f.platform: f.tags[0] for f in flavors}, first.tags, first.reports_dir,
                         say=lambda line: print(line, flush=True))
    return 0


def cmd_manifest_check(args: argparse.Namespace) -> int:
    root = Path(args.root)
    targets = args.releases or sorted(p.stem for p in (root / "releases").glob("*.yaml"))
    if not targets:  # nothing checked is no "ok"
        raise NgcPaddleError(f"{root / 'releases'}: (folder): holds no release manifest (YY.MM.yaml) to check; "
                             "fix: run from the repository root (or --root REPO), or name manifests to check")
    failed = 0
    for target in targets:
        try:
            release = _release(target, root)
        except NgcPaddleError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        locks, before = [], failed
        for name, platform in [(n, p) for n, spec in release.manifest.flavors.items() for p in spec.platforms]:
            try:
                flavor = release.flavor(name, platform)
            except NgcPaddleError as exc:
                print(f"error: {exc}", file=sys.stderr)
                failed += 1
                continue
            if flavor.lock_problem:  # missing, or no longer matching the manifest: names the lock file
                print(f"error: {flavor.lock_problem}", file=sys.stderr)
                failed += 1
                continue
            pending = f" ({flavor.pending})" if flavor.lock is None else ""
            shown = name if len(release.platforms(name)) == 1 else f"{name} {platform}"  # one platform: as before
            locks.append(f"{shown} {'locked' if flavor.lock is not None else 'lock pending' + pending}")
        if failed == before:
            print(f"ok: {release.release} (flavors: {'; '.join(locks)})")
    return ExitCode.BAD_INPUT if failed else ExitCode.PASS


def cmd_lock(args: argparse.Namespace) -> int:
    from ngc_paddle.lock_command import run

    root = Path(args.root)
    run(_release(args.release, root, _source_overrides(args.source)), args.flavor,
        say=lambda line: print(line, flush=True), platforms=args.platform)
    return 0


def _release(release: str | None, root: Path, sources: Mapping[str, str] | None = None) -> ResolvedRelease:
    """A release (a name, default the newest, or a manifest file) with the mirrors given, loaded once for this
    command; its error lines name the files below ROOT/releases as the command was given ROOT."""
    return ResolvedRelease.load(root, release, sources, root / "releases")


def cmd_manifest_show(args: argparse.Namespace) -> int:
    release = _release(args.release, Path(args.root))
    flavor = release.flavor(args.flavor, args.platform)
    print(json.dumps(flavor.declared_manifest, indent=2))
    for line in platform_differences(release.manifest, flavor.name):  # the JSON stays one platform's, as baked in
        print(f"note: {line}", file=sys.stderr)
    return 0


def cmd_bake_file(args: argparse.Namespace) -> int:
    root = Path(args.root)
    sources = _source_overrides(args.source)
    release = _release(args.release, root, sources)
    if not sources and release.release == latest_release(root / "releases"):
        write_override(release)  # what a plain `docker buildx bake` builds: the newest release
        print(OVERRIDE)
    print(write_build_inputs(release).relative_to(root.resolve()))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    image = args.image
    if image is None and args.container is None:
        image, _ = image_ref.resolve(None, None, None, root)
    validate(image, args.container, Path(args.output) if args.output else None, root, args.pytest_args)
    return 0


def cmd_scan(args: argparse.Namespace) -> int:
    from datetime import date

    from ngc_paddle.scan import per_platform
    from ngc_paddle.scan.vulnerabilities import sources

    root = Path(args.root).resolve()
    image = args.image or image_ref.resolve(None, None, None, root)[0]
    output = Path(args.output) if args.output else root / "build" / "scan" / image.replace("/", "_").replace(":", "-")
    reports = [("trivy", Path(p)) for p in args.trivy_report] + [("grype", Path(p)) for p in args.grype_report]
    osv = sources.resolve_osv_dir(Path(args.osv_dir) if args.osv_dir else None, root)
    try:
        today = date.fromisoformat(args.today) if args.today else None
    except ValueError:
        raise NgcPaddleError(f"--today {args.today[:40]!r}: (argument): not a date; fix: write YYYY-MM-DD") from None
    overrides = _source_overrides(args.source)
    scans = per_platform.scan(image, output, Path(args.policy), osv, reports, args.db_repository, today, root,
                              source_overrides=overrides, platforms=args.platform)
    failure = per_platform.verdict(image, scans)
    if failure is not None:
        raise failure
    return 0


def cmd_osv_import(args: argparse.Namespace) -> int:
    from ngc_paddle.scan.vulnerabilities import osv_import, sources

    root = Path(args.root).resolve()
    into = Path(args.into) if args.into else sources.default_osv_dir(root)
    osv_import.import_zip(args.source, args.ecosystem, into, say=lambda line: print(line, flush=True))
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    if args.release == "new":
        from ngc_paddle.release.new import create

        if not args.target or not args.from_release:
            raise NgcPaddleError("usage: ngc-paddle release new YY.MM --from PREV")
        path, diff, _ = create(args.target, args.from_release, root, write=not args.dry_run)
        print(diff or "(no change)")
        print(f"{'would write' if args.dry_run else 'wrote'} {path.relative_to(root)}; review the diff, then "
              f"'ngc-paddle manifest check {args.target}'")
        if not args.dry_run and not args.no_lock:  # the next month's locks, for every flavor not marked pending
            from ngc_paddle.lock_command import run as lock_run

            lock_run(ResolvedRelease.load(root, args.target), [], say=lambda line: print(line, flush=True))
        return 0
    if args.release == "notes":
        from ngc_paddle.release.stages.notes import render

        release = args.target or latest_release(root / "releases")
        print(render(root, release).relative_to(root))
        return 0
    from ngc_paddle.release.options import ReleaseOptions, benchmarks
    from ngc_paddle.release.pipeline import run

    release = args.release or latest_release(root / "releases")
    opts = ReleaseOptions(release, args.flavor, args.registry, Path(args.policy),
                          Path(args.osv_dir) if args.osv_dir else None,
                          benchmarks(args.bench), root,
                          args.accept_unproven, _source_overrides(args.source),
                          Path(args.fleet) if args.fleet else None, args.key, args.no_attest,
                          _references(args.reference), args.ab_rounds, args.ab_smoke, args.ab_validation_time)
    run(opts, say=lambda line: print(line, flush=True))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ngc_paddle import attestations
    from ngc_paddle.release import verify_image

    public_key = Path(args.key)
    attestations.split_reference(args.image)  # a tag, not a digest: exit 2 before any registry call
    if not public_key.is_file() or "-----BEGIN PUBLIC KEY-----" not in public_key.read_text(errors="replace"):
        raise NgcPaddleError(f"{public_key}: not a public key file; fix: pass the release owner's cosign.pub "
                             "(made by `cosign generate-key-pair`) with --key")
    verdict = verify_image.verify(args.image, public_key)
    if verdict.code != 0:
        print(f"error: {verdict.error}", file=sys.stderr)
    return verdict.code


def cmd_gates(args: argparse.Namespace) -> int:
    from ngc_paddle.release.ab.plan import Size
    from ngc_paddle.release.gates_command import run
    from ngc_paddle.release.options import benchmarks

    run(_release(args.release, Path(args.root)), args.flavor, Path(args.fleet) if args.fleet else None, args.registry,
        benchmarks(args.bench), args.accept_unproven,
        say=lambda line: print(line, flush=True), references=_references(args.reference),
        ab_size=Size.of(args.ab_rounds, args.ab_smoke, args.ab_validation_time))
    return 0


def cmd_bench_compare(args: argparse.Namespace) -> int:
    from ngc_paddle.release.ab.compare import compare

    compare(Path(args.root).resolve(), args.candidate, args.reference, args.model, args.rounds, args.smoke,
            Path(args.output), args.registry, args.validation_time, args.warmup_rounds,
            say=lambda line: print(line, flush=True))
    return 0


def _build_command(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("build", help="build a release flavor layer by layer and tag it")
    b.add_argument("--release", help="YY.MM (default: the newest manifest in releases/)")
    b.add_argument("--flavor", help="flavor to build (default: the manifest's default_flavor)")
    b.add_argument("--source", action="append", default=[], metavar="NAME=URL|PATH",
                   help="point a manifest source at a mirror or wheel folder for this build")
    b.add_argument("--platform", action="append", default=[],
                   help="build the flavor for this platform only, e.g. linux/amd64 (repeatable; default: every "
                        "platform the flavor is built for, then RELEASE-FLAVOR tags them as one image index)")
    b.add_argument("--force", action="store_true",
                   help="build even when every image's inputs digest label says nothing changed")
    b.add_argument("--cache-registry", metavar="HOST[:PORT]",
                   help="read and write each layer's build cache in this registry, shared by every build host "
                        "(default: $NGC_PADDLE_CACHE_REGISTRY, else none)")
    b.set_defaults(func=cmd_build)


def _manifest_command(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("manifest", help="check or show release manifests")
    msub = m.add_subparsers(dest="manifest_command", required=True)
    mc = msub.add_parser("check", help="validate manifests (all in releases/ by default)")
    mc.add_argument("releases", nargs="*", help="release ids or manifest paths")
    mc.set_defaults(func=cmd_manifest_check)
    ms = msub.add_parser("show", help="print a flavor's resolved manifest as baked into the image")
    ms.add_argument("release", nargs="?")
    ms.add_argument("--flavor")
    ms.add_argument("--platform", help="the image of this platform (default: the flavor's first; see its platforms)")
    ms.set_defaults(func=cmd_manifest_show)


def _validate_command(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("validate", help="run the image's validation suite from the build host")
    v.add_argument("image", nargs="?", help="image to validate (default: newest release, default flavor)")
    v.add_argument("--container", help="validate this running container instead of a new one")
    v.add_argument("--output", help="report folder (default: build/validation/<release>-<flavor>)")
    v.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed to the suite (e.g. -m 'not slow')")
    v.set_defaults(func=cmd_validate)


def _scan_command(sub: argparse._SubParsersAction) -> None:
    sc = sub.add_parser("scan", help="SBOM + vulnerability, secret and hardening gate for an image")
    sc.add_argument("image", nargs="?", help="image (default: newest release, default flavor)")
    sc.add_argument("--policy", default="security/policy.yaml", help="release policy (threshold, allowlist)")
    sc.add_argument("--osv-dir", help="folder of OSV advisories (default: security/osv when it holds any)")
    sc.add_argument("--trivy-report", action="append", default=[], metavar="FILE", help="read a trivy JSON report")
    sc.add_argument("--grype-report", action="append", default=[], metavar="FILE", help="read a grype JSON report")
    sc.add_argument("--db-repository", help="trivy vulnerability DB mirror (OCI reference)")
    sc.add_argument("--output", help="report folder (default: build/scan/<image>; an index's other platforms in "
                                     "a folder below it each: <output>/arm64)")
    sc.add_argument("--platform", action="append", default=[],
                    help="scan only this platform of an image index, e.g. linux/arm64 (default: each platform)")
    sc.add_argument("--source", action="append", default=[], metavar="NAME=URL",
                    help="ask this mirror instead of a manifest source in the freshness check (as build --source)")
    sc.add_argument("--today", help="evaluate allowlist expiry as of this date (YYYY-MM-DD)")
    sc.set_defaults(func=cmd_scan)


def _osv_command(sub: argparse._SubParsersAction) -> None:
    o = sub.add_parser("osv", help="manage the scan gate's offline OSV advisory folder")
    osub = o.add_subparsers(dest="osv_command", required=True)
    oi = osub.add_parser("import", help="import OSV's per-ecosystem bulk export (all.zip) from a file or mirror URL")
    oi.add_argument("source", help="path to all.zip, or an http(s) URL of a mirror of it")
    oi.add_argument("--ecosystem", required=True, help="PyPI or Debian:N (e.g. Debian:12)")
    oi.add_argument("--into", help="OSV folder (default: security/osv)")
    oi.set_defaults(func=cmd_osv_import)


def _release_command(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("release", help="run the monthly release pipeline, or 'release new' to start a month")
    r.add_argument("release", nargs="?", help="YY.MM (default: the newest manifest), 'new', or 'notes' (re-render "
                   "a release's notes from release-notes/inputs/YY.MM.json)")
    r.add_argument("target", nargs="?", help="with 'new': the new release id; with 'notes': the release")
    r.add_argument("--from", dest="from_release", help="with 'new': the release to start from")
    r.add_argument("--dry-run", action="store_true", help="with 'new': print the diff, write nothing")
    r.add_argument("--no-lock", action="store_true", help="with 'new': write the manifest only, lock later")
    r.add_argument("--flavor", action="append", default=[],
                   help="flavor(s) to release, repeated or space-separated (default: the default flavor); 'all': "
                        "every flavor this host can build, the others reported as not built")
    r.add_argument("--source", action="append", default=[], metavar="NAME=URL|PATH",
                   help="point a manifest source at a mirror or wheel folder for the build stage")
    r.add_argument("--registry", default="127.0.0.1:5000", help="push target (default: a local registry)")
    r.add_argument("--policy", default="security/policy.yaml")
    r.add_argument("--osv-dir")
    r.add_argument("--bench", action="append", help="benchmark commands to gate on (default: bench-rn50, bench-hgnet)")
    r.add_argument("--accept-unproven", metavar="REASON",
                   help="push flavors whose gates are NOT PROVEN (e.g. GPU gates on a host without a GPU); the "
                        "release notes print the reason")
    r.add_argument("--fleet", metavar="FILE", help="run validation and benchmarks per hardware profile where a fleet "
                   "file says (fleets/*.yaml: Slurm partitions, SSH hosts, this host); see docs/fleets.md")
    r.add_argument("--key", metavar="FILE", help="cosign private key signing the attestations (default: COSIGN_KEY; "
                   "its password in COSIGN_PASSWORD); see docs/releasing.md")
    r.add_argument("--no-attest", action="store_true", help="release unsigned: attach no attestations (the notes say "
                   "so)")
    _ab_options(r)
    r.set_defaults(func=cmd_release)


def _verify_command(sub: argparse._SubParsersAction) -> None:
    vf = sub.add_parser("verify", help="check a pushed image's signed attestations (provenance, SBOM, lock, scan and "
                        "gate verdicts) with the release owner's public key")
    vf.add_argument("image", help="REGISTRY/REPO@sha256:... (a digest, not a tag)")
    vf.add_argument("--key", required=True, metavar="PUB", help="the release owner's public key (cosign.pub)")
    vf.set_defaults(func=cmd_verify)


def _gates_command(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("gates", help="run a built release's validation and benchmark gates per hardware profile of a "
                       "fleet (Slurm, SSH hosts, this host), by the candidate's digest")
    g.add_argument("release", nargs="?", help="YY.MM (default: the newest manifest)")
    g.add_argument("--flavor", action="append", default=[], help="flavor(s), repeated or space-separated (default: "
                   "the default flavor)")
    g.add_argument("--fleet", metavar="FILE", help="fleets/*.yaml (default: this host, as fleets/local.yaml)")
    g.add_argument("--registry", default="127.0.0.1:5000", help="where the candidate is pushed and the jobs pull it "
                   "from (default: a local registry)")
    g.add_argument("--bench", action="append", help="benchmark commands (default: bench-rn50, bench-hgnet)")
    g.add_argument("--accept-unproven", metavar="REASON", help="exit 0 although a profile is NOT PROVEN / NOT RUN / "
                   "N/A; the reason is kept with the verdicts")
    _ab_options(g)
    g.set_defaults(func=cmd_gates)


def _bench_compare_command(sub: argparse._SubParsersAction) -> None:
    bc = sub.add_parser("bench-compare", help="A/B: a candidate image against a reference image on this host, "
                        "interleaved in rounds; the ratio per metric with its confidence interval")
    bc.add_argument("candidate", help="the image to prove (a tag or REPO@sha256:...)")
    bc.add_argument("--reference", metavar="IMAGE", help="the image to compare with (default: the previous release's "
                    "image of the candidate's flavor, by digest from --registry)")
    bc.add_argument("--model", choices=("rn50", "hgnet", "all"), default="rn50", help="benchmark(s) of each round "
                    "(default: rn50)")
    bc.add_argument("--rounds", type=int, help="measured rounds, 1 to 999 (default: 5, 3 with --smoke; a FAIL "
                    "needs at least 5)")
    bc.add_argument("--warmup-rounds", type=int, choices=(0, 1), default=1, help="a first round run and discarded "
                    "(default: 1)")
    bc.add_argument("--smoke", action="store_true", help="seconds-long rounds (--smoke runs): the machinery, not the "
                    "figures")
    bc.add_argument("--validation-time", action="store_true", help="each round also runs the validation suite's fast "
                    "checks and compares its wall time")
    bc.add_argument("--registry", default="127.0.0.1:5000", help="where the previous release was pushed (default: a "
                    "local registry)")
    bc.add_argument("--output", default="bench-compare", help="results folder (a new ab-<time> folder per run; "
                    "default: bench-compare)")
    bc.set_defaults(func=cmd_bench_compare)


def _lock_command(sub: argparse._SubParsersAction) -> None:
    lk = sub.add_parser("lock", help="resolve a release's flavors and write their locks, one per "
                           "platform: releases/<release>-<flavor>[.<arch>].lock.json")
    lk.add_argument("release", nargs="?", help="YY.MM (default: the newest manifest in releases/)")
    lk.add_argument("--flavor", action="append", default=[], help="flavor(s) to lock (default: every flavor)")
    lk.add_argument("--platform", action="append", default=[],
                    help="platform(s) to lock, e.g. linux/arm64 (default: each flavor's platforms)")
    lk.add_argument("--source", action="append", default=[], metavar="NAME=URL|PATH",
                    help="resolve a source through a mirror or wheel folder")
    lk.set_defaults(func=cmd_lock)


def _bake_file_command(sub: argparse._SubParsersAction) -> None:
    bf = sub.add_parser("bake-file", help="write docker-bake.override.json (the newest release) and "
                                          "build/bake/<release>.json from the manifest and locks")
    bf.add_argument("release", nargs="?")
    bf.add_argument("--source", action="append", default=[], metavar="NAME=URL|PATH")
    bf.set_defaults(func=cmd_bake_file)


def parser() -> argparse.ArgumentParser:
    """The command line: one function per sub-command adds its arguments, in the order --help lists them."""
    p = argparse.ArgumentParser(prog="ngc-paddle", description=__doc__.splitlines()[0])
    p.add_argument("--root", default=".", help="repository root (default: current folder)")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_build_command, _manifest_command, _validate_command, _scan_command, _osv_command, _release_command,
                _verify_command, _gates_command, _bench_compare_command, _lock_command, _bake_file_command):
        add(sub)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C: the run stops the same way (a fan-out's jobs cancelled), exit 143."""


def _terminate(_signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cancelling that follows must not be cut short
    raise Terminated()


NOT_NAMES = {"pytest_args"}  # passed through to pytest as given (`-k ''` is pytest's business)


def _refuse_empty(args: argparse.Namespace, options: argparse.ArgumentParser) -> None:
    """An empty string where a name, release, date or path is needed (`--flavor ''`, `manifest show ''`) is bad
    input, never the default silently: one line naming the argument."""
    spelled = {}
    stack = [options]
    while stack:  # every subcommand's options: dest -> how the user wrote it
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.dest not in spelled:
                spelled[action.dest] = action.option_strings[-1] if action.option_strings else action.dest.upper()
    for dest, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if dest not in NOT_NAMES and any(isinstance(v, str) and not v.strip() for v in values):
            raise NgcPaddleError(f"{spelled.get(dest, dest)}: (argument): is empty; fix: give a value, or leave "
                                 "the argument out for its default")


def main(argv: list[str] | None = None) -> int:
    options = parser()
    args = options.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        _refuse_empty(args, options)
        _registry(args)
        return args.func(args)
    except OneLineError as exc:  # NgcPaddleError, or an image-side reader's InputError
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        print(f"error: {what}; the release tag was not moved; rerun the same command to resume", file=sys.stderr)
        return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
    except Exception as exc:  # a bug, not a verdict: never exit 1 ("blocked") or 2 ("bad input") for it
        return crash.report(exc, "ngc-paddle")


if __name__ == "__main__":
    sys.exit(main())
