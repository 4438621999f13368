"""The documentation site builds without a warning and documents every public name; the
README, now a front page, links to files that exist and keeps the commands CI runs.

The build is slow (~25 s on 2 cores) and needs ``pip install -e ".[docs]"``. ``.ci/run``
also runs ``python docs/site/build.py``, which does the same from the command line.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_PY = os.path.join(ROOT, "docs", "site", "build.py")
TOOLS = ("sphinx", "furo", "myst_parser")


def load_build_script():
    spec = importlib.util.spec_from_file_location("jisu_docs_build", BUILD_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_site_builds_without_warnings_and_documents_every_public_name(tmp_path):
    missing_tools = [name for name in TOOLS if importlib.util.find_spec(name) is None]
    if missing_tools:
        pytest.skip(
            f"the doc tools are not installed ({', '.join(missing_tools)}): "
            'pip install -e ".[docs]"'
        )
    build = load_build_script()
    out = str(tmp_path / "html")
    try:
        build.build(out)
    except subprocess.CalledProcessError:
        pytest.fail("the docs build has warnings (printed above); it must have none")
    missing = build.missing_names(out)
    assert not missing, f"public names without an entry in the reference: {missing}"
    documented = build.documented_names(out)
    assert "jisu.train.Model.fit" in documented
    # an op's entry shows its own API, not the engine's protocol that every op inherits
    assert "jisu.dataset.vision.Decode.device" in documented
    assert "jisu.dataset.vision.Resize.apply_into" not in documented
    with open(os.path.join(out, "api", "dataset.vision.html"), encoding="utf-8") as page:
        vision_page = page.read()
    assert "Elementwise ops" not in vision_page  # TensorOperation.apply_into's docstring


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_the_readme_links_to_files_that_exist_and_to_every_guide():
    readme = read("README.md")
    targets = {
        link.split("#", 1)[0]
        for link in re.findall(r"\]\(([^)\s]+)\)", readme)
        if not re.match(r"[a-z]+://", link) and not link.startswith("#")
    }
    missing = sorted(t for t in targets if not os.path.exists(os.path.join(ROOT, t)))
    assert not missing, f"README.md links to files that do not exist: {missing}"
    guides = sorted(
        f"docs/site/guides/{name}"
        for name in os.listdir(os.path.join(ROOT, "docs", "site", "guides"))
        if name.endswith(".md") and name != "benchmarks.md"  # that one includes docs/benchmarks.md
    )
    unlinked = [guide for guide in guides if guide not in targets]
    assert not unlinked, f"README.md does not link these guides: {unlinked}"
    for doc in ("docs/benchmarks.md", "docs/porting.md", "docs/scale-out.md"):
        assert doc in targets


def test_an_ops_engine_protocol_is_left_off_its_entry_and_its_api_kept():
    """The reference's rule for op classes (docs/site/_ext/jisu_api.py), on real classes."""
    import sys

    pytest.importorskip("sphinx", reason='the doc tools: pip install -e ".[docs]"')

    from jisu.dataset import vision

    sys.path.insert(0, os.path.join(ROOT, "docs", "site", "_ext"))
    try:
        from jisu_api import skip_engine_protocol
    finally:
        sys.path.pop(0)
    for name in ("apply", "apply_into", "axes", "output_dtype"):
        assert skip_engine_protocol(None, "class", name, getattr(vision.Resize, name), False, {})
    assert skip_engine_protocol(None, "class", "device", vision.Decode.device, False, {}) is None
    # a method of another class keeps its entry, whatever its name shares with the protocol
    assert skip_engine_protocol(None, "class", "apply", NotAnOp.apply, False, {}) is None


class NotAnOp:
    def apply(self, function):
        """Like MindSpore's ``Dataset.apply``."""


def test_the_readme_keeps_the_quick_start_commands_that_ci_runs():
    quick_start = read("README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "pip install torch==2.13.0 -e . && jisu train" in quick_start
    test_command = 'pip install torch==2.13.0 -e ".[test]" && python -m pytest'
    assert test_command in quick_start
    ci = read(".ci", "run").replace("pip install -q ", "pip install ")
    assert test_command in ci  # "The README's test command", run quietly there


def test_the_guides_hold_their_text_and_include_no_readme_section():
    """The manual lives in docs/site/guides/ (issue 28); only the front page includes the
    README's Quick start, so that the commands are written once."""
    guides = os.path.join(ROOT, "docs", "site", "guides")
    for name in os.listdir(guides):
        if name.endswith(".md"):
            assert "README.md" not in read("docs", "site", "guides", name), name
    assert read("docs", "site", "index.md").count("README.md") == 1
