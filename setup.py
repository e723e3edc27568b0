"""Build hook: compile the engine's inner loops and the referee's per-decision code with mypyc
when this machine can; never fail.

``pip install .`` and ``pip install -e .`` both come through here (the rest of the package is
described in pyproject.toml). The extension step copies the sources of ``arena._kernel`` (the
rules engine's private inner loops; ``KERNEL_SOURCES``), writes into the copy of ``_kernel.py``
the SHA-256 of the originals, and compiles that copy with mypyc into ``arena/_kernel*.so`` beside
the sources (in place for an editable install). It does the same for the referee's modules
(``REFEREE_MODULES``: a bot's stream, the table's game loop, the hand-encoded messages, the
spectators' feed), compiled together into ``arena/referee/*.so``. On import a compiled module
checks the digest against the sources beside it and runs the Python source instead when they
differ, so an edited source is never shadowed by a stale build (``arena._compiled``).

Without a C compiler or the Python headers, or with ``HEARTS_ARENA_PURE_ENGINE=1``, the step
prints why and the package installs with the Python sources alone. An editable reinstall whose
compiled modules already match the sources reuses them instead of compiling again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sysconfig
import traceback
from pathlib import Path

# setuptools ships no type information for these (and setup.py is build glue, not the package).
from setuptools import Extension, setup  # type: ignore[import-untyped]
from setuptools.command.build_ext import build_ext  # type: ignore[import-untyped]

PACKAGE = Path(__file__).resolve().parent / "arena"
KERNEL_SOURCES = ("_kernel.py", "cards.py", "errors.py", "_compiled.py")
"""The modules the kernel is compiled from, the same list as ``arena._kernel.KERNEL_SOURCES``."""
PURE_ENGINE_VARIABLE = "HEARTS_ARENA_PURE_ENGINE"
DIGEST_LINE = '_BUILT_FROM = ""'
"""The line of ``_kernel.py`` that the compiled copy carries with the digest filled in."""
MODULE = "arena._kernel"
MYPY = "mypy>=2.4,<3"
"""The build requirement for mypyc: the versions the compiled kernel and its stale-build guard
are tested with (the test suite checks the build installed beside it)."""
METADATA_COMMANDS = {"egg_info", "dist_info", "sdist"}
"""Commands that describe the package without building it."""
WORK = Path("build") / "mypyc-kernel"
"""Where the copy of the sources and mypyc's C output go (``build/`` is ignored by git)."""
REFEREE_MODULES = (
    "referee/session.py",
    "referee/wire.py",
    "referee/game.py",
    "referee/spectators.py",
)
"""The referee's per-decision modules, compiled together when they are there (the same list as
``arena._compiled.REFEREE_MODULES``); their digest covers these files."""
REFEREE_GROUP = "arena.referee._compiled"
"""The name of the referee build's shared library (beside the modules, in ``arena/referee``)."""
REFEREE_WORK = Path("build") / "mypyc-referee"
REFEREE_MYPY_CONFIG = """[mypy]
ignore_missing_imports = True
follow_imports = silent

[mypy-arena.proto.*]
ignore_errors = True
"""
"""mypy's settings for the referee's build. The project's strict settings are for development
(scripts/test.sh checks them). A build environment may lack the runtime's libraries (gRPC,
protobuf) and their stubs: their values are then plain Python objects to mypyc, which is all the
referee does with them, and the generated stubs of arena.proto may not check without them."""


def sources_digest(folder: Path, names: tuple[str, ...] = KERNEL_SOURCES) -> str:
    """The SHA-256 of the sources ``names`` (the kernel's by default) in ``folder``, as
    ``arena._kernel`` and ``arena._compiled`` compute it."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return digest.hexdigest()


def compiled_files(folder: Path) -> list[Path]:
    """The compiled kernel's files in ``folder`` for this interpreter (the module, its library)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return sorted(folder.glob(f"_kernel*{suffix}"))


def referee_files(folder: Path) -> list[Path]:
    """The compiled referee's files in ``folder`` (the package) for this interpreter."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    names = [Path(m).stem for m in REFEREE_MODULES] + [REFEREE_GROUP.rsplit(".", 1)[1] + "__mypyc"]
    return sorted(p for n in names for p in (folder / "referee").glob(f"{n}{suffix}"))


def has_referee(folder: Path) -> bool:
    """Whether ``folder`` holds the referee's sources (a build of the engine alone has not)."""
    return all((folder / name).exists() for name in REFEREE_MODULES)


def referee_current(folder: Path) -> bool:
    """Whether ``folder`` holds a compiled referee made from the sources beside it (or no
    referee at all, so nothing to compile)."""
    if not has_referee(folder):
        return True
    digest = sources_digest(folder, REFEREE_MODULES).encode()
    files = referee_files(folder)
    # The digest is compiled into the group's shared library (arena._compiled is part of it);
    # the modules' own files are shims that load it. Looked for in the shims, it was never
    # found, and every editable reinstall compiled the referee again.
    return len(files) == len(REFEREE_MODULES) + 1 and all(
        digest in path.read_bytes() for path in files if "__mypyc" in path.name
    )


class BuildKernel(build_ext):  # type: ignore[misc]
    """Compile ``arena._kernel`` with mypyc, or leave the Python source alone if that fails."""

    _reuse = False
    """Whether to copy the current in-place build instead of compiling (a wheel's build)."""

    def finalize_options(self) -> None:
        """Replace the stand-in extension with mypyc's (or with none), before setuptools sees it."""
        # Metadata commands finalize build_ext too (for the manifest), but never build.
        if set(self.distribution.commands) <= METADATA_COMMANDS:
            self.distribution.ext_modules = []
        else:
            self.distribution.ext_modules = self._kernel_extensions()
            if self.distribution.ext_modules is not None and not self._reuse:
                self.distribution.ext_modules += self._referee_extensions()
        super().finalize_options()

    def run(self) -> None:
        """Compile the extensions mypyc generated; on failure, install without them."""
        if self._reuse:
            # A wheel from a tree whose in-place build is current: the same files, no compiler.
            target = Path(self.build_lib) / "arena"
            (target / "referee").mkdir(parents=True, exist_ok=True)
            for path in compiled_files(PACKAGE) + referee_files(PACKAGE):
                shutil.copy2(path, target / path.relative_to(PACKAGE))
            return
        try:
            super().run()
        except Exception:  # any failure leaves the Python engine, which is always correct
            traceback.print_exc()
            print(
                "could not compile the kernel or the referee (see above): installing the "
                "Python engine and referee"
            )
            self._remove_outputs()
            self.extensions: list[Extension] = []

    def copy_extensions_to_source(self) -> None:
        """Put the built files beside the sources, each replaced in one step: other processes
        may be importing the kernel meanwhile (a file rewritten in place can crash them)."""
        for ext in self.extensions:
            filename = self.get_ext_filename(self.get_ext_fullname(ext.name))
            # Module paths under the package (arena/referee/...); a bare name goes in arena/.
            target = PACKAGE.parent / filename if "/" in filename else PACKAGE / filename
            partial = target.with_name(target.name + ".partial")
            shutil.copyfile(Path(self.build_lib) / filename, partial)
            os.replace(partial, target)

    def get_source_files(self) -> list[str]:
        """No sources of its own for an sdist: mypyc's C output is regenerated at every build."""
        return []

    def _kernel_extensions(self) -> list[Extension]:
        if os.environ.get(PURE_ENGINE_VARIABLE) == "1":
            print(f"{PURE_ENGINE_VARIABLE}=1: installing the Python engine only")
            return []
        digest = sources_digest(PACKAGE)
        if _built_from(PACKAGE, digest):
            print(f"the compiled kernel in {PACKAGE} matches its sources: reusing it")
            if self._in_place():
                return []
            if not referee_current(PACKAGE):
                return self._generate(digest)  # a wheel, with a referee to compile: both
            # A wheel: run() copies the files; the stand-in keeps the wheel a platform wheel.
            self._reuse = True
            stand_in: list[Extension] = self.distribution.ext_modules
            return stand_in
        try:
            return self._generate(digest)
        except (Exception, SystemExit):  # mypyc exits on a type error: install the source
            traceback.print_exc()
            print("mypyc could not translate the kernel (see above): installing the Python engine")
            return []

    def _generate(self, digest: str) -> list[Extension]:
        """mypyc's extensions for a copy of the kernel's sources that carries their digest."""
        from mypyc.build import mypycify

        # A build from an earlier install must not outlive a failed one, nor mix with this one.
        self._remove_outputs(kernel_only=True)
        # Relative to the project (pip builds there): setuptools refuses absolute source paths.
        work = WORK
        shutil.rmtree(work, ignore_errors=True)
        copy = work / "src" / "arena"
        copy.mkdir(parents=True)
        (copy / "__init__.py").write_text("")
        for name in KERNEL_SOURCES:
            shutil.copy2(PACKAGE / name, copy / name)
        kernel = copy / "_kernel.py"
        source = kernel.read_text(encoding="utf-8")
        if source.count(DIGEST_LINE) != 1:
            raise RuntimeError(f"arena/_kernel.py must hold the line {DIGEST_LINE!r} exactly once")
        kernel.write_text(source.replace(DIGEST_LINE, f'_BUILT_FROM = "{digest}"'), "utf-8")
        extensions: list[Extension] = mypycify(
            ["--cache-dir", str(work / "cache"), str(kernel)], target_dir=str(work / "c")
        )
        return extensions

    def _referee_extensions(self) -> list[Extension]:
        """mypyc's extensions for the referee's per-decision modules, or none (not there,
        current in place, or mypyc cannot translate them: the Python source is always right)."""
        if os.environ.get(PURE_ENGINE_VARIABLE) == "1" or not has_referee(PACKAGE):
            return []
        digest = sources_digest(PACKAGE, REFEREE_MODULES)
        if self._in_place() and referee_current(PACKAGE):
            print(f"the compiled referee in {PACKAGE} matches its sources: reusing it")
            return []
        try:
            from mypyc.build import mypycify

            if self._in_place():  # a build from an earlier install must not outlive this one
                for path in referee_files(PACKAGE):
                    path.unlink()
            work = REFEREE_WORK
            shutil.rmtree(work, ignore_errors=True)
            copy = work / "src" / "arena"
            shutil.copytree(
                PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
            )
            config = work / "mypy.ini"
            config.write_text(REFEREE_MYPY_CONFIG, encoding="utf-8")
            modules = []
            for name in REFEREE_MODULES:
                module = copy / name
                source = module.read_text(encoding="utf-8")
                if source.count(DIGEST_LINE) != 1:
                    raise RuntimeError(f"arena/{name} must hold the line {DIGEST_LINE!r} once")
                module.write_text(source.replace(DIGEST_LINE, f'_BUILT_FROM = "{digest}"'), "utf-8")
                modules.append(str(module))
            extensions: list[Extension] = mypycify(
                ["--cache-dir", str(work / "cache"), "--config-file", str(config), *modules],
                target_dir=str(work / "c"),
                group_name=REFEREE_GROUP,
            )
            return extensions
        except (Exception, SystemExit):  # mypyc exits on a type error: install the source
            traceback.print_exc()
            print("mypyc could not translate the referee (see above): installing its Python source")
            return []

    def _in_place(self) -> bool:
        # An editable install sets editable_mode, which turns into inplace only when finalized.
        return bool(self.inplace or getattr(self, "editable_mode", False))

    def _remove_outputs(self, *, kernel_only: bool = False) -> None:
        if self._in_place():
            folder = PACKAGE
        elif self.build_lib:
            folder = Path(self.build_lib) / "arena"
        else:
            return
        for path in compiled_files(folder) + ([] if kernel_only else referee_files(folder)):
            path.unlink()


def _built_from(folder: Path, digest: str) -> bool:
    """Whether ``folder`` holds a compiled kernel made from sources with ``digest``."""
    main = folder / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
    files = compiled_files(folder)
    return main in files and any(digest.encode() in path.read_bytes() for path in files)


def _build_requires() -> list[str]:
    """mypy (for mypyc) when the kernel needs compiling: not for an in-place build already current,
    so that an editable reinstall does not install mypy into pip's build environment again."""
    if os.environ.get(PURE_ENGINE_VARIABLE) == "1":
        return []
    if _built_from(PACKAGE, sources_digest(PACKAGE)) and referee_current(PACKAGE):
        return []
    return [MYPY]


# setup_requires is how setuptools' PEP 517 backend adds build requirements decided here; the
# stand-in extension tells setuptools that the package has one (so that it runs build_ext and tags
# the wheel for this platform); BuildKernel replaces it with mypyc's.
setup(
    setup_requires=_build_requires(),
    ext_modules=[Extension(MODULE, sources=["arena/_kernel.py"])],
    cmdclass={"build_ext": BuildKernel},
)
