"""scripts/docs_pictures.py: the docs site's pictures, made by the commands and photographed
in headless Chromium; the ones committed under docs/images/ are what it makes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import docs_pictures  # scripts/ is on the path: tests/scripts/conftest.py
import pytest

from tests.conftest import REPO

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_committed_pictures_are_shown_on_their_pages():
    picture = REPO / "docs" / "images" / "hlo-graph.png"
    assert picture.read_bytes().startswith(PNG)
    assert "](../images/hlo-graph.png)" in (REPO / "docs" / "commands" / "opt.md").read_text()
    explorer = REPO / "docs" / "images" / "model-explorer.png"
    assert explorer.read_bytes().startswith(PNG)
    assert "](../images/model-explorer.png)" in (REPO / "docs" / "commands" / "explore.md").read_text()
    roofline = ET.parse(REPO / "docs" / "images" / "roofline.svg").getroot()
    assert roofline.tag == "{http://www.w3.org/2000/svg}svg"
    assert "](../images/roofline.svg)" in (REPO / "docs" / "commands" / "kernels.md").read_text()


@pytest.mark.slow
def test_the_roofline_picture_is_the_commands_own(tmp_path):
    """``mlirhlo opt --stage roofline --plot``: mm_add's two kernels; the committed SVG has
    the same points and labels (its text is text: svg.fonttype none)."""
    pytest.importorskip("matplotlib", reason="needs the plot extra (matplotlib)")
    assert docs_pictures.roofline(tmp_path) == 2

    def texts(path):
        return sorted("".join(t.itertext()) for t in ET.parse(path).iter("{http://www.w3.org/2000/svg}text"))

    assert texts(tmp_path / "roofline.svg") == texts(REPO / "docs" / "images" / "roofline.svg")


@pytest.mark.slow
def test_the_hlo_graph_picture_shows_the_fusions(tmp_path):
    """The page Graphviz drew: mm_add's two fusions as clusters, its instructions as nodes."""
    from tests.headless_chromium import find_or_install

    browser, why = find_or_install()
    if browser is None:
        pytest.skip(f"needs headless Chromium: {why}")
    drawn = docs_pictures.hlo_graph(browser, tmp_path)
    assert drawn == {"nodes": 12, "clusters": 2}
    shot = (tmp_path / "hlo-graph.png").read_bytes()
    assert shot.startswith(PNG) and len(shot) > 20_000  # a drawn graph, not a blank page


@pytest.mark.slow
def test_the_model_explorer_picture_shows_the_graph_and_its_overlays(tmp_path):
    """``mlirhlo explore`` serving mm_add on H100: 13 op nodes in 2 layers (its fusions), and
    the node data of both overlays, each fusion's lower-bound µs and bound as the roofline
    stage gives them."""
    pytest.importorskip("model_explorer", reason="needs the explorer extra")
    from tests.headless_chromium import find_or_install

    browser, why = find_or_install()
    if browser is None:
        pytest.skip(f"needs headless Chromium: {why}")
    shown = docs_pictures.model_explorer(browser, tmp_path)
    assert (shown["nodes"], shown["layers"]) == (13, 2)
    figures = {row[0]: row[1:] for row in shown["rows"] if row[1] != "-"}
    assert figures == {"gemm_fusion_dot_general.1": ["4.342", "compute"], "loop_tanh_fusion": ["3.7561", "memory"]}
    shot = (tmp_path / "model-explorer.png").read_bytes()
    assert shot.startswith(PNG) and len(shot) > 20_000
