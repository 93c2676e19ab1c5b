"""Start-up hook of repairloop's test runs that redirect the project's imports.

Python imports ``sitecustomize`` at start-up from the first directory on
sys.path that has one; repairloop puts this directory on PYTHONPATH only when
the user's environment imports project modules from the user's tree (see
``repairloop_imports``). The hook installs the redirection, then runs the
``sitecustomize`` it shadows, so the environment is otherwise unchanged.
"""

import repairloop_imports  # type: ignore[import-not-found]  # beside this file, on PYTHONPATH

repairloop_imports.install()
repairloop_imports.run_shadowed_sitecustomize(__file__)
