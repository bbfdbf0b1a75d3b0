"""Rule-based detectors of interaction smells (issue 22 point 4): each a module behind one
interface (base.py), registered by name and version in REGISTRY. Pure functions over plain
text: no models, no requests (a judge run, annotation/judges/, calls `detect`).

- `code-rollback` (rollback.py), `repetitive-response` (repetitive.py),
  `must-not-violation` (must_not.py, import forms in imports.py), `signature-mismatch`
  (signature.py); the code they read is code.py's (fenced blocks, normalised lines).
- benchmarks/detectors_bench.py runs all four over 100,000 generated turns."""

from . import must_not, repetitive, rollback, signature  # noqa: F401 - they register
from .base import REGISTRY, Detector, Evidence, TurnView, detect, get, register

__all__ = ["REGISTRY", "Detector", "Evidence", "TurnView", "detect", "get", "register"]
