"""Where the suite's files lie in the image: one list for the image side and the host that reads them.

Why: the host starts containers and reads or copies these paths (the baked manifest, the validation
suite, the probes), the entrypoint and the checks use them inside; each path is written here once.
The Dockerfile and the shell scripts under image/ spell the same paths (a unit test keeps the
Dockerfile's in step with HOME). Standard library only.
"""

HOME = "/opt/ngc-paddle"  # NGC_PADDLE_HOME: the entrypoint, bin/, lib/, the suite and the benchmarks
MANIFEST = f"{HOME}/manifest.json"  # the flavor's resolved manifest, baked in by the suite layer
VALIDATION = f"{HOME}/validation"  # the validation suite (validation/ of the repository)
PROBES = f"{VALIDATION}/probes"  # scripts the checks run with the image's Python
BENCHMARKS = f"{HOME}/benchmarks"
POLICY = f"{HOME}/security/policy.yaml"  # the release policy: setuid allowlist, key fixtures
ENTRYPOINT = f"{HOME}/entrypoint.sh"
# sha256 of every file the suite layer installed (ngc_common/suite_record.py writes it at build time)
SUITE_RECORD = f"{HOME}/suite-record.json"
INIT = "/usr/bin/tini"  # PID 1, which runs ENTRYPOINT: Debian's tini (the manifest's os-layer component `tini`)
# A layer image has no suite: the host copies the probes (and ngc_common beside them) here.
# `docker cp` needs the parent (/opt) to exist, which every layer has.
PROBES_IN_LAYER_IMAGE = "/opt/ngc-paddle-probes"
# A vendor archive's shared libraries (kind `archive` components: TensorRT's tar in gpu-cu118), extracted by
# layers/lib/install_archive_layer.py into /opt/<component>/lib and registered with the loader; beside them the
# record of what was installed (the archive's file, sha256, version), which the checks and the release read back.
ARCHIVE_HOME = "/opt/{component}"
ARCHIVE_LIBS = f"{ARCHIVE_HOME}/lib"
ARCHIVE_RECORD = f"{ARCHIVE_HOME}/ngc-archive.json"
