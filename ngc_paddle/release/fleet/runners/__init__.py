"""The places a gate job runs, behind one small interface (interface.Runner): this host, a Slurm cluster, SSH hosts.

Why: the fan-out (ngc_paddle.release.fleet.fanout) submits, watches, requeues, cancels and collects jobs the same way
wherever they run; each runner only says how to start the job script there, how to see its state, how to stop
it and how to bring its folder back.
"""

from ngc_paddle.release.fleet.fleet_schema import Profile
from ngc_paddle.release.fleet.runners.interface import Runner
from ngc_paddle.release.fleet.runners.local import LocalRunner
from ngc_paddle.release.fleet.runners.slurm import SlurmRunner
from ngc_paddle.release.fleet.runners.ssh import SshRunner


def for_profile(name: str, profile: Profile, run_id: str) -> Runner:
    """The runner of one fleet profile (`run_id` names this run's folders where a runner needs its own)."""
    if profile.slurm is not None:
        return SlurmRunner(name, profile.slurm)
    if profile.ssh is not None:
        return SshRunner(name, profile.ssh, run_id)
    return LocalRunner(name)
