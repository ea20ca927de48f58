"""griffe extension for the API reference (mkdocs.yml: ``extensions``): the package's Google-style docstrings write
types as code (``alpha (`float`): ...``, transformers' convention) and document config fields whose defaults live
on the class body. Render the types as types, and give each documented parameter the default of the class attribute
of the same name, so the reference shows the default instead of "required".
"""

from __future__ import annotations

import contextlib

import griffe


def _attribute_default(cls: griffe.Class, name: str) -> str | None:
    # a config field declared on the class (or a base class in the package)
    for owner in [cls, *[base for base in cls.mro() if isinstance(base, griffe.Class)]]:
        member = owner.members.get(name)
        if isinstance(member, griffe.Attribute) and member.value is not None:
            return str(member.value)
    return None


def _fix(obj: griffe.Object) -> None:
    if obj.docstring is None:
        return
    for section in obj.docstring.parsed:
        if section.kind not in (griffe.DocstringSectionKind.parameters, griffe.DocstringSectionKind.attributes):
            continue
        for item in section.value:
            annotation = item.annotation
            if isinstance(annotation, str) and "`" in annotation:  # "`int`, *optional*" -> "int, optional"
                item.annotation = annotation.replace("`", "").replace("*", "")
            if isinstance(obj, griffe.Class) and getattr(item, "default", "") in (None, ""):
                default = _attribute_default(obj, item.name)
                if default is not None and section.kind is griffe.DocstringSectionKind.parameters:
                    item.value = default  # DocstringParameter.default reads .value


class DocstringTypesAndDefaults(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            with contextlib.suppress(Exception):  # a docstring griffe cannot parse is rendered as it is
                _fix(obj)
            stack += [
                m for m in obj.members.values() if not m.is_alias and isinstance(m, (griffe.Module, griffe.Class))
            ]
            stack += [m for m in obj.members.values() if not m.is_alias and isinstance(m, griffe.Function)]
