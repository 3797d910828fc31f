"""Where the image's bytes come from: a saved image or a registry, layer by layer; what it installs; its release.
Imports no other part of scan (only ngc_common and the parts of ngc_paddle below scan)."""
