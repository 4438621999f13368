"""The documentation site builds without a warning and documents every public name.

Slow (the build takes ~25 s on 2 cores); needs ``pip install -e ".[docs]"``. ``.ci/run``
also runs ``python docs/site/build.py``, which does the same from the command line.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_PY = os.path.join(ROOT, "docs", "site", "build.py")
TOOLS = ("sphinx", "furo", "myst_parser")


def load_build_script():
    spec = importlib.util.spec_from_file_location("jisu_docs_build", BUILD_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert "jisu.train.Model.fit" in build.documented_names(out)
