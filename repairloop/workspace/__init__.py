"""The isolated workspace: its own repository (or a temporary copy) holding the user's project.

``with open_workspace(project, run_id=..., registry_dir=...) as ws:`` gives a
``Workspace`` whose ``root`` starts from the user's *current* state (staged,
unstaged and untracked non-ignored files) and is removed whatever happens.
The user's working tree, index, stash list, refs, objects and HEAD are never
changed; only ``apply_to_user_tree`` (``--apply``) writes there.

The workspace is never a ``git worktree`` of the user's repository (a worktree
shares refs, stash and objects, so code running in it could change them): the
user's files are copied into a fresh repository whose git directory sits
beside the work tree, not in it (``workspace.start``). GitPython leaks
``cat-file`` processes through its object model, so only ``Git.execute`` (one
subprocess per command) is used. Test runs go through ``workspace.sandbox``.

Known limits: submodule and nested-repository contents are copied as plain
files. Ignored files (build outputs, ``.env``) are not in a git workspace, except the
generated modules the tests need (``workspace.ignored``).
``.gitattributes`` eol/filter conversions are not undone: ``diff()`` shows what
git stores.
"""

from repairloop.workspace.gitcmd import GitFailed, hash_file
from repairloop.workspace.repository import check_repository, ensure_excluded
from repairloop.workspace.stale import clean_stale_workspaces
from repairloop.workspace.tree import StartState, Workspace, open_workspace
from repairloop.workspace.user_tree import apply_to_user_tree, patch_state

__all__ = [
    "GitFailed",
    "StartState",
    "Workspace",
    "apply_to_user_tree",
    "check_repository",
    "clean_stale_workspaces",
    "ensure_excluded",
    "hash_file",
    "open_workspace",
    "patch_state",
]
