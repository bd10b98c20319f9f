"""Runs a callback right after a module's first import finishes (the way OpenTelemetry's and
wrapt's post-import hooks enter a program), so the probe costs nothing until the program
imports torch, and never imports torch itself."""
import sys


class _CallbackLoader:
    """The module's own loader, with `callback(module)` after exec_module. Every other loader
    attribute (get_data, resource readers, ...) is the original's."""

    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # The module keeps its real loader, as if this one had never been there.
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._callback(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class PostImportHook:
    """A sys.meta_path finder for one module name, removed once the module has been found."""

    def __init__(self, name, callback):
        self.name = name
        self.callback = callback
        self._searching = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self._searching:
            return None
        self._searching = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._searching = False
        self.remove()
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _CallbackLoader(spec.loader, self.callback)
        return spec

    def install(self):
        """Calls back at once when the module is already imported."""
        if self.name in sys.modules:
            self.callback(sys.modules[self.name])
        else:
            sys.meta_path.insert(0, self)

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
