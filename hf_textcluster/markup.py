"""Escaping what a model carries (cluster names, keywords, labels, file names, config strings) before it reaches
markdown or HTML: model cards, the HTML report and the generated docs. A model from the Hub is data from anyone, so
none of its strings may add markup, a link, a script or a line to the page it is printed in.

>>> escape_markdown("<script>alert(1)</script> | [x](javascript:0)\\n# title")
'&lt;script&gt;alert(1)&lt;/script&gt; \\\\| \\\\[x\\\\](javascript:0) \\\\# title'
>>> escape_html('<img src=x onerror="alert(1)">')
'&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
"""

from __future__ import annotations

import html
import re
import unicodedata

# Characters that open or close a markdown construct anywhere in a line (links, emphasis, code, table cells), and
# those that do at the start of one (headings, lists, quotes).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]|~#])")
_MARKDOWN_LEADING = re.compile(r"^(\d*)([+\-.)])(?=\s|$)")


def one_line(value: object) -> str:
    """``str(value)`` on one line: line breaks, tabs and other control or separator characters become single spaces
    (a newline in a cluster name would end a table row or open a heading).

    Example:
        >>> one_line("two\\nlines")
        'two lines'
    """
    text = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in str(value))
    return re.sub(r" {2,}", " ", text).strip()


def escape_html(value: object) -> str:
    """``str(value)`` with ``& < > " '`` as HTML entities, for text placed in HTML (an element or an attribute)."""
    return html.escape(str(value), quote=True)


def escape_markdown(value: object) -> str:
    """``str(value)`` as literal text anywhere in a markdown line or table cell: on one line (:func:`one_line`), HTML
    characters as entities (no tag, no script), and markdown punctuation backslash-escaped (no link, emphasis, code,
    heading or table cell boundary).

    Args:
        value: anything; ``str(value)`` is escaped.

    Returns:
        The escaped text.

    Example:
        >>> escape_markdown("a|b")
        'a\\\\|b'
    """
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(one_line(value), quote=False))
    return _MARKDOWN_LEADING.sub(r"\1\\\2", text)


def markdown_code(value: object) -> str:
    """``str(value)`` as a markdown code span (shown literally, markup included), on one line and fenced with more
    backticks than it holds in a row, so that no backtick inside can close it.

    Example:
        >>> markdown_code("a`b")
        '`` a`b ``'
    """
    text = one_line(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    if not longest:
        return f"`{text}`"
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"
