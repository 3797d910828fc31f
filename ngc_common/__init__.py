"""What the image and the host tooling share: exit codes, errors, bounded reading, schemas, image paths.

Why one package: the image ships `validation/` and `benchmarks/` but not the host package `ngc_paddle`,
so every fact both sides need (an exit code, a file limit, the result.json schema, the secret patterns)
used to exist twice and drift. The suite layer (Dockerfile) installs this package into the image's
Python; the host package imports the same modules.

Dependencies: the standard library, and pydantic for the modules that hold schemas (`bench_result`).
Nothing is imported here, so that the standard-library-only modules (`pep503`, `secret_patterns`,
`exit_codes`, `crash`, `image_paths`) also load where pydantic is not installed: a layer image that
gets the probes copied in, or the pip layers' installer at build time.
"""
