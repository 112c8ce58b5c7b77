"""Imported first by the test processes: with KVPOOL_TEST_HIDE_TORCH set, `import torch` fails,
so the suite runs as on a machine without torch (the backend must work with numpy alone)."""

import os
import sys


class _HideTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"{name} hidden by KVPOOL_TEST_HIDE_TORCH")
        return None


if os.environ.get("KVPOOL_TEST_HIDE_TORCH") and not any(
        isinstance(f, _HideTorch) for f in sys.meta_path):
    sys.meta_path.insert(0, _HideTorch())
