"""Screenshots of the built site, to look at before a change to its pages or theme lands.

``python docs/screenshots.py OUT`` (after ``nox -s docs``) takes the index, an operator
page, a guide and an API page at 1400 and 1024 px wide with headless Chromium (Debian's
``chromium`` package), as OUT/<page>_<width>.png.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SITE = Path(__file__).parent / "_build" / "html"
PAGES = ["index", "operators/gather-nd", "guides/torch", "api/onnx_gather.gather_nd"]
WIDTHS = [1400, 1024]


def main(out: Path) -> int:
    """Take every page at every width; 1 if Chromium or the built site is missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None or not (SITE / "index.html").exists():
        print("needs chromium (apt-get install chromium) and a built site (nox -s docs)")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        for width in WIDTHS:
            shot = out / f"{page.replace('/', '_')}_{width}.png"
            subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--hide-scrollbars", f"--screenshot={shot}",
                 f"--window-size={width},900", (SITE / f"{page}.html").resolve().as_uri()],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            print(shot)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("screenshots")))
