"""Regenerate the committed Python code for the hearts.v1 protocol, or prove it fresh.

    python scripts/gen_protos.py            # rewrite arena/proto/ from proto/
    python scripts/gen_protos.py --check    # regenerate into a temp dir and diff; exit 1 if stale

For every ``proto/hearts/v1/NAME.proto`` it writes ``arena/proto/hearts/v1/NAME_pb2.py`` and
``NAME_pb2_grpc.py`` (grpc_tools.protoc) with their mypy-protobuf ``.pyi`` stubs, plus the
``__init__.py`` files that make ``arena.proto.hearts.v1`` a package. protoc names a cross-file
import after the proto package (``from hearts.v1 import game_pb2``); those imports, and the
module names given to the message classes, are rewritten under ``arena.proto`` so that the
generated code imports cleanly from the installed package.

The generator versions are pinned in pyproject.toml's dev extra; the script refuses to run with
other versions installed, because their output differs and the freshness test would then fail
for a reason that has nothing to do with the .proto files.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PROTO_PACKAGE_DIR = Path("hearts") / "v1"
OUT_ROOT = ROOT / "arena" / "proto"
PYTHON_PACKAGE_PREFIX = "arena.proto"
PINNED_GENERATORS = ("grpcio-tools", "mypy-protobuf")
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
MAX_DIFF_LINES = 40
"""How much of a unified diff --check prints per stale file (generated lines are long)."""

INIT_FILES: Mapping[Path, str] = {
    Path("__init__.py"): '"""Generated protocol code (see proto/ and scripts/gen_protos.py)."""\n',
    Path("hearts") / "__init__.py": '"""The hearts protocol packages, one per version."""\n',
    PROTO_PACKAGE_DIR / "__init__.py": (
        '"""hearts.v1: messages and gRPC stubs generated from proto/hearts/v1/*.proto."""\n'
    ),
}
"""Package markers written beside the generated modules, part of what --check compares."""

# `from hearts.v1 import x_pb2 as y` in .py and .pyi files alike.
_FROM_IMPORT = re.compile(r"^from (hearts\.v1) import ", re.MULTILINE)
# The module name handed to the builder, which becomes the message classes' __module__.
_BUILDER_MODULE = re.compile(r"(BuildTopDescriptorsAndMessages\(DESCRIPTOR, ')(hearts\.v1\.)")


class GeneratorError(Exception):
    """The generator cannot run as it stands (wrong tool versions, protoc failed)."""


def pinned_versions(pyproject: Path) -> dict[str, str]:
    """The exact versions of the code generators pinned (``name==version``) in pyproject."""
    with pyproject.open("rb") as f:
        data = tomllib.load(f)
    pins: dict[str, str] = {}
    for extra in data.get("project", {}).get("optional-dependencies", {}).values():
        for spec in extra:
            name, sep, version = str(spec).partition("==")
            if sep and name.strip() in PINNED_GENERATORS:
                pins[name.strip()] = version.strip()
    return pins


def check_generator_versions() -> None:
    """Refuse to generate with code generators other than the pinned ones."""
    pins = pinned_versions(ROOT / "pyproject.toml")
    for name in PINNED_GENERATORS:
        want = pins.get(name)
        if want is None:
            raise GeneratorError(f"pyproject.toml pins no exact version of {name} (name==X.Y.Z)")
        try:
            have: str | None = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != want:
            installed = "is not installed" if have is None else f"{have} is installed"
            raise GeneratorError(
                f"{name} {installed}, but pyproject.toml pins {want}; "
                f"run: {sys.executable} -m pip install -e '.[dev]'"
            )


def proto_files() -> list[Path]:
    """The .proto files to compile, relative to the proto root, in a stable order."""
    files = sorted(
        p.relative_to(PROTO_ROOT) for p in (PROTO_ROOT / PROTO_PACKAGE_DIR).glob("*.proto")
    )
    if not files:
        raise GeneratorError(f"no .proto files under {PROTO_ROOT / PROTO_PACKAGE_DIR}")
    return files


def _plugin(name: str) -> Path:
    # The mypy-protobuf plugins are console scripts installed beside this interpreter; naming
    # them explicitly avoids picking up another copy from PATH.
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise GeneratorError(f"{name} not found beside {sys.executable}; install mypy-protobuf")
    return path


def run_protoc(out_dir: Path) -> None:
    """Compile every .proto file into ``out_dir`` (Python code, gRPC code and both stubs)."""
    args = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"--proto_path={PROTO_ROOT}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *(p.as_posix() for p in proto_files()),
    ]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GeneratorError(f"protoc failed ({done.returncode}):\n{done.stderr.strip()}")


def rewrite_imports(text: str) -> str:
    """Move protoc's ``hearts.v1`` module references under the ``arena.proto`` package."""
    text = _FROM_IMPORT.sub(rf"from {PYTHON_PACKAGE_PREFIX}.\1 import ", text)
    return _BUILDER_MODULE.sub(rf"\1{PYTHON_PACKAGE_PREFIX}.\2", text)


def generate() -> dict[Path, bytes]:
    """Every file the generator owns under arena/proto/, by path relative to it."""
    check_generator_versions()
    files: dict[Path, bytes] = {path: text.encode() for path, text in INIT_FILES.items()}
    with tempfile.TemporaryDirectory(prefix="gen_protos_") as tmp:
        out_dir = Path(tmp)
        run_protoc(out_dir)
        for path in sorted(out_dir.rglob("*")):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                files[path.relative_to(out_dir)] = rewrite_imports(text).encode()
    return files


def _is_owned(relative: Path) -> bool:
    return relative in INIT_FILES or relative.name.endswith(GENERATED_SUFFIXES)


def committed_files() -> dict[Path, bytes]:
    """The generator-owned files now under arena/proto/ (caches and strangers ignored)."""
    if not OUT_ROOT.exists():
        return {}
    found: dict[Path, bytes] = {}
    for path in sorted(OUT_ROOT.rglob("*")):
        relative = path.relative_to(OUT_ROOT)
        if path.is_file() and "__pycache__" not in relative.parts and _is_owned(relative):
            found[relative] = path.read_bytes()
    return found


def differences(expected: Mapping[Path, bytes], actual: Mapping[Path, bytes]) -> list[str]:
    """One line per stale, missing or leftover file, each followed by a short diff if stale."""
    report: list[str] = []
    for relative in sorted(expected.keys() | actual.keys()):
        shown = (OUT_ROOT / relative).relative_to(ROOT).as_posix()
        if relative not in actual:
            report.append(f"missing: {shown}")
        elif relative not in expected:
            report.append(f"not generated from any .proto (delete it): {shown}")
        elif expected[relative] != actual[relative]:
            report.append(f"stale: {shown}")
            diff = difflib.unified_diff(
                actual[relative].decode(errors="replace").splitlines(),
                expected[relative].decode(errors="replace").splitlines(),
                "committed",
                "regenerated",
                lineterm="",
            )
            report.extend(f"    {line[:200]}" for line in list(diff)[:MAX_DIFF_LINES])
    return report


def write(files: Mapping[Path, bytes]) -> list[Path]:
    """Write the generated files and delete generated leftovers; return the paths changed."""
    changed: list[Path] = []
    for relative, content in sorted(files.items()):
        target = OUT_ROOT / relative
        if target.exists() and target.read_bytes() == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        changed.append(target)
    for relative in committed_files().keys() - files.keys():
        (OUT_ROOT / relative).unlink()
        changed.append(OUT_ROOT / relative)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Regenerate (default) or check (``--check``); the exit status says what happened."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory and exit 1 if the committed code differs",
    )
    args = parser.parse_args(argv)
    try:
        expected = generate()
    except GeneratorError as e:
        print(f"gen_protos: {e}", file=sys.stderr)
        return 2
    if args.check:
        report = differences(expected, committed_files())
        if report:
            print("gen_protos: the generated protocol code is stale:", file=sys.stderr)
            print("\n".join(report), file=sys.stderr)
            print(f"run: {sys.executable} scripts/gen_protos.py", file=sys.stderr)
            return 1
        print(f"gen_protos: {len(expected)} files up to date")
        return 0
    changed = write(expected)
    for path in changed:
        print(f"wrote {path.relative_to(ROOT).as_posix()}")
    print(f"gen_protos: {len(expected)} files, {len(changed)} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
