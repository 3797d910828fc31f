"""DALI's Paddle plugin imports with the image's Paddle (nvidia.dali.plugin.paddle: what bench-rn50 and bench-hgnet
feed training with on GPU hosts). A check of the paddle layer: the plugin needs Paddle, which sits above DALI."""

import pytest

pytestmark = pytest.mark.fast

SCRIPT = ("import paddle, nvidia.dali as dali; "
          "from nvidia.dali.plugin.paddle import DALIGenericIterator, LastBatchPolicy; "
          "print(dali.__version__, paddle.__version__)")


@pytest.mark.needs("dali", "paddle")
@pytest.mark.check("func.dali-paddle-plugin", component="dali")
def test_dali_paddle_plugin_imports_with_this_paddle(components, host) -> None:
    result = host.run(f'python -c "{SCRIPT}"')
    last = (result.stderr.strip().splitlines() or ["no output"])[-1]
    assert result.rc == 0, f"expected nvidia.dali.plugin.paddle to import with paddle, found: {last}"
    dali, paddle = result.stdout.split()[-2:]
    assert (dali, paddle) == (components["dali"]["version"], components["paddle"]["version"]), (
        f"expected DALI {components['dali']['version']} with Paddle {components['paddle']['version']}, "
        f"found {dali} with {paddle}")
