"""Free ports on 127.0.0.1 for the processes the tests and the benchmark scripts start
(python/tests/conftest.py, scripts/bench_pool.py, scripts/bench-vllm-tier.py): one way to
pick them, so a fix reaches every caller."""
import random
import socket
import time


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_handed_out: set = set()


def free_port() -> int:
    """A port free a moment ago on 127.0.0.1, below the kernel's ephemeral range where it can:
    a port the kernel hands out for bind(0) is also what it hands the next outgoing connection,
    and one taken that way between this call and the server's bind made a master fail with
    "Address already in use" (as kvpool::FreeLoopbackPort in C++). Never the same port twice in
    one process."""
    low = _ephemeral_low()
    candidates = [random.randrange(10000, low) for _ in range(200)] if low > 11000 else []
    for port in candidates + [0] * 100:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            got = s.getsockname()[1]
        if got not in _handed_out:
            _handed_out.add(got)
            return got
    raise RuntimeError("no free port on 127.0.0.1")


def wait_for_port(port: int, timeout: float = 20.0) -> bool:
    """True once something accepts connections on 127.0.0.1:`port`, False after `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False
