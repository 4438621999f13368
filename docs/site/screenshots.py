"""Photograph the built documentation site for the README: its front page and a search.

    python docs/site/build.py            # first: docs/_build/html
    python docs/site/screenshots.py      # needs Chromium (headless)

Writes ``docs/images/site-front.png`` and ``docs/images/site-search.png`` (the search page
for ``FileWriter``, rendered by the site's own JavaScript search). The pages are read from
``file://`` URLs: the site needs no server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SITE = os.path.join(ROOT, "docs", "_build", "html")
IMAGES = os.path.join(ROOT, "docs", "images")
WIDTH, HEIGHT = 1280, 800
QUERY = "FileWriter"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("docs/site/screenshots.py: needs Chromium (chromium, chromium-browser, google-chrome)")


def photograph(url: str, path: str) -> None:
    """``url`` as a WIDTH x HEIGHT PNG at ``path``, after its scripts ran (5 s of page time)."""
    with tempfile.TemporaryDirectory() as profile:  # no state shared with a user's browser
        subprocess.run(
            [
                chromium(),
                "--headless=new",
                "--no-sandbox",  # root in a container has no usable sandbox
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={WIDTH},{HEIGHT}",
                "--virtual-time-budget=5000",
                f"--screenshot={path}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {os.path.relpath(path, ROOT)}")


def main() -> int:
    index = os.path.join(SITE, "index.html")
    if not os.path.exists(index):
        sys.exit("docs/site/screenshots.py: no site at docs/_build/html; run docs/site/build.py")
    os.makedirs(IMAGES, exist_ok=True)
    photograph(f"file://{index}", os.path.join(IMAGES, "site-front.png"))
    search = f"file://{os.path.join(SITE, 'search.html')}?q={QUERY}"
    photograph(search, os.path.join(IMAGES, "site-search.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
