# Suite layer: the ngc-paddle entrypoint, validation suite, benchmarks and the resolved manifest,
# on top of a flavor's paddle layer. Everything that changes often is copied last.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ARG LAYER_SPEC
# The flavor's resolved manifest, written to /opt/ngc-paddle/manifest.json (generated from the manifest and the
# lock by `ngc-paddle bake-file`; an argument rather than a generated file, so the build context is the repo).
ARG MANIFEST_JSON
# Reproducible layers: what the RUN steps write is clamped to it and pip writes hash-based .pyc under it
# (from the lock, see ngc_paddle/image_build/bakefile.py and layers/lib/clamp-mtimes.sh).
ARG SOURCE_DATE_EPOCH

# The suite's own tools (pytest, testinfra, xdist), a non-root user and a writable workspace.
# Every mount lies under a tmpfs at /tmp: no mount points or secret stubs in the layer (layers/os/Dockerfile).
RUN --mount=type=tmpfs,target=/tmp \
    --mount=type=cache,id=ngc-pip-cache,target=/tmp/ngc/pip-cache,sharing=locked \
    --mount=type=secret,id=ca,target=/tmp/ngc/secrets/ca \
    --mount=type=bind,source=layers/lib,target=/tmp/ngc/lib \
    --mount=type=bind,source=ngc_common/pep503.py,target=/tmp/ngc/shared/pep503.py \
    --mount=type=bind,source=wheelhouse,target=/tmp/ngc/wheelhouse \
    start=$(date +%s) \
    && python /tmp/ngc/lib/install_pip_layer.py \
    && useradd --create-home --uid 1000 --user-group --shell /bin/bash paddle \
    && install -d -m 1777 /workspace \
    && bash /tmp/ngc/lib/clamp-mtimes.sh "$start"

# PYTHONWARNINGS quiets two warnings Paddle prints at every import (no ccache; GPU Paddle without a GPU), which
# the banner and the entrypoint say once instead. The long form: docs/design-notes.md, section `Dockerfile`.
ENV NGC_PADDLE_HOME=/opt/ngc-paddle \
    PATH=/opt/ngc-paddle/bin:/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONWARNINGS=ignore:No\ ccache\ found:UserWarning,ignore:You\ are\ using\ GPU\ version\ Paddle:UserWarning

# The suite's own files (image/, validation/, benchmarks/, the resolved manifest, the release policy, ngc_common),
# copied in a RUN rather than with COPY, for a reproducible layer; then their sha256 each (ngc_common/suite_record.py),
# which the suite, the benchmarks and the scan hold them to. The long form: docs/design-notes.md, `Dockerfile`.
RUN --mount=type=tmpfs,target=/tmp \
    --mount=type=bind,target=/tmp/ngc/layer \
    start=$(date +%s) \
    && c=/tmp/ngc/layer \
    && install -d /opt/ngc-paddle/validation /opt/ngc-paddle/benchmarks /opt/ngc-paddle/security \
    && cp -R "$c/image/." /opt/ngc-paddle/ \
    && cp -R "$c/validation/." /opt/ngc-paddle/validation/ \
    && cp -R "$c/benchmarks/." /opt/ngc-paddle/benchmarks/ \
    && { [ -n "$MANIFEST_JSON" ] || { echo "NGC-PADDLE-ERROR layer suite: no MANIFEST_JSON build argument; fix: build through docker buildx bake (docker-bake.override.json) or make image" >&2; exit 1; }; } \
    && printf '%s' "$MANIFEST_JSON" > /opt/ngc-paddle/manifest.json \
    && cp "$c/security/policy.yaml" /opt/ngc-paddle/security/policy.yaml \
    && site=$(python -B -c 'import sysconfig; print(sysconfig.get_path("purelib"))') \
    && cp -R "$c/ngc_common" "$site/ngc_common" \
    && python -B -m ngc_common.suite_record write \
    && bash "$c/layers/lib/clamp-mtimes.sh" "$start"

# Nothing to remove here: no step leaves a mount point, secret stub or cache in the image (each mounts
# under a tmpfs at /tmp, clamp-mtimes.sh drops ~/.cache), and a removal here would write whiteouts, which
# carry the time of the build (not reproducible).

# Secure default: the image runs as the non-root user paddle (numeric, so Kubernetes' runAsNonRoot can
# verify it); HOME is /home/paddle, /workspace is writable by all (sticky). Any other uid works too
# (`docker run --user "$(id -u):$(id -g)"`, see lib/user-env.sh); `docker run --user root` for what needs root.
USER 1000:1000
WORKDIR /workspace
# PID 1 is tini (Debian's package, the os layer's `tini` component), as in docker-stacks: it forwards SIGTERM and
# SIGINT to the command's whole process group (-g: pytest's workers, a launcher's ranks) and reaps orphans, so
# `docker stop` and `timeout` reach the benchmark, which stops within seconds (ngc_common/stop.py). Without it the
# command was PID 1, for which the kernel drops SIGTERM unless a handler is installed.
ENTRYPOINT ["/usr/bin/tini", "-g", "--", "/opt/ngc-paddle/entrypoint.sh"]
CMD ["/bin/bash"]
