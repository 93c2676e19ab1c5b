"""The loop layer: a run from its baseline to its result, built on the workers.

``driver`` holds a run's frame (lock, journal, workspace, resume) and ``repair()``;
``session`` the steps of one run; ``attempt`` one iteration, whose candidate
``validation`` judges; ``stop`` decides every ending; ``proof`` re-runs the
reported patch on a fresh copy; ``flaky`` re-runs the baseline's failures;
``chain`` builds the model chain's proposers; ``suite`` runs the tests in the
sandbox and ``prefilter`` in warm processes; ``ending`` builds the result and
applies it; ``resume`` and ``intents`` continue a journalled run. Import from
the modules (``repairloop.loop.driver``): this package file imports nothing.
"""
