"""The isolated workspace: a git worktree (or a temporary copy) of the user's project.

``with open_workspace(project, run_id=..., registry_dir=...) as ws:`` gives a
``Workspace`` whose ``root`` starts from the user's *current* state (staged,
unstaged and untracked non-ignored files) and is removed whatever happens.
The user's working tree, index, stash list, branches and HEAD are never
changed; only ``apply_to_user_tree`` (``--apply``) writes there.

Facts this relies on (measured, TECH-NOTES section 2): ``git stash create``
captures the tracked state without touching anything and without adding to the
stash list, but fails on intent-to-add entries (git 2.39: "Entry 'x' not
uptodate"), so a temporary index is the fallback; a worktree has no untracked
files, so they are copied; GitPython leaks ``cat-file`` processes through its
object model, so only ``Git.execute`` (one subprocess per command) is used.

Known limits: submodule contents are copied so tests can run, but git does not
see files inside a gitlink, so changes there are not in ``diff()`` and are not
restored by ``revert_to``. Ignored files (build outputs, ``.env``) are not in a
git workspace. ``.gitattributes`` eol/filter conversions are not undone:
``diff()`` shows what git stores.
"""


from repairloop.workspace.gitcmd import GitFailed, hash_file
from repairloop.workspace.repository import check_repository, ensure_excluded
from repairloop.workspace.stale import clean_stale_workspaces
from repairloop.workspace.tree import StartState, Workspace, open_workspace
from repairloop.workspace.user_tree import apply_to_user_tree, patch_state

__all__ = [
    "GitFailed", "StartState", "Workspace", "apply_to_user_tree", "check_repository",
    "clean_stale_workspaces", "ensure_excluded", "hash_file", "open_workspace", "patch_state",
]
