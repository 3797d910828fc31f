"""The one way the host tooling runs cosign: attach and read back signed in-toto attestations of an image digest.

Why: signing, the in-toto statement around each predicate, the DSSE envelope and where attestations live in a
registry are cosign's job (the field's tool, Debian trixie's cosign 2.5, installed by toolchain/ensure-engine.sh),
so we write none of it by hand. Attestations go to cosign's attachment (`sha256-DIGEST.att`, the tag scheme every
registry serves; `--replace` keeps one per predicate type). No transparency log is used (`--tlog-upload=false`,
`--insecure-ignore-tlog`): the registry may be private or local, the release owner's key is the trust root.
Registry TLS is trusted the way docker trusts it: the CA of /etc/docker/certs.d/HOST/ca.crt (toolchain/
ensure-registry.sh installs the test registry's there) is passed as `--registry-cacert`; credentials are the
docker config's (`docker login`). Like ngc_paddle/engine.py for docker, every cosign call of ngc_paddle goes
through here.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError, ToolchainError

CLI = "cosign"
DOCKER_CERTS = Path("/etc/docker/certs.d")
KEY_ENV = "COSIGN_KEY"  # a key file's path, or the PEM text itself (cosign's env://COSIGN_KEY)
PASSWORD_ENV = "COSIGN_PASSWORD"
TIMEOUT_S = 300


class KeyProblem(NgcPaddleError):
    """No key, or a key cosign cannot use (bad input: exit 2)."""


def ensure() -> None:
    """cosign answers, else the one line saying how to get it."""
    if shutil.which(CLI) is None:
        raise ToolchainError("cosign is not installed; fix: run `bash toolchain/ensure-engine.sh` (installs cosign 2.x "
                             "from Debian trixie) or put cosign >= 2.2 on the PATH")


def registry_ca(ref: str) -> Path | None:
    """The CA docker trusts for REF's registry (/etc/docker/certs.d/HOST/ca.crt), when there is one."""
    ca = DOCKER_CERTS / ref.split("/", 1)[0] / "ca.crt"
    return ca if ca.is_file() else None


def signing_key(option: str | None) -> str | None:
    """The --key argument for cosign: the option's path, else COSIGN_KEY (a path, or PEM text), else None."""
    value = option or os.environ.get(KEY_ENV, "")
    if not value:
        return None
    if "-----BEGIN" in value:
        return f"env://{KEY_ENV}"
    if not Path(value).is_file():
        raise KeyProblem(f"signing key {value}: no such file; fix: pass the private key made by `cosign "
                         f"generate-key-pair` (--key FILE or {KEY_ENV}=FILE)")
    return value


def _registry_flags(ref: str) -> list[str]:
    ca = registry_ca(ref)
    return ["--registry-cacert", str(ca)] if ca else []


def _password() -> dict[str, str]:
    """COSIGN_PASSWORD as given, empty when unset: cosign then fails on an encrypted key instead of prompting."""
    return {PASSWORD_ENV: os.environ.get(PASSWORD_ENV, "")}


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    ensure()
    try:
        return subprocess.run([CLI, *args], capture_output=True, text=True, check=False, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        raise NgcPaddleError(f"cosign {args[0]} {args[-1]} did not finish within {TIMEOUT_S} s; fix: check that the "
                             "registry answers") from None


def last_error(proc: subprocess.CompletedProcess[str]) -> str:
    """cosign's own reason, on one line (its `Error:` line, else its last line)."""
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    errors = [ln.removeprefix("Error: ") for ln in lines if ln.startswith("Error:")]
    return (errors or lines or ["no output"])[-1][:300]


def attest(ref: str, key: str, predicate_type: str, predicate: Path) -> None:
    """Sign `predicate` as an in-toto statement of type `predicate_type` about REF (NAME@sha256:...) and attach it,
    replacing an earlier attestation of the same type."""
    proc = _run(["attest", "--yes", "--key", key, "--type", predicate_type, "--predicate", str(predicate),
                 "--tlog-upload=false", "--replace", *_registry_flags(ref), ref],
                env=_password())
    if proc.returncode != 0:
        reason = last_error(proc)
        if "decrypt" in reason or "password" in reason:
            raise KeyProblem(f"signing key {key}: cosign cannot open it ({reason}); fix: set {PASSWORD_ENV} to the "
                             "key's password")
        raise NgcPaddleError(f"cosign attest {predicate_type} to {ref} failed: {reason}; fix: check the key and that "
                             "the registry answers and accepts pushes (docker login)")


def verified(ref: str, public_key: Path, predicate_type: str) -> tuple[list[dict], str]:
    """The envelopes of type `predicate_type` on REF whose signature `public_key` verifies (cosign
    verify-attestation), and cosign's reason when there is none."""
    proc = _run(["verify-attestation", "--key", str(public_key), "--insecure-ignore-tlog", "--type", predicate_type,
                 *_registry_flags(ref), ref])
    if proc.returncode != 0:
        return [], last_error(proc)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith("{")], ""


def attached(ref: str) -> list[dict]:
    """Every attestation envelope attached to REF, unverified (cosign download attestation): what is there to verify."""
    proc = _run(["download", "attestation", *_registry_flags(ref), ref])
    if proc.returncode != 0:
        reason = last_error(proc)
        if "no attestations" in reason.lower() or "not found" in reason.lower() or "MANIFEST_UNKNOWN" in reason:
            return []
        raise NgcPaddleError(f"cosign download attestation {ref} failed: {reason}; fix: check that the registry "
                             "answers (and docker login for a private one)")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith("{")]


def public_key(key: str, out: Path) -> Path:
    """Write the public half of the signing key `key` to `out` (cosign public-key): what the read-back verifies with."""
    proc = _run(["public-key", "--key", key, "--outfile", str(out)], env=_password())
    if proc.returncode != 0:
        raise KeyProblem(f"signing key {key}: cosign cannot open it ({last_error(proc)}); fix: pass a key made by "
                         f"`cosign generate-key-pair` and set {PASSWORD_ENV} to its password")
    return out
