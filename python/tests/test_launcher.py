"""Running beside SGLang, checked against a stand-in `sglang` package (SGLang is not installed
here): python -m kvpool.sglang.launch_server gives the dynamic backend's host pool kvpool's
allocator, also in scheduler processes started with multiprocessing's spawn; and the backend
subclasses SGLang's HiCacheStorage (an ABC) when SGLang is importable."""

import os
import subprocess
import sys
import textwrap

import kvpool
import pytest
from kvpool.sglang.hooks import install_host_allocator

FAKE_SGLANG = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/mem_cache/__init__.py": "",
    "sglang/srt/mem_cache/memory_pool_host.py": """
        class HostTensorAllocator:
            def __init__(self):
                self.dtype = None
                self.dims = None

        def get_allocator_from_storage(allocator_type):
            return HostTensorAllocator()
    """,
    "sglang/srt/mem_cache/hicache_storage.py": """
        import abc
        import dataclasses
        from typing import Optional

        @dataclasses.dataclass
        class HiCacheStorageConfig:
            tp_rank: int
            tp_size: int
            pp_rank: int
            pp_size: int
            attn_cp_rank: int
            attn_cp_size: int
            is_mla_model: bool
            enable_storage_metrics: bool
            is_page_first_layout: bool
            model_name: Optional[str]
            dp_rank: int = 0
            dp_size: int = 1
            tp_lcm_size: Optional[int] = None
            should_split_heads: bool = False
            extra_config: Optional[dict] = None

        class HiCacheStorage(abc.ABC):
            def register_mem_pool_host(self, mem_pool_host):
                self.mem_pool_host = mem_pool_host

            def batch_exists(self, keys, extra_info=None):
                raise NotImplementedError

            @abc.abstractmethod
            def get(self, key, target_location=None, target_sizes=None): ...
            @abc.abstractmethod
            def batch_get(self, keys, target_locations=None, target_sizes=None): ...
            @abc.abstractmethod
            def set(self, key, value=None, target_location=None, target_sizes=None): ...
            @abc.abstractmethod
            def batch_set(self, keys, values=None, target_locations=None, target_sizes=None): ...
            @abc.abstractmethod
            def exists(self, key): ...
            @abc.abstractmethod
            def clear(self): ...
    """,
    "sglang/srt/managers/scheduler.py": """
        def run_scheduler_process(queue):
            from sglang.srt.mem_cache import memory_pool_host as m
            picked = [type(m.get_allocator_from_storage(t)).__name__ for t in ("dynamic", "file")]
            queue.put(",".join(picked))
    """,
    "sglang/launch_server.py": """
        import multiprocessing as mp
        import sys

        if __name__ == "__main__":
            from sglang.srt.managers.scheduler import run_scheduler_process
            ctx = mp.get_context("spawn")
            queue = ctx.Queue()
            proc = ctx.Process(target=run_scheduler_process, args=(queue,))
            proc.start()
            print("args", " ".join(sys.argv[1:]))
            print("child", queue.get(timeout=60))
            proc.join()
    """,
}


def test_hook_is_a_noop_without_sglang():
    assert install_host_allocator(modules=()) is False  # no SGLang here: nothing to patch


@pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode")
def test_launcher_patches_spawned_scheduler(tmp_path):
    for name, text in FAKE_SGLANG.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + sys.path)
    out = subprocess.run([sys.executable, "-m", "kvpool.sglang.launch_server", "--model-path",
                          "x"], capture_output=True, text=True, timeout=120, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "args --model-path x" in out.stdout
    assert "child KVPoolHostTensorAllocator,HostTensorAllocator" in out.stdout


def test_backend_subclasses_sglang_hicache_storage(tmp_path, pool):
    for name, text in FAKE_SGLANG.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    script = textwrap.dedent(f"""
        from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig
        from kvpool.sglang import HAVE_SGLANG, KVPoolHiCacheStorage
        assert HAVE_SGLANG and issubclass(KVPoolHiCacheStorage, HiCacheStorage)
        config = HiCacheStorageConfig(0, 1, 0, 1, 0, 1, False, False, True, "m", extra_config={{
            "backend_name": "kvpool", "module_path": "kvpool.sglang",
            "class_name": "KVPoolHiCacheStorage", "interface_v1": 1,
            "master_server_address": "{pool.master_address}", "global_segment_size": 0}})
        backend = KVPoolHiCacheStorage(config, {{}})  # abstract methods all implemented
        print("mode", backend.mode, backend.batch_exists(["nothing-here"]))
        backend.close()
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + sys.path)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "mode embedded 0" in out.stdout
