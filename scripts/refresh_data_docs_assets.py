"""Fetch the Data Docs' vendored scripts, stylesheets and fonts from the npm registry, with their licences.

    .venv/bin/python scripts/refresh_data_docs_assets.py [--assets DIR]

Reads the table in ``contract_platform.quality.offline_site`` (``PACKAGES``: each npm package, its version
and the files the pages load) and, per package, runs ``npm pack NAME@VERSION`` in a temporary folder and
copies those files and the package's licence file into ``plugins/contract_platform/quality/assets/<folder>/``
(``<folder>``: ``npm pack``'s name for it, ``bootstrap-4.3.1``). Folders no package names any more are
removed. A package whose tarball has no licence file keeps the one already vendored (assets/README.md says
where it came from); the run fails when there is none. Prints the files with their sizes, for the README.

Needs ``npm`` and the registry (or a mirror ``npm`` is configured for); the platform itself never does.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from contract_platform.quality.offline_site import ASSETS, PACKAGES, Package


def _pack(package: Package, into: Path) -> Path:
    done = subprocess.run(
        ["npm", "pack", package.spec, "--pack-destination", str(into), "--silent"],
        check=True,
        capture_output=True,
        text=True,
    )
    return into / done.stdout.strip().splitlines()[-1]


def _vendor(package: Package, tarball: Path, assets: Path) -> list[tuple[str, int]]:
    folder = assets / package.folder
    written: list[tuple[str, int]] = []
    with tarfile.open(tarball) as archive:
        members = {member.name.removeprefix("package/"): member for member in archive.getmembers() if member.isfile()}
        for path in (*package.files, package.license_file):
            target = folder / path
            member = members.get(path)
            if member is None:
                if path == package.license_file and target.is_file():
                    print(f"  {package.spec}: no {path} in the tarball; kept the vendored one", file=sys.stderr)
                    written.append((path, target.stat().st_size))
                    continue
                raise SystemExit(f"{package.spec}: {path} is not in the npm package")
            source = archive.extractfile(member)
            assert source is not None  # a regular file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            written.append((path, target.stat().st_size))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--assets", type=Path, default=ASSETS, help="the assets folder (default: the package's)")
    args = parser.parse_args(argv)
    assets: Path = args.assets
    assets.mkdir(parents=True, exist_ok=True)
    total = 0
    with tempfile.TemporaryDirectory(prefix="data-docs-assets-") as tmp:
        for package in PACKAGES:
            written = _vendor(package, _pack(package, Path(tmp)), assets)
            size = sum(bytes_ for _, bytes_ in written)
            total += size
            print(f"{package.spec} ({package.license}), {size / 1024:.0f} KiB in {package.folder}/")
            for path, bytes_ in written:
                print(f"  {path}  {bytes_:,} bytes")
    for stale in sorted({p.name for p in assets.iterdir() if p.is_dir()} - {p.folder for p in PACKAGES}):
        shutil.rmtree(assets / stale)
        print(f"removed {stale}/ (no package names it)")
    print(f"total: {total / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
