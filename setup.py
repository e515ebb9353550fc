"""Build the Cython kernels in src/ into the streaming._kernels package.

Every ``src/<name>.pyx`` becomes ``streaming._kernels.<name>``: adding a kernel is adding a file.
Kernels may cimport numpy's random C API; they link numpy's static ``npyrandom`` library so that
draws come from numpy's own distribution code (bit-for-bit the reference's RNG sequence).
"""

import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

_NP_RANDOM_LIB = os.path.join(os.path.dirname(np.__file__), "random", "lib")


def _extensions() -> list[Extension]:
    exts = []
    for pyx in sorted(glob.glob(os.path.join("src", "*.pyx"))):
        name = os.path.splitext(os.path.basename(pyx))[0]
        exts.append(
            Extension(
                f"streaming._kernels.{name}",
                [pyx],
                include_dirs=[np.get_include(), "src"],
                library_dirs=[_NP_RANDOM_LIB],
                libraries=["npyrandom", "m"],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"],
            )
        )
    return exts


setup(
    ext_modules=cythonize(
        _extensions(),
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    ),
)
