# ngc-paddle build definition: what every layer target shares, and how tags are named.
#
# The structure of a release is not written here: its flavors, each flavor's layers in order, the
# default flavor and every layer's build arguments come from releases/<release>.yaml alone.
# `ngc-paddle bake-file` generates one target per layer and flavor (`<layer>-<flavor>`:
# the layer's Dockerfile, BASE_IMAGE = the tag of the layer below, labels flavor/layer), a group per
# flavor and the default group into build/bake/<release>.json, passed as a second -f file:
#
#   RELEASE=26.12 docker buildx bake -f docker-bake.hcl -f build/bake/26.12.json --print default
#
# Layers chain by image tag through the BASE_IMAGE argument (no named contexts: the daemon's
# embedded BuildKit here does not support them), so a flavor's targets must be built in order;
# `make image` does that.

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

# An intermediate layer's image.
function "layer_tag" {
  params = [flavor, layer]
  result = "${LAYER_REPO}:${RELEASE}-${flavor}-${layer}"
}

# A flavor's final image, before `make image` promotes it.
function "candidate_tag" {
  params = [flavor]
  result = "${IMAGE}:${RELEASE}-${flavor}${CANDIDATE_SUFFIX}"
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
