"""An answer's indentation in the file's own style: tabs for a tab-indented file, its width of
spaces for a space-indented one.

Models write four spaces whatever the file uses, or quote two-space code from
memory; Python accepts a function indented unlike its neighbours, but a block
that mixes the answer's style with the file's (a tab-indented method gaining a
four-space line) is a TabError or a wrong nesting. Each answer line's leading
whitespace is read as levels of the answer's unit and written as as many
levels of the file's; what is left over (alignment under a bracket) stays as
spaces. A unit that cannot be told (no indented line, or widths whose greatest
common divisor is 1) leaves the lines as they are.
"""

from __future__ import annotations

from functools import reduce
from math import gcd
from typing import Callable, Iterable, List, Optional, Sequence


def indent_unit(lines: Iterable[str]) -> Optional[str]:
    """``"\\t"`` when most indented lines start with a tab, else the spaces of the greatest
    common divisor of the space indentations (2 to 8); None when it cannot be told."""
    tabs, widths = 0, []
    for line in lines:
        body = line.lstrip(" \t")
        if not body or body.startswith("#"):
            continue
        lead = line[: len(line) - len(body)]
        if lead.startswith("\t"):
            tabs += 1
        elif lead:
            widths.append(len(lead))
    if tabs > len(widths):
        return "\t"
    unit = reduce(gcd, widths, 0)
    return " " * unit if 2 <= unit <= 8 else None


def restyler(answer: Sequence[str], file_lines: Sequence[str]) -> Callable[[str], str]:
    """A function that rewrites one line of ``answer`` in ``file_lines``' indentation style (the
    identity when the styles agree or either cannot be told)."""
    have, want = indent_unit(answer), indent_unit(file_lines)
    if have is None or want is None or have == want:
        return lambda line: line

    def restyle(line: str) -> str:
        body = line.lstrip(" \t")
        if not body:
            return line
        lead = line[: len(line) - len(body)]
        tabs = len(lead) - len(lead.lstrip("\t"))
        spaces = len(lead) - tabs
        width = len(have) if have != "\t" else len(want)
        levels, rest = tabs + spaces // width, spaces % width
        return want * levels + " " * rest + body

    return restyle


def in_file_style(answer: List[str], file_lines: Sequence[str]) -> List[str]:
    """``answer`` with every line in ``file_lines``' indentation style (``restyler``)."""
    restyle = restyler(answer, file_lines)
    return [restyle(line) for line in answer]
