"""mkdocs hook: the package's docstrings use Sphinx roles (``:func:`~a.b.c```), which mkdocstrings renders verbatim.

Rewrite them in the rendered HTML to plain code, keeping only the last name when the target starts with ``~`` (as
Sphinx does).
"""

import re

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|obj|exc):<code>(~?)([^<]*)</code>")


def _replace(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if tilde else target}</code>"


def on_page_content(html: str, **kwargs) -> str:
    return ROLE.sub(_replace, html)
