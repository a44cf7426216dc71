"""The wheel holds one import package, `replog`, and nothing else: it installs beside distributions that
own top-level `spark`, `formats` or `toolkit` packages. The executors' zip holds `replog/` too."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("formats", "recovery", "spark", "toolkit", "samples")  # installed as replog.<folder>
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "build", "dist", "*.egg-info",
                                    ".hypothesis", ".pytest_cache", "out", "generated", "crashes")


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    assert out.returncode == 0, f"{args}\n{out.stdout}\n{out.stderr}"
    return out


def bare_python(code: str, cwd: Path, path: list[Path]) -> str:
    """`code` run by this interpreter without site (so no .pth file, hence not the editable install's hook),
    seeing only `path` and the standard library; returns its stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join(map(str, path))
    return run([sys.executable, "-S", "-c", code], cwd=cwd, env=env).stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built offline from a copy of the work tree (a build writes build/ and *.egg-info beside its source)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=NOT_SOURCE)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(tmp / "dist"), str(src)], cwd=tmp)
    wheels = list((tmp / "dist").glob("replog-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_holds_only_replog_and_its_dist_info(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = [n for n in names if n.split("/")[0].endswith(".dist-info")]
    assert {n.split("/")[0] for n in dist_info} == {"-".join(wheel.name.split("-")[:2]) + ".dist-info"}
    code = [n for n in names if n not in dist_info]
    assert code and all(n.startswith("replog/") for n in code), [n for n in code if not n.startswith("replog/")]
    assert "replog/__init__.py" not in code  # `replog` is a namespace package
    assert {n.split("/")[1] for n in code} == set(FOLDERS)
    for folder in FOLDERS:  # every module of every folder, and nothing from bench/ or tests/
        expected = {f"replog/{folder}/{p.relative_to(REPO / folder).as_posix()}" for p in (REPO / folder).rglob("*.py")
                    if "generated" not in p.relative_to(REPO / folder).parts}
        assert expected <= set(code), sorted(expected - set(code))
    assert not [n for n in code if "/tests/" in n or "/bench/" in n or n.endswith((".pyc", ".whl"))]
    templates = {f"replog/toolkit/{p.relative_to(REPO / 'toolkit').as_posix()}"
                 for p in (REPO / "toolkit" / "templates").rglob("*.html.j2")}
    assert templates and templates <= set(code), sorted(templates - set(code))   # the report pages' templates
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in dist_info if n.endswith("entry_points.txt")))
    assert b"replog = replog.toolkit.cli:main" in entry_points


def test_installed_wheel_imports_beside_other_top_level_spark_formats_toolkit(wheel: Path, tmp_path: Path) -> None:
    target, fakes = tmp_path / "target", tmp_path / "fakes"
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)])
    for name in ("spark", "formats", "toolkit", "recovery", "samples"):
        (fakes / name).mkdir(parents=True)
        (fakes / name / "__init__.py").write_text(f"OWNER = 'another distribution'\nNAME = {name!r}\n")
    site = dict.fromkeys(Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib"))  # replog's dependencies
    out = bare_python(
        "import formats, spark, toolkit\n"
        "import replog.spark.session, replog.toolkit.cli, replog.formats.kafka.segment, replog.recovery.kafka.replay\n"
        "import sys\n"
        "print(spark.__file__, formats.__file__, toolkit.__file__, sep='\\n')\n"
        "print(replog.spark.session.__file__, replog.toolkit.cli.__file__, sep='\\n')\n"
        "assert spark.OWNER == formats.OWNER == toolkit.OWNER == 'another distribution'\n"
        "print(*sorted(m.__file__ for n, m in sys.modules.items()\n"
        "              if n.split('.')[0] == 'replog' and getattr(m, '__file__', None)), sep='\\n')\n",
        cwd=tmp_path, path=[target, fakes, *site])
    lines = [Path(line) for line in out.splitlines()]
    assert lines[:3] == [fakes / "spark" / "__init__.py", fakes / "formats" / "__init__.py",
                         fakes / "toolkit" / "__init__.py"]
    assert lines[3] == target / "replog" / "spark" / "session.py"
    assert lines[4] == target / "replog" / "toolkit" / "cli.py"
    elsewhere = [p for p in lines[5:] if target not in p.parents]
    assert len(lines) > 5 and not elsewhere, elsewhere


def test_make_zip_ships_replog_and_imports_from_the_zip(tmp_path: Path) -> None:
    out_dir = tmp_path / "ship" / "new"  # created by --make-zip
    printed = run([sys.executable, "-m", "replog.spark.submit", "--make-zip", str(out_dir)], cwd=tmp_path).stdout
    archive = Path(printed.strip())   # named by its content: the same code ships as the same file
    assert archive.parent == out_dir and re.fullmatch(r"replog-[0-9a-f]{16}\.zip", archive.name) and archive.is_file()
    names = zipfile.ZipFile(archive).namelist()
    assert names and all(n.startswith("replog/") for n in names), [n for n in names if not n.startswith("replog/")]
    assert {"replog/formats/codes.py", "replog/recovery/kafka/replay.py", "replog/spark/tasks.py"} <= set(names)
    out = bare_python(f"import sys\nsys.path.insert(0, {str(archive)!r})\n"
                      "import replog.formats.codes as codes\nprint(codes.__file__)\n",
                      cwd=tmp_path, path=[])
    assert Path(out.strip()) == archive / "replog" / "formats" / "codes.py"
