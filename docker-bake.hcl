# ngc-paddle build definition: what every layer target shares, and how tags are named.
#
#   docker buildx bake              # the newest release's default flavor, layer by layer (buildx >= 0.14)
#   docker buildx bake FLAVOR       # another flavor;  --print shows what would be built
#
# The structure of a release is not written here: its flavors, each flavor's layers in order, the
# default flavor and every layer's build arguments come from releases/<release>.yaml and its locks.
# `ngc-paddle bake-file` generates them into docker-bake.override.json (committed, for the newest release;
# buildx reads it beside this file by itself) and build/bake/<release>.json (any release, for `make image`):
# one target per layer and flavor (`<layer>-<flavor>`), each built FROM the target below it (a named
# context `target:`), a group per flavor and the default group. `make image` builds the targets one at a
# time to check each layer before the next, and tags the result only after a smoke test.
#
# The daemon here has no bridge network: every build step uses the host network (`network`, granted with
# `--allow network.host`, which `make image` passes and bake asks for when typed by hand).

variable "RELEASE" { default = "" }
variable "IMAGE" { default = "ngc-paddle" }
variable "LAYER_REPO" { default = "ngc-paddle-layers" }
# `make image` tags the final target as a candidate (CANDIDATE_SUFFIX=-candidate) and promotes it to
# RELEASE-FLAVOR after a smoke test; a plain `docker buildx bake` tags RELEASE-FLAVOR when the build succeeds.
variable "CANDIDATE_SUFFIX" { default = "" }
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
  context      = "."
  network      = "host"
  entitlements = ["network.host"]
  secret       = ["id=ca,src=${CA_BUNDLE}"]
  # No attestation manifest on the image: it would make every image an index whose digest changes with each
  # build. The release attaches signed provenance to the pushed digest instead (ngc_paddle/release/stages/).
  attest = ["type=provenance,disabled=true", "type=sbom,disabled=true"]
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
