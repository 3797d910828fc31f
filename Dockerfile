# Suite layer: the ngc-paddle entrypoint, validation suite, benchmarks and the resolved manifest,
# on top of a flavor's paddle layer. Everything that changes often is copied last.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ARG LAYER_SPEC
ARG MANIFEST_FILE=build/manifests/missing.json
# Reproducible layers: what the RUN steps write is clamped to it and pip writes hash-based .pyc under it
# (from the lock, see ngc_paddle/image_build/bakefile.py and layers/lib/clamp-mtimes.sh).
ARG SOURCE_DATE_EPOCH

# The suite's own tools (pytest, testinfra, xdist), a non-root user and a writable workspace.
RUN --mount=type=cache,id=ngc-pip-cache,target=/root/.cache/pip,sharing=locked \
    --mount=type=secret,id=ca,target=/run/secrets/ca \
    --mount=type=bind,source=layers/lib,target=/tmp/ngc/lib \
    --mount=type=bind,source=wheelhouse,target=/wheelhouse \
    start=$(date +%s) \
    && python /tmp/ngc/lib/install_pip_layer.py \
    && useradd --create-home --uid 1000 --user-group --shell /bin/bash paddle \
    && install -d -m 1777 /workspace \
    && bash /tmp/ngc/lib/clamp-mtimes.sh "$start"

ENV NGC_PADDLE_HOME=/opt/ngc-paddle \
    PATH=/opt/ngc-paddle/bin:/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The suite's own files: image/ (entrypoint, commands), the validation suite, the benchmarks, the resolved
# manifest, and one source for what the hygiene checks and the scan gate allow and look for: the release
# policy (setuid allowlist, key fixtures) and the secret patterns, importable by the in-image probes.
# Copied in a RUN from the build context bind-mounted at /tmp/ngc/layer rather than with COPY, for a
# reproducible layer: COPY in dockerd 20.10's BuildKit stamps the folders it creates or fills with the
# build time, and no step can clamp a COPY layer afterwards (layers/lib/clamp-mtimes.sh does it here;
# /tmp/ngc/layer is a mount point the os layer already made, a new one would carry the build time too).
RUN --mount=type=bind,target=/tmp/ngc/layer \
    start=$(date +%s) \
    && c=/tmp/ngc/layer \
    && install -d /opt/ngc-paddle/validation /opt/ngc-paddle/benchmarks /opt/ngc-paddle/security \
    && cp -R "$c/image/." /opt/ngc-paddle/ \
    && cp -R "$c/validation/." /opt/ngc-paddle/validation/ \
    && cp -R "$c/benchmarks/." /opt/ngc-paddle/benchmarks/ \
    && cp "$c/${MANIFEST_FILE}" /opt/ngc-paddle/manifest.json \
    && cp "$c/security/policy.yaml" /opt/ngc-paddle/security/policy.yaml \
    && cp "$c/ngc_paddle/scan/patterns.py" /opt/ngc-paddle/validation/probes/patterns.py \
    && bash "$c/layers/lib/clamp-mtimes.sh" "$start"

# BuildKit leaves empty mount points of the layers' bind and cache mounts behind; so does Paddle's
# first import (~/.cache/paddle); the os layer's empty placeholder of the CA secret too (layers/os/Dockerfile).
# None of it belongs in the image. The folders they were in take SOURCE_DATE_EPOCH as mtime, as in
# layers/lib/clamp-mtimes.sh (the whiteouts keep the build's time).
RUN rm -rf /tmp/ngc /wheelhouse /root/.cache /run/secrets \
    && if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then touch --date="@${SOURCE_DATE_EPOCH}" / /tmp /root /run; fi

# Secure default: the image runs as the non-root user paddle (numeric, so Kubernetes' runAsNonRoot can
# verify it); HOME is /home/paddle, /workspace is writable by all (sticky). Any other uid works too
# (`docker run --user "$(id -u):$(id -g)"`, see lib/user-env.sh); `docker run --user root` for what needs root.
USER 1000:1000
WORKDIR /workspace
ENTRYPOINT ["/opt/ngc-paddle/entrypoint.sh"]
CMD ["/bin/bash"]
