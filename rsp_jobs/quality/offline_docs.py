"""Data Docs that render offline.

GX 1.x hard-codes CDN addresses in its page templates (jQuery, Bootstrap, bootstrap-table,
Font Awesome, Vega: ``great_expectations/render/view/templates``), so on a machine without
internet, or one that may reach only package registries, the quality reports show unstyled
text and an empty validation list. The set-up (``make setup``: ``python -m
rsp_jobs.quality.offline_docs``) fetches those files once from the npm registry, pinned and
integrity-checked (``data_docs_assets.json``), and after every Data Docs build ``localize``
copies them into the site's ``static/vendor/`` and points the pages at them. The copies are
part of the site, so a site copied elsewhere or served over HTTP still works.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import urllib.request
from functools import lru_cache, partial
from pathlib import Path

log = logging.getLogger(__name__)

ASSETS_FILE = Path(__file__).with_name("data_docs_assets.json")
REGISTRY = "https://registry.npmjs.org"
VENDOR = "vendor"  # under the site's static/
STAMP = ".pins-sha256"
# a CDN tag's subresource-integrity and CORS attributes: a local copy loads without them (and
# a file:// page cannot satisfy crossorigin="anonymous")
_CDN_ATTRIBUTES = re.compile(r'\s+(?:integrity|crossorigin)="[^"]*"')
# GX's logo, from its web-assets bucket with the data context's id appended (top_navbar.j2),
# and its dark-mode variant (a CSS background): the site holds the logo under static/images/
_GX_IMAGE = re.compile(
    r"""(["'])https://great-expectations-web-assets\.s3[\w.-]*\.amazonaws\.com/([\w-]+\.png)(?:\?[^"']*)?\1"""
)
LOGO = "logo-long.png"


def _image_path(images: Path, in_site: str, m: re.Match) -> str:
    """An image reference rewritten to ``in_site`` (the page's way to the site's images), GX's
    logo standing in for an image the site does not have."""
    name = m.group(2) if (images / m.group(2)).is_file() else LOGO
    return f"{m.group(1)}{in_site}/{name}{m.group(1)}"


def assets_dir() -> Path:
    """Where the set-up puts the fetched files: ``RSP_DOCS_ASSETS``, else beside the installed
    packages (``<venv>/share/rsp/data-docs``)."""
    return Path(
        os.environ.get("RSP_DOCS_ASSETS") or Path(sys.prefix) / "share" / "rsp" / "data-docs"
    )


@lru_cache(maxsize=1)
def packages() -> tuple[dict, ...]:
    return tuple(json.loads(ASSETS_FILE.read_text())["packages"])


def _folder(package: dict) -> str:
    return f"{package['name']}@{package['version']}"


def local_paths() -> dict[str, str]:
    """CDN address → the file's path under the vendor folder."""
    return {url: f"{_folder(p)}/{path}" for p in packages() for url, path in p["files"].items()}


def installed(root: Path | None = None) -> bool:
    root = root or assets_dir()
    return all((root / path).is_file() for path in local_paths().values())


def fetch(root: Path | None = None, registry: str = REGISTRY) -> Path:
    """Download each package's tarball, check it against its pinned integrity and unpack the
    files the pages use (and ``folders``: Font Awesome's web fonts) under ``root``. Packages
    already there are skipped."""
    root = root or assets_dir()
    for package in packages():
        target = root / _folder(package)
        if all((target / path).is_file() for path in package["files"].values()):
            continue
        name, version = package["name"], package["version"]
        url = f"{registry}/{name}/-/{name.split('/')[-1]}-{version}.tgz"
        with urllib.request.urlopen(url, timeout=60) as response:
            tarball = response.read()
        algorithm, _, expected = package["integrity"].partition("-")
        actual = base64.b64encode(hashlib.new(algorithm, tarball).digest()).decode()
        if actual != expected:
            raise RuntimeError(
                f"{url}: {algorithm} is {actual}, but {ASSETS_FILE.name} pins {expected}"
            )
        wanted = set(package["files"].values())
        prefixes = tuple(f"{folder.rstrip('/')}/" for folder in package.get("folders", ()))
        staging = target.with_name(target.name + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            members = []
            for member in archive.getmembers():
                inner = member.name.split("/", 1)[-1]  # npm tarballs hold package/<path>
                if member.isfile() and (inner in wanted or inner.startswith(prefixes)):
                    member.name = inner
                    members.append(member)
            archive.extractall(staging, members=members, filter="data")
        missing = [path for path in wanted if not (staging / path).is_file()]
        if missing:
            raise RuntimeError(f"{url} has no {', '.join(missing)} (see {ASSETS_FILE.name})")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    # what scripts/bootstrap.sh compares with the pins, to skip this on the next set-up
    (root / STAMP).write_text(hashlib.sha256(ASSETS_FILE.read_bytes()).hexdigest() + "\n")
    return root


def localize(site: Path, root: Path | None = None) -> int:
    """Point the HTML pages of the Data Docs site at ``site`` to local copies of their CDN
    files and of GX's logo (which GX loads from its bucket, tagged with the context's id);
    returns how many pages changed. Without the fetched files, says how to get them and
    leaves the pages as GX wrote them."""
    root = root or assets_dir()
    if not installed(root):
        log.warning(
            "Data Docs at %s load their scripts and styles from CDNs: the offline copies "
            "are not installed at %s (run `make setup`, or `python -m rsp_jobs.quality.offline_docs`)",
            site,
            root,
        )
        return 0
    vendor = site / "static" / VENDOR
    if not installed(vendor):
        shutil.copytree(root, vendor, dirs_exist_ok=True)
    paths = local_paths()
    pattern = re.compile(
        "|".join(re.escape(f'"{url}"') for url in sorted(paths, key=len, reverse=True))
    )
    # only pages written since the last pass: a site keeps a page per validation for its
    # retention (30 days by default), and this runs after every validation
    mark = vendor / ".localized"
    since = mark.stat().st_mtime_ns if mark.exists() else 0
    mark.touch()
    changed = 0
    images = site / "static" / "images"
    for page in site.rglob("*.html"):
        if page.stat().st_mtime_ns < since:
            continue
        text = page.read_text(encoding="utf-8")
        if not (pattern.search(text) or _GX_IMAGE.search(text)):
            continue
        prefix = os.path.relpath(vendor, page.parent).replace(os.sep, "/")
        text = pattern.sub(lambda m: f'"{prefix}/{paths[m.group(0)[1:-1]]}"', text)  # noqa: B023 (used at once)
        in_site = os.path.relpath(images, page.parent).replace(os.sep, "/")
        text = _GX_IMAGE.sub(
            partial(_image_path, images, in_site),
            text,
        )
        page.write_text(_CDN_ATTRIBUTES.sub("", text), encoding="utf-8")
        changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fetch the files GX Data Docs load from CDNs, for offline pages."
    )
    parser.add_argument(
        "--dest",
        type=Path,
        default=None,
        help="where to put them (default: RSP_DOCS_ASSETS, else <venv>/share/rsp/data-docs)",
    )
    args = parser.parse_args(argv)
    print(f"Data Docs assets in {fetch(args.dest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
