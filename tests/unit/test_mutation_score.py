"""perf/mutation.py's classes of a surviving mutant: equivalent (only while the mutant still makes the change its entry
records: mutmut renumbers a function's mutants when it is edited), message-only, or a decision that counts."""

import libcst as cst
import pytest

from perf import mutation

ORIGINAL = 'def f(x):\n    if x.decode("utf-8") == "ok":\n        raise ValueError("the value is not ok at all")\n'


@pytest.fixture
def mutant(monkeypatch):
    """The mutant code read_functions_from_index gives for any name: set by the test."""
    from mutmut.mutation import diff_apply

    code: dict[str, str] = {}

    def pair(name, path):
        return cst.parse_module(ORIGINAL).body[0], cst.parse_module(code["mutant"]).body[0]

    monkeypatch.setattr(diff_apply, "read_functions_from_index", pair)
    return code


def test_an_equivalent_entry_holds_only_while_its_mutant_makes_the_recorded_change(mutant, monkeypatch,
                                                                                    capsys) -> None:
    name = "pkg.mod.x_f__mutmut_3"
    monkeypatch.setattr(mutation, "EQUIVALENT", {name: ('if x.decode("UTF-8") == "ok":', "codec names ignore case")})
    mutant["mutant"] = ORIGINAL.replace('"utf-8"', '"UTF-8"')
    assert mutation.survivor_kind(name, "pkg/mod.py") == "equivalent"
    mutant["mutant"] = ORIGINAL.replace('== "ok"', '!= "ok"')  # the number now names another mutant
    assert mutation.survivor_kind(name, "pkg/mod.py") == "decision"
    assert f"stale: EQUIVALENT[{name!r}]" in capsys.readouterr().err
    mutant["mutant"] = ORIGINAL.replace("the value is not ok at all", "XXthe value is not ok at allXX")
    assert mutation.survivor_kind(name, "pkg/mod.py") == "message"  # a stale entry still lets a message be one
    assert mutation.survivor_kind("pkg.mod.x_f__mutmut_9", "pkg/mod.py") == "message"


def test_the_score_leaves_out_what_no_test_could_tell_apart() -> None:
    from collections import Counter

    tally = Counter(total=10, killed=6, timeout=1, survived=1, message=1, equivalent=1)
    assert mutation.score(tally) == pytest.approx(100 * 7 / 8)
    assert mutation.score(Counter(total=2, **{"not checked": 2})) is None
