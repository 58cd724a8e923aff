"""``python -m tickpar.perf.prediction`` pricing only the ``here`` preset: for a sweep without the native engine.

The ``cxx`` preset prices the native engine's costs from ``results/calibration.json`` (``tickpar calibrate``),
which needs the engine built. A sweep without native cells runs without it (rules/bounds.smk), and its
prediction.csv has no ``cxx`` rows; the report's answer page then says how to build the engine.
"""

import sys

from tickpar.perf import prediction


def here_only() -> None:
    """Every loaded tickpar.perf module's preset list, without ``cxx`` (they read it when they price a table)."""
    for name, module in list(sys.modules.items()):
        presets = getattr(module, "PRESETS", None)
        if name.startswith("tickpar.perf") and isinstance(presets, tuple) and "cxx" in presets:
            module.PRESETS = tuple(p for p in presets if p != "cxx")


if __name__ == "__main__":
    here_only()
    sys.exit(prediction.main(sys.argv[1:]))
