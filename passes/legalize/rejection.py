"""Why a profile rejects a node: the text, the rule that says so, and where the rule is from.

    Rejection("ArgMax does not take select_last_index=1",
              rule="[ops.ArgMax] select_last_index", source="https://...")
    Rejection("ArgMax's output is int64 ...", rule=..., remedy="cast it in the source ...")

A Rejection is a str (the one-line reason every message quotes), so a profile that returns a
plain str still works. One with a `remedy` is *final*: no exact rewrite can lift it (the
int64 type of ArgMax's output is fixed by the spec, so a target that refuses int64 there
refuses the node whatever form it takes); `LegalizePass` then refuses the node with that
remedy instead of searching for a form.
"""

from __future__ import annotations


class Rejection(str):
    """A reason (the str itself), the profile rule behind it and that rule's cited source."""

    rule: str
    source: str
    remedy: str | None

    def __new__(
        cls, text: str, rule: str = "", source: str = "", remedy: str | None = None
    ) -> Rejection:
        self = super().__new__(cls, text)
        self.rule, self.source, self.remedy = rule, source, remedy
        return self

    def __reduce__(self):  # copies (dataclasses.asdict deep-copies) keep the rule
        return (Rejection, (str(self), self.rule, self.source, self.remedy))


def is_final(rejection: str | None) -> bool:
    """Whether no exact rewrite can lift `rejection` (it carries a remedy of its own)."""
    return isinstance(rejection, Rejection) and rejection.remedy is not None


def rule_of(rejection: str | None) -> tuple[str, str]:
    """(rule, source) of a rejection; empty strings for a plain str."""
    if isinstance(rejection, Rejection):
        return rejection.rule, rejection.source
    return "", ""


__all__ = ["Rejection", "is_final", "rule_of"]
