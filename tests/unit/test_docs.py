"""The README stays a short guide whose links resolve and whose two commands are the ones the project runs."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_readme_is_a_short_guide_with_a_table_of_contents() -> None:
    assert len(README.splitlines()) <= 250
    contents = next(line for line in README.splitlines() if line.startswith("**Contents:**"))
    headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                for h in re.findall(r"^## (.+)$", README, re.M)}
    anchors = set(re.findall(r"\]\(#([^)]+)\)", README))
    assert anchors and anchors <= headings, anchors - headings
    assert contents


def test_every_relative_link_resolves() -> None:
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name}: {target}"


def test_the_two_setup_commands_are_the_ones_ci_and_make_run() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert blocks[0].startswith("make image && docker run") and "bench-rn50" in blocks[0]
    assert blocks[1].strip() == "make test"
    assert "\nmake test\n" in (REPO / ".ci" / "run").read_text()
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^image:", makefile, re.M) and re.search(r"^test: unit integration$", makefile, re.M)
