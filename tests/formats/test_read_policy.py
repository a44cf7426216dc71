"""The read policy (`fileio.ReadPolicy`): symlinks out of the inputs refused, and a policy that belongs to the
command that adopted it — not to the process: it ends with an in-process command, two threads applying their
own do not see each other's, and a `reading_pool`'s threads read under their maker's."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replog.formats.errors import OutsideInputs
from replog.formats.fileio import UNCONFINED, ReadPolicy, open_regular, read_policy, reading_pool
from replog.toolkit.cli import app


def linked_inputs(tmp_path: Path) -> Path:
    """`inputs/` with a link to a file outside it (`out-link`), one inside (`in-link`), and `elsewhere/secret`."""
    inputs, elsewhere = tmp_path / "inputs", tmp_path / "elsewhere"
    inputs.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret").write_bytes(b"s")
    (inputs / "inner").write_bytes(b"i")
    (inputs / "out-link").symlink_to(elsewhere / "secret")
    (inputs / "in-link").symlink_to(inputs / "inner")
    return inputs


def test_reads_through_symlinks_out_of_the_inputs_are_refused(tmp_path: Path) -> None:
    inputs = linked_inputs(tmp_path)
    with ReadPolicy.confined([inputs], follow_symlinks=False).applied():
        with pytest.raises(OutsideInputs, match="outside the inputs"):
            open_regular(inputs / "out-link")
        for fine in (inputs / "in-link", tmp_path / "elsewhere" / "secret"):  # a link inside; a path with no link
            os.close(open_regular(fine))
    with ReadPolicy.confined([inputs], follow_symlinks=True).applied():
        os.close(open_regular(inputs / "out-link"))
    assert read_policy() == UNCONFINED, "the policy outlived its `with` block"


def test_an_in_process_command_leaves_no_policy_behind(tmp_path: Path) -> None:
    inputs = linked_inputs(tmp_path)
    res = CliRunner().invoke(app, ["ls", str(inputs), "--format", "json"])
    assert res.exception is None or isinstance(res.exception, SystemExit), f"ls raised {res.exception!r}"
    assert read_policy() == UNCONFINED, f"the command's policy leaked into its caller: {read_policy()}"
    os.close(open_regular(inputs / "out-link"))   # the caller reads where it likes, as before the command


def test_threads_applying_their_own_policies_do_not_see_each_other(tmp_path: Path) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    inside, seen = threading.Barrier(2), {}

    def run(root: Path) -> None:
        with ReadPolicy.confined([root], follow_symlinks=False).applied():
            inside.wait(timeout=10)       # both policies applied at once
            seen[root.name] = read_policy().roots
            inside.wait(timeout=10)

    threads = [threading.Thread(target=run, args=(r,)) for r in roots]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert seen == {r.name: (os.path.realpath(r),) for r in roots}, f"threads saw {seen}"


def test_a_reading_pool_reads_under_its_makers_policy(tmp_path: Path) -> None:
    inputs = linked_inputs(tmp_path)
    policy = ReadPolicy.confined([inputs], follow_symlinks=False)
    with policy.applied():
        with reading_pool(2, "test-read") as pool:
            assert pool.submit(read_policy).result() == policy, "a reading_pool thread lost its maker's policy"
            with pytest.raises(OutsideInputs):
                pool.submit(open_regular, inputs / "out-link").result()
        with ThreadPoolExecutor(1) as plain:   # why reading_pool exists: a new thread starts unconfined
            assert plain.submit(read_policy).result() == UNCONFINED, "a plain thread inherited the policy"
