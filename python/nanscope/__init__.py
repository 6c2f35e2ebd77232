"""nanscope from Python: `nanscope.sdk`, the ctypes binding of libnanscope's C ABI 1 (docs/sdk.md).

From a source tree: PYTHONPATH=<source>/python (the library from <build>/sdk through NANSCOPE_LIB
or load(path)); the nanscope Debian package installs it for the system's Python 3.
"""
__all__ = ["sdk"]
