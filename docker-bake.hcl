# ngc-paddle build definition: one target per layer and flavor, one group per flavor.
#
# Layers chain by image tag through the BASE_IMAGE argument (no named contexts: the daemon's
# embedded BuildKit here does not support them), so a flavor's targets must be built in order;
# `make image` does that. The manifest-derived arguments of every target (pinned components and
# their sources, CUDA constraints) are not written here: `ngc-paddle bake-file` generates
# build/bake/<release>.json from releases/<release>.yaml and it is passed as a second -f file:
#
#   RELEASE=26.12 docker buildx bake -f docker-bake.hcl -f build/bake/26.12.json --print cpu

variable "RELEASE" { default = "" }
variable "IMAGE" { default = "ngc-paddle" }
variable "LAYER_REPO" { default = "ngc-paddle-layers" }
# The final target is tagged as a candidate; `make image` promotes it to RELEASE-FLAVOR after a
# smoke test, so a broken build never takes the release tag.
variable "CANDIDATE_SUFFIX" { default = "-candidate" }
variable "CA_BUNDLE" { default = "/etc/ssl/certs/ca-certificates.crt" }
variable "REVISION" { default = "unknown" }
variable "CREATED" { default = "1970-01-01T00:00:00Z" }
variable "SOURCE_URL" { default = "https://github.com/ngc-paddle/ngc-paddle" }

function "layer_tag" {
  params = [flavor, layer]
  result = "${LAYER_REPO}:${RELEASE}-${flavor}-${layer}"
}

target "_common" {
  context = "."
  network = "host"
  secret  = ["id=ca,src=${CA_BUNDLE}"]
  labels = {
    "org.opencontainers.image.title"   = "ngc-paddle"
    "org.opencontainers.image.version" = RELEASE
    "org.opencontainers.image.vendor"  = "ngc-paddle"
    "ngc-paddle.release"               = RELEASE
  }
}

# Revision and creation time go on the final image only: on a layer they would change its image
# id at every commit and break the cache of every layer above it.
target "_final" {
  inherits = ["_common"]
  labels = {
    "org.opencontainers.image.revision" = REVISION
    "org.opencontainers.image.created"  = CREATED
    "org.opencontainers.image.source"   = SOURCE_URL
  }
}

# ---- cpu: os -> dali -> paddle -> suite ---------------------------------------------------------
target "os-cpu" {
  inherits   = ["_common"]
  dockerfile = "layers/os/Dockerfile"
  tags       = [layer_tag("cpu", "os")]
  labels     = { "ngc-paddle.flavor" = "cpu", "ngc-paddle.layer" = "os" }
}
target "dali-cpu" {
  inherits   = ["_common"]
  dockerfile = "layers/dali/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("cpu", "os") }
  tags       = [layer_tag("cpu", "dali")]
  labels     = { "ngc-paddle.flavor" = "cpu", "ngc-paddle.layer" = "dali" }
}
target "paddle-cpu" {
  inherits   = ["_common"]
  dockerfile = "layers/paddle/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("cpu", "dali") }
  tags       = [layer_tag("cpu", "paddle")]
  labels     = { "ngc-paddle.flavor" = "cpu", "ngc-paddle.layer" = "paddle" }
}
target "suite-cpu" {
  inherits   = ["_final"]
  dockerfile = "Dockerfile"
  args       = { BASE_IMAGE = layer_tag("cpu", "paddle") }
  tags       = ["${IMAGE}:${RELEASE}-cpu${CANDIDATE_SUFFIX}"]
  labels     = { "ngc-paddle.flavor" = "cpu", "ngc-paddle.layer" = "suite" }
}
group "cpu" { targets = ["os-cpu", "dali-cpu", "paddle-cpu", "suite-cpu"] }

# ---- gpu: os -> cuda -> dali -> tensorrt -> paddle -> suite -------------------------------------
target "os-gpu" {
  inherits   = ["_common"]
  dockerfile = "layers/os/Dockerfile"
  tags       = [layer_tag("gpu", "os")]
  labels     = { "ngc-paddle.flavor" = "gpu", "ngc-paddle.layer" = "os" }
}
target "cuda-gpu" {
  inherits   = ["_common"]
  dockerfile = "layers/cuda/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu", "os") }
  tags       = [layer_tag("gpu", "cuda")]
  labels     = { "ngc-paddle.flavor" = "gpu", "ngc-paddle.layer" = "cuda" }
}
target "dali-gpu" {
  inherits   = ["_common"]
  dockerfile = "layers/dali/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu", "cuda") }
  tags       = [layer_tag("gpu", "dali")]
  labels     = { "ngc-paddle.flavor" = "gpu", "ngc-paddle.layer" = "dali" }
}
target "tensorrt-gpu" {
  inherits   = ["_common"]
  dockerfile = "layers/tensorrt/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu", "dali") }
  tags       = [layer_tag("gpu", "tensorrt")]
  labels     = { "ngc-paddle.flavor" = "gpu", "ngc-paddle.layer" = "tensorrt" }
}
target "paddle-gpu" {
  inherits   = ["_common"]
  dockerfile = "layers/paddle/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu", "tensorrt") }
  tags       = [layer_tag("gpu", "paddle")]
  labels     = { "ngc-paddle.flavor" = "gpu", "ngc-paddle.layer" = "paddle" }
}
target "suite-gpu" {
  inherits   = ["_final"]
  dockerfile = "Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu", "paddle") }
  tags       = ["${IMAGE}:${RELEASE}-gpu${CANDIDATE_SUFFIX}"]
  labels     = { "ngc-paddle.flavor" = "gpu", "ngc-paddle.layer" = "suite" }
}
group "gpu" { targets = ["os-gpu", "cuda-gpu", "dali-gpu", "tensorrt-gpu", "paddle-gpu", "suite-gpu"] }

# ---- gpu-cu118: os -> cuda -> paddle -> suite (PyPI only; no DALI or TensorRT for CUDA 11 there) -----
target "os-gpu-cu118" {
  inherits   = ["_common"]
  dockerfile = "layers/os/Dockerfile"
  tags       = [layer_tag("gpu-cu118", "os")]
  labels     = { "ngc-paddle.flavor" = "gpu-cu118", "ngc-paddle.layer" = "os" }
}
target "cuda-gpu-cu118" {
  inherits   = ["_common"]
  dockerfile = "layers/cuda/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu-cu118", "os") }
  tags       = [layer_tag("gpu-cu118", "cuda")]
  labels     = { "ngc-paddle.flavor" = "gpu-cu118", "ngc-paddle.layer" = "cuda" }
}
target "paddle-gpu-cu118" {
  inherits   = ["_common"]
  dockerfile = "layers/paddle/Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu-cu118", "cuda") }
  tags       = [layer_tag("gpu-cu118", "paddle")]
  labels     = { "ngc-paddle.flavor" = "gpu-cu118", "ngc-paddle.layer" = "paddle" }
}
target "suite-gpu-cu118" {
  inherits   = ["_final"]
  dockerfile = "Dockerfile"
  args       = { BASE_IMAGE = layer_tag("gpu-cu118", "paddle") }
  tags       = ["${IMAGE}:${RELEASE}-gpu-cu118${CANDIDATE_SUFFIX}"]
  labels     = { "ngc-paddle.flavor" = "gpu-cu118", "ngc-paddle.layer" = "suite" }
}
group "gpu-cu118" { targets = ["os-gpu-cu118", "cuda-gpu-cu118", "paddle-gpu-cu118", "suite-gpu-cu118"] }

group "default" { targets = ["cpu"] }
