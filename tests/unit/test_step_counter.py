"""The build report's steps_run / steps_cached come from BuildKit's plain progress: run, cached here, or taken
from a registry cache (layer downloads only) are told apart."""

from ngc_paddle.image_build.build_flavor import StepCounter

RUN = "RUN --mount=type=tmpfs,target=/tmp bash /tmp/ngc/layer/install.sh"
PROGRESS = f"""#8 [stage-0 2/3] ADD layers/os/etc.tar /
#8 CACHED
#10 [stage-0 3/3] {RUN}
#10 sha256:6824c512e789d072a37a83349d3152d275a08c74aea89a2d30afe9cd5178e5ec 225B / 225B done
#10 sha256:c498035e4fc0cf90173d2a57853710e44741afa421650df6e42b5ce5d9f34e02 31.95MB / 31.95MB 0.2s done
#10 DONE 0.2s
#12 [dali-cpu stage-0 1/2] {RUN}
#12 0.101 [dali] pip install 17 locked wheel(s) from pypi
#12 sha256:5e87bd8d6d69370d1eefaca74879846a94b7e30c6b11e62f08044e5c3cf10987 1.2MB / 1.2MB done
#12 13.63 [dali] nvidia.dali 2.4.0 imports
#12 DONE 14.0s
#13 [stage-0 2/2] RUN true
#13 DONE 0.1s
"""


def test_a_step_pulled_from_a_registry_cache_counts_as_cached_and_one_that_printed_output_as_run() -> None:
    counter = StepCounter()
    for line in PROGRESS.splitlines():
        counter.feed(line)
    assert counter.cached == 2  # the ADD (CACHED) and the os RUN (only its layers downloaded)
    assert counter.run == [RUN, "RUN true"]  # printed its own output / ended DONE with nothing to tell
