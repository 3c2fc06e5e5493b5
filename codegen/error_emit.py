"""Emitting ``error_response(version, code, message)`` for a request class from codegen/errors.py."""

from __future__ import annotations

from codegen.errors import SPECS, Each
from codegen.schema import Field, Schema, Struct, Versions, module_name


def _cond(field_versions: Versions, valid: Versions) -> str | None:
    """A condition on ``version`` true where the field exists, or None where it always does."""
    lo, hi = field_versions.lo, field_versions.hi
    parts = []
    if lo > valid.lo:
        parts.append(f"version >= {lo}")
    if hi is not None and (valid.hi is None or hi < valid.hi):
        parts.append(f"version <= {hi}")
    if lo > (hi if hi is not None else lo):
        return "False"
    return " and ".join(parts) or None


def _meet(a: Versions, b: Versions) -> Versions:
    """The versions in both ``a`` and ``b``."""
    his = [h for h in (a.hi, b.hi) if h is not None]
    return Versions(max(a.lo, b.lo), min(his) if his else None)


def _field(st: Struct, name: str, what: str) -> Field:
    for f in st.fields:
        if f.name == name:
            return f
    raise ValueError(f"{what}: {st.name} has no field {name}")


class ErrorEmitter:
    def __init__(self, request: Schema, response: Schema, default_expr) -> None:
        self.req = request
        self.resp = response
        self.default_expr = default_expr
        self.what = f"error_response of {request.name}"

    def with_message(self, st: Struct, spec: dict) -> dict:
        """``spec`` plus ErrorMessage = message wherever ErrorCode is set to the code."""
        if spec.get("ErrorCode") == "code" and "ErrorMessage" not in spec and any(
                f.name == "ErrorMessage" for f in st.fields):
            return {**spec, "ErrorMessage": "message"}
        return spec

    def value(self, f: Field, value, req_struct: Struct, item: str, ctx: Versions) -> str:
        """Python expression for response field ``f`` from spec ``value``."""
        if isinstance(value, str):
            return value
        eaches = value if isinstance(value, list) else [value]
        parts = []
        for each in eaches:
            assert isinstance(each, Each)
            if not (f.is_array and f.is_struct):
                raise ValueError(f"{self.what}: {f.name} is not an array of structs")
            cond = None
            if each.expr is not None:
                source = each.expr
                elem_struct = None
            else:
                src = _field(req_struct, each.source, self.what)
                source = f"({item}.{src.attr} or ())"
                cond = _cond(src.versions, ctx)
                elem_struct = src.struct
            inner = self.element(f.struct, each.fields, elem_struct, _meet(ctx, f.versions))
            comp = f"[{inner} for item in {source}]"
            conds = [c for c in (cond, each.when) if c]
            if conds:
                comp = f"({comp} if {' and '.join(conds)} else [])"
            parts.append(comp)
        return " + ".join(parts)

    def element(self, st: Struct, spec: dict, req_struct: Struct | None, ctx: Versions) -> str:
        args = []
        for name, value in self.with_message(st, spec).items():
            f = _field(st, name, self.what)
            expr = self.value(f, value, req_struct, "item", _meet(ctx, f.versions))
            cond = _cond(f.versions, ctx)
            if cond:
                if f.is_struct and not f.is_array:
                    raise ValueError(f"{self.what}: version-gated struct field {f.name} is not supported")
                expr = f"({expr}) if {cond} else {self.default_expr(f)}"
            args.append(f"{f.attr}={expr}")
        return f"R.{st.name}({', '.join(args)})"

    def source(self) -> list[str]:
        spec = SPECS[self.req.name[: -len("Request")]]
        root = self.resp.root
        mod = module_name(self.resp.name)
        ret = self.resp.name + (" | None" if spec.none_if else "")
        lines = [
            "",
            f"    def error_response(self, version: int, code: int, message: str | None = None) -> {ret}:",
            f'        """The {self.resp.name} to this request failing as a whole with error ``code`` at ``version``,',
            "        the error placed where Kafka's getErrorResponse puts it (codegen/errors.py).\"\"\"",
            f"        from kraftwire.protocol.messages import {mod} as R",
            "",
            "        code = int(code)",
            "",
        ]
        if spec.none_if:
            lines += [f"        if {spec.none_if}:", "            return None"]
        lines.append(f"        resp = R.{self.resp.name}()")
        for name, value in self.with_message(root, spec.fields).items():
            f = _field(root, name, self.what)
            ctx = _meet(self.resp.valid, self.req.valid)
            expr = self.value(f, value, self.req.root, "self", _meet(ctx, f.versions))
            cond = _cond(f.versions, ctx)
            if cond:
                lines += [f"        if {cond}:", f"            resp.{f.attr} = {expr}"]
            else:
                lines.append(f"        resp.{f.attr} = {expr}")
        lines.append("        return resp")
        return lines
