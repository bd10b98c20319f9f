"""Attribute replacements that can be undone in reverse order (a failed install leaves torch as
it found it; tests restore torch after each case)."""


class PatchSet:
    def __init__(self):
        self._undo = []

    def replace(self, owner, name, value):
        """Sets owner.name = value. A class attribute it inherited is deleted again on restore
        rather than copied down."""
        own = owner.__dict__ if isinstance(owner, type) else vars(owner)
        had_own = name in own
        self._undo.append((owner, name, had_own, own.get(name)))
        setattr(owner, name, value)

    def on_restore(self, undo):
        """Calls undo() on restore, in its turn (a post-import hook still waiting is removed)."""
        self._undo.append((None, undo, False, None))

    def holds(self, owner, name):
        """Whether owner.name was replaced and not restored yet (a wrapper that takes itself
        out and puts itself back must not come back once everything was undone)."""
        return any(o is owner and n == name for o, n, _, _ in self._undo)

    def restore(self):
        while self._undo:
            owner, name, had_own, original = self._undo.pop()
            if owner is None:
                name()
            elif had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
