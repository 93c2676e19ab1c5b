"""The text helpers every layer shares: fences, USD, git's numstat output, equal ends."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import git, init_repo

from repairloop.textutil import common_ends, fence, numstat_paths, usd


def test_a_fence_outlasts_every_backtick_run_inside() -> None:
    assert fence("x = 1", "python") == "```python\nx = 1\n```"
    inner = "text\n````\nmore ``` and `"
    fenced = fence(inner)
    assert fenced.startswith("`````\n") and fenced.endswith("\n`````")
    assert fenced[len("`````\n") : -len("\n`````")] == inner  # the text is kept as given


def test_usd_has_four_decimals_and_names_an_unknown_price() -> None:
    assert usd(0.0123456) == "$0.0123"
    assert usd(0.0) == "$0.0000"
    assert usd(None) == "unknown"
    assert usd(None, "unknown (unpriced model)") == "unknown (unpriced model)"


def test_numstat_paths_read_real_git_output_with_a_rename(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("a = 1\n")
    (repo / "old name.py").write_text("".join(f"line {i}\n" for i in range(20)))
    (repo / "gone.py").write_text("x = 1\n")
    init_repo(repo)
    (repo / "a.py").write_text("a = 2\n")
    git(repo, "mv", "old name.py", "new name.py")
    with (repo / "new name.py").open("a") as handle:
        handle.write("one more\n")
    (repo / "gone.py").unlink()
    (repo / "tab\tname.py").write_text("t = 1\n")
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "-M")
    applied = subprocess.run(
        ["git", "apply", "--numstat", "-z", "-"],
        cwd=repo,
        input=patch,
        text=True,
        capture_output=True,
        check=True,
    ).stdout
    # git apply names a renamed file by its new name only (git 2.x) ...
    assert numstat_paths(applied) == ["a.py", "gone.py", "new name.py", "tab\tname.py"]
    # ... git diff's -z form gives an empty path, then the old and the new name: both are read.
    diffed = git(repo, "diff", "--cached", "-M", "--numstat", "-z")
    assert "\0old name.py\0" in diffed
    assert numstat_paths(diffed) == [
        "a.py",
        "gone.py",
        "new name.py",
        "old name.py",
        "tab\tname.py",
    ]
    assert numstat_paths("") == []


def test_common_ends_never_overlap() -> None:
    assert common_ends(["a", "b", "c"], ["a", "x", "c"]) == (1, 1)
    assert common_ends(["a", "a"], ["a", "a", "a"]) == (
        2,
        0,
    )  # the suffix cannot reuse the prefix's lines
    assert common_ends("kitten", "sitting") == (0, 0)
    assert common_ends("abcd", "abXd") == (
        2,
        1,
    )  # characters work too (the offline engine's edit size)
    assert common_ends([], ["a"]) == (0, 0)
