"""Build script: compiles every Cython kernel in aucopt/_kernels/.

Hot loops are compiled with -O3 and without bounds or wraparound checks; each
.pyx file also states its directives in its header so that a stand-alone
``cythonize -i`` build gives the same code.
"""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
}


def _extensions():
    exts = []
    for pyx in sorted(glob.glob(os.path.join("aucopt", "_kernels", "*.pyx"))):
        name = os.path.splitext(pyx)[0].replace(os.sep, ".")
        exts.append(
            Extension(
                name,
                [pyx],
                extra_compile_args=["-O3"],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            )
        )
    if not exts:  # a source tree or sdist without the kernels' sources builds nothing
        raise SystemExit("setup.py: no Cython sources (aucopt/_kernels/*.pyx) to build")
    return cythonize(exts, compiler_directives=DIRECTIVES)


setup(ext_modules=_extensions())
