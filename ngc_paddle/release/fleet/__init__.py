"""Gates run where the hardware is: a fleet file maps hardware profiles to Slurm partitions, SSH hosts or this host.

Why: a monthly image is built on CPU builders but must be proven on every GPU it claims. The release's
validation and benchmarks fan out, one job per flavor and hardware profile, to the scheduler a site already
runs (Slurm, through its own commands), to SSH hosts with a Docker engine, or to this host, and come back as
one verdict per flavor x profile. Modules: `fleet_schema` (the fleet file), `hardware_profiles` (the profiles of
benchmarks/gates.yaml and a node's facts), `containers` (how a job starts the image: docker, pyxis, enroot,
apptainer), `payload` (the job script every runner runs), `runners` (local, slurm, ssh behind one
interface), `slurm` (Slurm's CLI), `results` (a finished job's folder to a verdict), `fanout` (submit, watch,
requeue once, cancel, collect), `cells` (what state.json keeps per flavor x profile).
"""
