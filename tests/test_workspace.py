"""The workspace against real git repositories: isolation, start state, diff, revert, apply.

Every test builds a real repository under tmp_path; the user's tree is compared
byte for byte before and after (``snapshot``).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, Tuple

import pytest
from conftest import GIT_ENV, git, init_repo

from repairloop.errors import ProjectError, WorkspaceError
from repairloop.journal import pid_alive
from repairloop.workspace import (
    apply_to_user_tree,
    check_repository,
    clean_stale_workspaces,
    ensure_excluded,
    hash_file,
    open_workspace,
)

MOD = "".join(f"line {i}\n" for i in range(1, 21))


def snapshot(repo: Path) -> Dict[str, object]:
    """Everything of the user's that the workspace must leave alone."""
    files: Dict[str, Tuple[object, int]] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel.split("/")[0] == ".git":
            continue
        if path.is_symlink():
            files[rel] = (os.readlink(path), 0)
        elif path.is_file():
            files[rel] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "symbolic": git(repo, "symbolic-ref", "-q", "HEAD"),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "status": git(repo, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored"),
        "index": git(repo, "ls-files", "-s"),
        "stash": git(repo, "stash", "list"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "objects": sorted(
            p.relative_to(repo).as_posix() for p in (repo / ".git" / "objects").rglob("*")
        ),
        "files": files,
    }


def dirty_repo(tmp_path: Path) -> Path:
    """A committed project with a stash entry, then staged, unstaged, untracked and ignored
    changes."""
    repo = tmp_path / "proj"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text(MOD)
    (repo / "pkg" / "other.py").write_text("x = 1\n")
    (repo / "gone.py").write_text("old\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\nno final newline")
    init_repo(repo)
    (repo / "pkg" / "other.py").write_text("x = 2\n")
    git(repo, "stash", "push", "-q", "-m", "user's own stash")
    mod = MOD.replace("line 3\n", "line 3 staged\n")
    (repo / "pkg" / "mod.py").write_text(mod)
    git(repo, "add", "pkg/mod.py")
    (repo / "pkg" / "mod.py").write_text(mod.replace("line 8\n", "line 8 unstaged\n"))
    (repo / "pkg" / "staged_new.py").write_text("new = True\n")
    git(repo, "add", "pkg/staged_new.py")
    (repo / "pkg" / "other.py").write_text("x = 3\n")
    (repo / "gone.py").unlink()
    (repo / "untracked dir ü").mkdir()
    (repo / "untracked dir ü" / "naïve file.py").write_text("u = 1\n")
    (repo / "debug.log").write_text("ignored\n")
    return repo


def registry(project: Path) -> Path:
    return project / ".repairloop" / "worktrees"


def worktree_count(repo: Path) -> int:
    return git(repo, "worktree", "list", "--porcelain").count("worktree ")


def test_workspace_starts_from_the_users_current_state(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        # a staged hunk and an unstaged hunk a few lines apart: the working-tree file, byte for byte
        assert (ws.root / "pkg/mod.py").read_bytes() == (repo / "pkg/mod.py").read_bytes()
        assert "line 3 staged" in ws.read_text("pkg/mod.py")
        assert "line 8 unstaged" in ws.read_text("pkg/mod.py")
        assert ws.read_text("pkg/staged_new.py") == "new = True\n"
        assert ws.read_text("pkg/other.py") == "x = 3\n"  # unstaged, not the stashed x = 2
        assert ws.read_text("untracked dir ü/naïve file.py") == "u = 1\n"
        assert not (ws.root / "gone.py").exists()
        assert not (ws.root / "debug.log").exists()  # ignored files stay out
        assert (ws.root / "crlf.txt").read_bytes() == b"one\r\ntwo\r\nno final newline"
        assert os.access(ws.root / "run.sh", os.X_OK)
        assert repo not in ws.root.parents  # outside the project
        assert ws.start.head == git(repo, "rev-parse", "HEAD").strip()
        assert ws.start.files["pkg/mod.py"] == hash_file(repo / "pkg/mod.py")
        assert "untracked dir ü/naïve file.py" in ws.start.files
        assert "debug.log" not in ws.start.files and "gone.py" not in ws.start.files
        assert ws.diff() == ""


def test_user_tree_is_untouched_and_the_workspace_is_its_own_repository(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    before = snapshot(repo)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"pkg/mod.py": "changed\n", "brand_new.py": "b\n", "pkg/other.py": None})
        ws.checkpoint()
        ws.diff()
        assert worktree_count(repo) == 1  # never a `git worktree` of the user's repository
        during = snapshot(repo)
        for key in ("head", "symbolic", "refs", "index", "stash", "objects"):
            # not even an object: no `git stash create` there
            assert during[key] == before[key], key
        assert not (ws.root / ".git").exists()  # the workspace's repository is outside its tree
        # git run inside the tree finds no repository at all (nothing to walk up to)
        found = subprocess.run(
            ["git", "rev-parse", "--git-common-dir"],
            cwd=ws.root,
            capture_output=True,
            text=True,
            env={**os.environ, **GIT_ENV},
        )
        assert found.returncode != 0 and str(repo) not in found.stdout
        root = ws.root
    assert not root.exists() and not root.parent.exists()
    assert worktree_count(repo) == 1
    assert snapshot(repo) == before
    assert git(repo, "stash", "list").count("\n") == 1  # stash create added nothing
    assert list(registry(repo).iterdir()) == []


def test_workspace_removed_when_the_body_raises(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    before = snapshot(repo)
    with pytest.raises(KeyboardInterrupt):
        with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
            ws.write_files({"pkg/mod.py": "half done\n"})
            root = ws.root
            raise KeyboardInterrupt
    assert not root.exists()
    assert snapshot(repo) == before


def test_checkpoint_and_revert_restore_exactly(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        start_diff = ws.diff()
        token = ws.checkpoint()
        ws.write_files({"pkg/mod.py": "first\n", "made.py": "m\n"})
        kept = ws.checkpoint()
        ws.write_files({"pkg/mod.py": "second\n", "sub/later.py": "l\n", "pkg/other.py": None})
        (ws.root / "scratch.txt").write_text("left by a test\n")
        ws.revert_to(kept)
        assert ws.read_text("pkg/mod.py") == "first\n"
        assert ws.read_text("pkg/other.py") == "x = 3\n"
        assert not (ws.root / "sub").exists() and not (ws.root / "scratch.txt").exists()
        ws.revert_to(token)
        assert not (ws.root / "made.py").exists()
        assert (ws.root / "pkg/mod.py").read_bytes() == (repo / "pkg/mod.py").read_bytes()
        assert ws.diff() == start_diff == ""


def test_diff_shows_created_changed_and_deleted_files(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"pkg/other.py": "x = 4\n", "new file é.py": "n = 1\n", "run.sh": None})
        diff = ws.diff()
    assert "diff --git a/pkg/other.py b/pkg/other.py\n" in diff
    assert "-x = 3\n+x = 4\n" in diff
    assert "+++ b/new file é.py" in diff and "+n = 1\n" in diff
    assert "deleted file mode 100755" in diff
    assert diff.endswith("\n")


def test_write_files_is_byte_exact_and_crlf_survives_apply(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"crlf.txt": "one\r\nTWO\r\nno final newline"})
        assert (ws.root / "crlf.txt").read_bytes() == b"one\r\nTWO\r\nno final newline"
        diff, start = ws.diff(), ws.start
    assert "\\ No newline at end of file" in diff and "-two\r\n+TWO\r\n" in diff
    assert apply_to_user_tree(repo, diff, start) == ["crlf.txt"]
    assert (repo / "crlf.txt").read_bytes() == b"one\r\nTWO\r\nno final newline"


def test_apply_writes_creates_and_deletes_without_staging(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    index = git(repo, "ls-files", "-s")
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files(
            {
                "pkg/mod.py": ws.read_text("pkg/mod.py").replace("line 15\n", "line 15 fixed\n"),
                "untracked dir ü/naïve file.py": None,
                "pkg/added.py": "a = 1\n",
            }
        )
        expected = {rel: (ws.root / rel).read_bytes() for rel in ("pkg/mod.py", "pkg/added.py")}
        diff, start = ws.diff(), ws.start
    written = apply_to_user_tree(repo, diff, start)
    assert written == ["pkg/added.py", "pkg/mod.py", "untracked dir ü/naïve file.py"]
    assert {rel: (repo / rel).read_bytes() for rel in expected} == expected
    assert not (repo / "untracked dir ü" / "naïve file.py").exists()
    assert git(repo, "ls-files", "-s") == index  # nothing staged
    assert git(repo, "rev-parse", "HEAD").strip() == start.head


def test_apply_refuses_when_a_touched_file_changed(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"pkg/other.py": "x = 4\n", "crlf.txt": "replaced\n"})
        diff, start = ws.diff(), ws.start
    (repo / "pkg" / "other.py").write_text("x = 3  # edited by the user meanwhile\n")
    before = snapshot(repo)
    with pytest.raises(ProjectError) as err:
        apply_to_user_tree(repo, diff, start)
    assert "pkg/other.py" in err.value.message and "crlf.txt" not in err.value.message
    assert "fix.patch" in err.value.hint
    assert snapshot(repo) == before  # nothing written, not even crlf.txt


def test_apply_is_all_or_nothing_when_a_write_fails(tmp_path: Path) -> None:
    repo = tmp_path / "plain"
    repo.mkdir()
    (repo / "a.py").write_text("a = 1\n")
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"a.py": "a = 2\n", "d/new.py": "n = 1\n"})
        diff, start = ws.diff(), ws.start
    (repo / "d").write_text("a file where the patch needs a directory\n")
    with pytest.raises(WorkspaceError) as err:
        apply_to_user_tree(repo, diff, start)
    assert "d/new.py" in err.value.message
    assert (repo / "a.py").read_text() == "a = 1\n"  # the write before the failure was undone
    assert sorted(p.name for p in repo.iterdir()) == [".repairloop", "a.py", "d"]


def test_non_git_project_gets_a_temporary_copy(tmp_path: Path) -> None:
    project = tmp_path / "nogit"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "m.py").write_text("v = 1\n")
    (project / ".venv" / "lib").mkdir(parents=True)
    (project / ".venv" / "lib" / "big.py").write_text("# a virtualenv\n")
    (project / "pkg" / "__pycache__").mkdir()
    with open_workspace(project, run_id="r1", registry_dir=registry(project)) as ws:
        assert ws.start.head is None and set(ws.start.files) == {"pkg/m.py"}
        assert not (ws.root / ".venv").exists() and not (ws.root / "pkg/__pycache__").exists()
        token = ws.checkpoint()
        ws.write_files({"pkg/m.py": "v = 2\n", "pkg/n.py": "w = 1\n"})
        diff = ws.diff()
        ws.revert_to(token)
        assert ws.read_text("pkg/m.py") == "v = 1\n" and not (ws.root / "pkg/n.py").exists()
        copy = ws.copy_to(tmp_path / "worker-1")
        root = ws.root
    assert "+v = 2\n" in diff and "+++ b/pkg/n.py" in diff
    assert (copy / "pkg/m.py").read_text() == "v = 1\n" and not (copy / ".git").exists()
    assert not root.exists() and not (project / ".git").exists()
    assert apply_to_user_tree(project, diff, ws.start) == ["pkg/m.py", "pkg/n.py"]
    assert (project / "pkg/n.py").read_text() == "w = 1\n"


def test_project_in_a_subdirectory_of_a_larger_repo(tmp_path: Path) -> None:
    mono = tmp_path / "mono"
    (mono / "services" / "api" / "src" / "api").mkdir(parents=True)
    (mono / "other").mkdir()
    (mono / "other" / "o.py").write_text("o = 1\n")
    (mono / "services" / "api" / "src" / "api" / "core.py").write_text("c = 1\n")
    init_repo(mono)
    project = mono / "services" / "api"
    (project / "src" / "api" / "core.py").write_text("c = 2\n")
    (project / "notes.txt").write_text("untracked\n")
    before = snapshot(mono)
    with open_workspace(project, run_id="r1", registry_dir=registry(project)) as ws:
        assert ws.root.parts[-2:] == ("services", "api")
        assert (
            ws.read_text("src/api/core.py") == "c = 2\n"
            and ws.read_text("notes.txt") == "untracked\n"
        )
        assert set(ws.start.files) == {"src/api/core.py", "notes.txt"}
        assert ws.source_roots() == [ws.root / "src", ws.root]
        ws.write_files({"src/api/core.py": "c = 3\n"})
        diff, start = ws.diff(), ws.start
    assert "diff --git a/src/api/core.py b/src/api/core.py" in diff
    assert snapshot(mono) == before
    assert apply_to_user_tree(project, diff, start) == ["src/api/core.py"]
    assert (project / "src" / "api" / "core.py").read_text() == "c = 3\n"


def test_intent_to_add_entries_fall_back_to_a_temporary_index(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    (repo / "planned.py").write_text("p = 1\n")
    git(repo, "add", "-N", "planned.py")  # makes `git stash create` fail (git 2.39)
    before = snapshot(repo)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        assert ws.read_text("planned.py") == "p = 1\n"
        assert (ws.root / "pkg/mod.py").read_bytes() == (repo / "pkg/mod.py").read_bytes()
    assert snapshot(repo) == before


def test_a_pre_commit_hook_environment_does_not_reach_the_users_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = dirty_repo(tmp_path)
    before = snapshot(repo)
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))  # as git sets it for hooks
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"x.py": "x\n"})
        ws.checkpoint()
        assert "+++ b/x.py" in ws.diff()
    assert os.environ["GIT_INDEX_FILE"] == str(repo / ".git" / "index")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert snapshot(repo) == before


def test_submodule_contents_are_copied(tmp_path: Path) -> None:
    lib = init_repo(_tree(tmp_path / "lib", {"helper.py": "h = 1\n"}))
    app = init_repo(_tree(tmp_path / "app", {"app.py": "a = 1\n"}))
    git(app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(app, "commit", "-q", "-m", "add submodule")
    with open_workspace(app, run_id="r1", registry_dir=registry(app)) as ws:
        assert ws.read_text("vendor/lib/helper.py") == "h = 1\n"
        assert not (ws.root / "vendor/lib/.git").exists()
        token = ws.checkpoint()
        ws.write_files({"app.py": "a = 2\n"})
        ws.revert_to(token)
        assert (
            ws.read_text("vendor/lib/helper.py") == "h = 1\n"
            and ws.read_text("app.py") == "a = 1\n"
        )
        root = ws.root
    assert not root.exists() and worktree_count(app) == 1


def test_ensure_excluded_uses_info_exclude_once(tmp_path: Path) -> None:
    repo = init_repo(_tree(tmp_path / "p", {"a.py": "a\n"}))
    assert ensure_excluded(repo) is True
    assert ensure_excluded(repo) is False
    assert (repo / ".git" / "info" / "exclude").read_text().count(".repairloop/") == 1
    assert not (repo / ".gitignore").exists()
    assert ensure_excluded(_tree(tmp_path / "plain", {"a.py": "a\n"})) is False


def test_clean_stale_workspaces_removes_a_killed_runs_worktree(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    script = (
        "import sys, time; from pathlib import Path; from repairloop.workspace import "
        "open_workspace\np = Path(sys.argv[1])\n"
        "with open_workspace(p, run_id='dead', registry_dir=p / '.repairloop/worktrees') as ws:\n"
        "    print(ws.root, flush=True); time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(repo)], stdout=subprocess.PIPE, text=True
    )
    root = Path(child.stdout.readline().strip())  # type: ignore[union-attr]
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()  # type: ignore[union-attr]
    assert root.is_dir() and worktree_count(repo) == 1
    live = clean_stale_workspaces(repo, registry(repo), is_alive=lambda pid: True)
    assert live == [] and root.is_dir()
    removed = clean_stale_workspaces(repo, registry(repo), is_alive=pid_alive)
    assert removed == [str(root.parent)]
    assert not root.parent.exists() and worktree_count(repo) == 1
    assert list(registry(repo).iterdir()) == []
    assert (repo / "pkg" / "mod.py").exists()


def test_no_git_processes_are_left_behind(tmp_path: Path) -> None:
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    if not children.exists():
        pytest.skip("needs Linux /proc")
    repo = dirty_repo(tmp_path)
    before = children.read_text().split()
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        ws.write_files({"a.py": "a\n"})
        ws.diff()
    assert children.read_text().split() == before


def test_source_roots_beat_an_editable_install(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    project = make_project("src_layout")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # what pip -e writes
    Path(site, "__editable__.textkit-0.1.0.pth").write_text(str(project / "src") + "\n")
    with open_workspace(project, run_id="r1", registry_dir=registry(project)) as ws:
        assert ws.source_roots() == [ws.root / "src", ws.root]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, ws.source_roots()))}
        found = subprocess.run(
            [str(python), "-c", "import textkit; print(textkit.__file__)"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=ws.root,
        ).stdout
        assert Path(found.strip()).is_relative_to(ws.root)
        env.pop("PYTHONPATH")
        original = subprocess.run(
            [str(python), "-c", "import textkit; print(textkit.__file__)"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd="/",
        ).stdout
        # the .pth alone would test the user's tree
        assert Path(original.strip()).is_relative_to(project)


# check_repository -----------------------------------------------------------------


def _tree(path: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _refused(project: Path, *words: str) -> None:
    with pytest.raises(ProjectError) as err:
        check_repository(project)
    text = str(err.value).lower()
    assert all(w in text for w in words), text
    assert err.value.hint and int(err.value.exit_code) == 2


def test_check_repository_accepts_git_and_plain_projects(tmp_path: Path) -> None:
    check_repository(init_repo(_tree(tmp_path / "g", {"a.py": "a\n"})))
    check_repository(_tree(tmp_path / "plain", {"a.py": "a\n"}))


def test_check_repository_refuses_odd_states(tmp_path: Path) -> None:
    _refused(_tree(tmp_path / "f", {}) / "missing", "not a directory")
    empty = _tree(tmp_path / "empty", {"a.py": "a\n"})
    git(empty, "init", "-q")
    _refused(empty, "no commits", "commit once")
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    _refused(bare, "bare")


def test_check_repository_refuses_a_merge_in_progress(tmp_path: Path) -> None:
    repo = init_repo(_tree(tmp_path / "m", {"a.py": "a = 0\n"}))
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.py").write_text("a = 1\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.py").write_text("a = 2\n")
    git(repo, "commit", "-q", "-am", "main")
    merge = subprocess.run(
        ["git", "merge", "other"], cwd=repo, capture_output=True, env={**os.environ, **GIT_ENV}
    )
    assert merge.returncode != 0 and (repo / ".git" / "MERGE_HEAD").exists()
    _refused(repo, "merge", "in progress")


def test_check_repository_refuses_a_read_only_directory(tmp_path: Path) -> None:
    project = _tree(tmp_path / "ro", {"a.py": "a\n"})
    if os.geteuid() != 0:
        project.chmod(0o555)
        try:
            _refused(project, "cannot write", ".repairloop")
        finally:
            project.chmod(0o755)
        return
    # root ignores permission bits; an immutable directory stops root too (ext4,
    # CAP_LINUX_IMMUTABLE)
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(project)]).returncode != 0:
        pytest.skip(
            "running as root where chattr +i is not available: no way to make a dir read-only"
        )
    try:
        _refused(project, "cannot write", ".repairloop")
    finally:
        subprocess.run(["chattr", "-i", str(project)], check=True)


def test_untracked_symlinks_are_copied_as_links(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    (repo / "alias.py").symlink_to("pkg/other.py")
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        assert os.readlink(ws.root / "alias.py") == "pkg/other.py"
        assert (
            ws.start.files["alias.py"]
            == hash_file(repo / "alias.py")
            != hash_file(repo / "pkg/other.py")
        )


def test_write_files_refuses_paths_outside_the_workspace(tmp_path: Path) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        for bad in ("../escape.py", "/etc/passwd", ""):
            with pytest.raises(WorkspaceError):
                ws.write_files({bad: "x"})
    assert not (tmp_path / "escape.py").exists()


@pytest.mark.parametrize(
    "patch, words",
    [
        ("", "cannot be read"),
        ("--- a/../outside.txt\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n", "outside the project"),
        (
            "--- a/pkg/other.py\n+++ b/pkg/other.py\n@@ -1 +1 @@\n-x = 999\n+x = 4\n",
            "does not apply",
        ),
    ],
)
def test_apply_refuses_bad_patches_and_writes_nothing(
    tmp_path: Path, patch: str, words: str
) -> None:
    repo = dirty_repo(tmp_path)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        start = ws.start
    before = snapshot(repo)
    with pytest.raises(ProjectError) as err:
        apply_to_user_tree(repo, patch, start)
    assert words in err.value.message and "fix.patch" in err.value.hint
    assert snapshot(repo) == before and not (tmp_path / "outside.txt").exists()


def test_check_repository_refuses_unresolved_conflicts(tmp_path: Path) -> None:
    repo = init_repo(_tree(tmp_path / "c", {"a.py": "a = 0\n"}))
    (repo / "a.py").write_text("a = 1\n")
    git(repo, "stash", "push", "-q")
    (repo / "a.py").write_text("a = 2\n")
    git(repo, "commit", "-q", "-am", "two")
    pop = subprocess.run(
        ["git", "stash", "pop"], cwd=repo, capture_output=True, env={**os.environ, **GIT_ENV}
    )
    assert pop.returncode != 0 and git(repo, "ls-files", "-u")
    _refused(repo, "unresolved", "conflicts")


def test_check_repository_explains_dubious_ownership(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the repository to another user")
    trusted = subprocess.run(
        ["git", "config", "--get-all", "safe.directory"], capture_output=True, text=True
    )
    if "*" in trusted.stdout.split():
        pytest.skip("git is configured to trust every directory (safe.directory=*)")
    repo = init_repo(_tree(tmp_path / "theirs", {"a.py": "a\n"}))
    subprocess.run(["chown", "-R", "65534:65534", str(repo)], check=True)
    _refused(repo, "dubious ownership")


def test_an_untracked_project_inside_a_larger_repo_is_copied(tmp_path: Path) -> None:
    # a dotfiles repo
    home = init_repo(_tree(tmp_path / "home", {".gitignore": "*\n!.gitignore\n"}))
    project = _tree(home / "code" / "proj", {"m.py": "m = 1\n"})
    with open_workspace(project, run_id="r1", registry_dir=registry(project)) as ws:
        assert ws.start.head is None and ws.read_text("m.py") == "m = 1\n"
        ws.write_files({"m.py": "m = 2\n"})
        assert "+m = 2\n" in ws.diff()
    assert worktree_count(home) == 1


def test_an_untracked_nested_repository_is_copied_as_files(tmp_path: Path) -> None:
    repo = init_repo(_tree(tmp_path / "outer", {"a.py": "a\n"}))
    nested = _tree(repo / "vendored", {"v.py": "v = 1\n"})
    git(nested, "init", "-q")
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        assert (
            ws.read_text("vendored/v.py") == "v = 1\n" and not (ws.root / "vendored/.git").exists()
        )
        assert "vendored/v.py" in ws.start.files
        ws.write_files({"vendored/v.py": "v = 2\n"})
        assert "+v = 2\n" in ws.diff()


PEOPLE = (
    "class People:\n    def is_adult(self, person):\n"
    + "".join(f"        x{i} = {i}\n" for i in range(8))
    + "        return person.age > 18\n"
)


def test_a_patch_names_the_method_it_changes_not_its_class(tmp_path: Path) -> None:
    """Seen on a real project: `stats` grouped every repair inside a class under `class X:`, git's
    default hunk heading (the last unindented line). The workspace gives Python files git's python
    diff driver."""
    from repairloop.reports.stats import repaired_code

    repo = tmp_path / "proj"
    (repo / "calc").mkdir(parents=True)
    (repo / "calc" / "people.py").write_text(PEOPLE)
    init_repo(repo)
    with open_workspace(repo, run_id="r1", registry_dir=registry(repo)) as ws:
        diff = ws.diff_of({"calc/people.py": PEOPLE.replace("> 18", ">= 18")})
    assert "@@ def is_adult(self, person):" in diff
    assert repaired_code(diff) == ("calc/people.py: def is_adult(self, person):",)
