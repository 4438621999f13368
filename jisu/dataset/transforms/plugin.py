"""``transforms.Plugin``: MindSpore's op that runs a function of a native MindData plugin (a
``.so`` built against MindSpore's C++ engine). jisu has no such engine to load it into, so the
name exists only to fail clearly, when the op is made, pointing to a Python callable in
``map``."""

from __future__ import annotations

__all__ = ["Plugin"]


class Plugin:
    """Refuses to be made: jisu cannot load MindSpore's native plugins.

    Args:
        lib_path: the plugin's ``.so`` (MindSpore's argument; checked to be a str).
        func_name: the function to run from it (a str).
        user_args: serialized arguments for it (a str, or None).

    Raises:
        TypeError: an argument of the wrong type (as MindSpore).
        NotImplementedError: always otherwise, a RuntimeError as MindSpore's own error for a
            plugin it cannot load (which it raises when the op first runs).

    Instead, wrap the plugin's work in a Python function (ctypes or cffi can call a C
    library) and give it to ``dataset.map(operations=fn)``.
    """

    def __init__(self, lib_path: str, func_name: str, user_args: str | None = None) -> None:
        for name, value in (("lib_path", lib_path), ("func_name", func_name)):
            if not isinstance(value, str):
                raise TypeError(f"Plugin: {name} must be a str. Received {name}={value!r}")
        if user_args is not None and not isinstance(user_args, str):
            raise TypeError(f"Plugin: user_args must be a str. Received user_args={user_args!r}")
        raise NotImplementedError(
            f"Plugin: jisu cannot load MindSpore's native plugin {lib_path!r} ({func_name!r}); "
            "give dataset.map(operations=...) a Python callable instead (ctypes or cffi can "
            "call a C library from it)"
        )
