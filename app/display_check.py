"""Check, before Qt starts, that a window can be opened; say how to fix it in one line if not.

Qt's X11 platform plugin (xcb) needs system libraries that the Qt wheel does not ship. Since
Qt 6.5 it needs ``libxcb-cursor0``, which a plain Debian or Ubuntu install lacks; without it
Qt prints a long message and aborts with a core dump. This module finds the missing
libraries first (with ``ldd`` on the plugin, and by loading ``libxcb-cursor``, which Qt
loads at run time) and returns one line naming the packages to install.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["display_problem", "debian_package", "missing_libraries"]

#: Loaded by Qt ≥ 6.5 with dlopen, so ``ldd`` does not list it.
RUNTIME_LIBRARIES = ("libxcb-cursor.so.0",)

#: Fedora / Arch package names of the libraries most often missing.
OTHER_DISTROS = {
    "libxcb-cursor0": ("xcb-util-cursor", "xcb-util-cursor"),
    "libxcb-icccm4": ("xcb-util-wm", "xcb-util-wm"),
    "libxcb-keysyms1": ("xcb-util-keysyms", "xcb-util-keysyms"),
    "libxcb-image0": ("xcb-util-image", "xcb-util-image"),
    "libxcb-render-util0": ("xcb-util-renderutil", "xcb-util-renderutil"),
    "libxkbcommon-x11-0": ("libxkbcommon-x11", "libxkbcommon-x11"),
}


def debian_package(soname: str) -> str:
    """The Debian package that ships ``soname`` by Debian's naming rule.

    Examples
    --------
    >>> debian_package("libxcb-icccm.so.4")
    'libxcb-icccm4'
    >>> debian_package("libxkbcommon-x11.so.0")
    'libxkbcommon-x11-0'
    >>> debian_package("libX11-xcb.so.1")
    'libx11-xcb1'
    """
    match = re.fullmatch(r"(.+?)\.so\.(\d+)(?:\..*)?", soname)
    if match is None:
        return soname
    stem, major = match.group(1).lower(), match.group(2)
    return f"{stem}-{major}" if stem[-1].isdigit() else f"{stem}{major}"


def _qt_xcb_files() -> list[Path]:
    try:
        import PySide6
    except ImportError:  # pragma: no cover - the app depends on it
        return []
    qt = Path(PySide6.__file__).parent / "Qt"
    files = [qt / "plugins" / "platforms" / "libqxcb.so", *sorted((qt / "lib").glob("libQt6XcbQpa.so*"))[:1]]
    return [f for f in files if f.exists()]


def _ldd_missing(files: list[Path]) -> list[str]:
    ldd = shutil.which("ldd")
    if ldd is None or not files:
        return []
    missing: list[str] = []
    for file in files:
        try:
            out = subprocess.run([ldd, str(file)], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            if "not found" in line:
                name = line.split("=>")[0].strip()
                if name and name not in missing:
                    missing.append(name)
    return missing


def _loadable(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_libraries(
    ldd_missing: Callable[[list[Path]], list[str]] = _ldd_missing,
    loadable: Callable[[str], bool] = _loadable,
) -> list[str]:
    """Shared libraries the xcb platform plugin needs that this system lacks (sonames)."""
    missing = list(ldd_missing(_qt_xcb_files()))
    missing += [lib for lib in RUNTIME_LIBRARIES if lib not in missing and not loadable(lib)]
    return missing


def _uses_xcb(environ: Mapping[str, str]) -> bool:
    platform = environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if platform:
        return platform == "xcb"
    wayland = environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE", "") == "wayland"
    return not wayland


def display_problem(
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    missing: Callable[[], list[str]] = missing_libraries,
) -> str | None:
    """One line saying why no window can be opened and how to fix it, or ``None`` if it can.

    Only Linux with Qt's X11 plugin is checked (other platforms and ``QT_QPA_PLATFORM=offscreen``
    return ``None``).

    Parameters
    ----------
    environ
        The environment (default ``os.environ``).
    platform
        ``sys.platform`` (default the running one).
    missing
        Returns the missing sonames (default :func:`missing_libraries`).
    """
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux") or not _uses_xcb(environ):
        return None
    if not environ.get("DISPLAY") and not environ.get("WAYLAND_DISPLAY"):
        return ("Counterbias Studio cannot open a window: no display (DISPLAY is not set). Run it on a desktop "
                "session, or headless with QT_QPA_PLATFORM=offscreen (e.g. for --screenshot).")
    libs = missing()
    if not libs:
        return None
    packages = list(dict.fromkeys(debian_package(lib) for lib in libs))
    fedora = [OTHER_DISTROS[p][0] for p in packages if p in OTHER_DISTROS]
    arch = [OTHER_DISTROS[p][1] for p in packages if p in OTHER_DISTROS]
    what = "the system library" if len(libs) == 1 else "the system libraries"
    line = (f"Counterbias Studio cannot open a window: Qt needs {what} {', '.join(libs)}. "
            f"Install {'it' if len(packages) == 1 else 'them'} with: sudo apt-get install {' '.join(packages)}")
    if fedora:
        line += f" (Fedora: sudo dnf install {' '.join(fedora)}; Arch: sudo pacman -S {' '.join(arch)})"
    return line + "."


if __name__ == "__main__":  # `make run` runs this with the system Python before installing anything
    problem = display_problem()
    if problem:
        print(problem, file=sys.stderr)
    sys.exit(1 if problem else 0)
