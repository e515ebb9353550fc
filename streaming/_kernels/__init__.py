"""Compiled Cython kernels, built from ``src/*.pyx`` by ``setup.py``."""
