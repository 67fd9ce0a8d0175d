"""Shared lifetime code of the wrapper classes that own one engine handle in
self.__dict__["_handle"] (FunctionSet, Optimizer: both define __setattr__,
so the handle is read and written through __dict__)."""


class HandleOwner(object):
    """Releases the handle when garbage-collected, on release(), or on leaving
    a `with` block. Subclasses set _release_handle to their C release
    function (wrapped in staticmethod)."""

    _release_handle = None

    def __del__(self):
        h = self.__dict__.get("_handle")
        if h:
            self.__dict__["_handle"] = None
            type(self)._release_handle(h)

    def release(self):
        """Drop the engine handle now."""
        from ._capi import check
        h = self.__dict__.get("_handle")
        self.__dict__["_handle"] = None
        if h:
            check(type(self)._release_handle(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False
